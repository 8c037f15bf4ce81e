-- +goose Up
-- finding_lifecycle keeps only the resolved keys: an open key's lifecycle
-- (first_seen, kev_since, severity) is in its findings rows already (00009
-- put it there), so a digest's first report writes no lifecycle rows, and
-- a replacement only the keys it resolves (inserted) or reopens (taken
-- out). That was a quarter of Postgres's time per ingested report
-- (docs/benchmarks.md).
DELETE FROM finding_lifecycle WHERE resolved_at IS NULL;
ALTER TABLE finding_lifecycle ALTER COLUMN resolved_at SET NOT NULL;

-- +goose Down
ALTER TABLE finding_lifecycle ALTER COLUMN resolved_at DROP NOT NULL;
INSERT INTO finding_lifecycle (digest, vuln_id, pkg_name, pkg_version, pkg_type, severity, first_seen, kev_since)
SELECT digest, vuln_id, pkg_name, pkg_version, pkg_type, max(severity), min(first_seen), min(kev_since)
FROM findings GROUP BY digest, vuln_id, pkg_name, pkg_version, pkg_type;
