-- +goose Up
-- Digests are ASCII hex: compare them bytewise. With the database's default
-- (often a UTF-8 locale) every B-tree probe pays for locale-aware
-- comparison; "C" halved the batch lookup's index scan (1,000 probes).
ALTER TABLE report_boms ALTER COLUMN digest TYPE text COLLATE "C";
ALTER TABLE findings ALTER COLUMN digest TYPE text COLLATE "C";
ALTER TABLE reports ALTER COLUMN digest TYPE text COLLATE "C";
ALTER TABLE scans ALTER COLUMN digest TYPE text COLLATE "C";

-- +goose Down
ALTER TABLE scans ALTER COLUMN digest TYPE text COLLATE "default";
ALTER TABLE reports ALTER COLUMN digest TYPE text COLLATE "default";
ALTER TABLE findings ALTER COLUMN digest TYPE text COLLATE "default";
ALTER TABLE report_boms ALTER COLUMN digest TYPE text COLLATE "default";
