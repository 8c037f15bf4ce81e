-- +goose Up
-- Two per-row costs of writing findings, measured on 3,000-row reports
-- (docs/benchmarks.md, "What a findings row costs Postgres"):
--
-- 1. findings_vuln_id keyed (lower(vuln_id), digest): every row's entry
--    lands at a random place in a wide index (~95-byte keys), ~28 % of
--    the insert. Keyed lower(vuln_id) alone, the entries of one CVE
--    deduplicate into posting lists. Every query that looks findings up
--    by id reads the rows anyway (the digest is in them); the image
--    search's union now reads them too instead of the index alone.
DROP INDEX findings_vuln_id;
CREATE INDEX findings_vuln_id ON findings (lower(vuln_id));

-- 2. The foreign key to reports checked every inserted row (~20 % of the
--    insert). Findings are written in one place, PutReport, inside the
--    transaction that holds their report's row (inserted or locked FOR
--    UPDATE), so the check could never fail. What the key also did, the
--    cascade on delete, stays in the database: a statement trigger deletes
--    the findings of the reports a statement deleted, once per statement.
ALTER TABLE findings DROP CONSTRAINT findings_digest_fkey;

-- +goose StatementBegin
CREATE FUNCTION findings_follow_reports() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM findings f USING gone g WHERE f.digest = g.digest;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER findings_follow_reports AFTER DELETE ON reports
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION findings_follow_reports();

-- +goose Down
DROP TRIGGER findings_follow_reports ON reports;
DROP FUNCTION findings_follow_reports();
DELETE FROM findings f WHERE NOT EXISTS (SELECT 1 FROM reports r WHERE r.digest = f.digest);
ALTER TABLE findings ADD CONSTRAINT findings_digest_fkey FOREIGN KEY (digest) REFERENCES reports (digest) ON DELETE CASCADE;
DROP INDEX findings_vuln_id;
CREATE INDEX findings_vuln_id ON findings (lower(vuln_id), digest);
