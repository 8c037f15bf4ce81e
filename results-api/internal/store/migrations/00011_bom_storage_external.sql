-- +goose Up
-- report_boms.data is zstd already (the store compresses every BOM before
-- it writes it): EXTERNAL keeps it out of line in TOAST without trying
-- pglz on it first, a try that always fails and cost ~5 % of Postgres's
-- CPU per ingested report (perf, docs/benchmarks.md). Rows stored before
-- keep their storage; both read the same.
ALTER TABLE report_boms ALTER COLUMN data SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE report_boms ALTER COLUMN data SET STORAGE EXTENDED;
