-- +goose Up
-- Risk data Grype writes into its CycloneDX ratings (issue 31): the EPSS
-- probability (NULL: no score), the CISA KEV listing and Grype's risk score
-- computed from them. Per report: how many findings are KEV-listed, the
-- highest risk score and EPSS score, for summaries, the fleet list's risk
-- order and its minEpss filter.
-- risk_parsed marks reports whose findings carry these columns; the store
-- backfills the older ones from their stored BOMs (Store.BackfillRisk).
ALTER TABLE findings
    ADD COLUMN epss double precision,
    ADD COLUMN kev  boolean NOT NULL DEFAULT false,
    ADD COLUMN risk double precision NOT NULL DEFAULT 0;
ALTER TABLE reports
    ADD COLUMN kev         integer NOT NULL DEFAULT 0,
    ADD COLUMN max_risk    double precision NOT NULL DEFAULT 0,
    ADD COLUMN max_epss    double precision,
    ADD COLUMN risk_parsed boolean NOT NULL DEFAULT false;
CREATE INDEX reports_risk_unparsed ON reports (digest) WHERE NOT risk_parsed;
-- The fleet list's default order (-risk), keyset-paginated like the others.
CREATE INDEX reports_max_risk ON reports (max_risk, digest);

-- +goose Down
DROP INDEX reports_max_risk;
DROP INDEX reports_risk_unparsed;
ALTER TABLE reports DROP COLUMN risk_parsed, DROP COLUMN max_epss, DROP COLUMN max_risk, DROP COLUMN kev;
ALTER TABLE findings DROP COLUMN risk, DROP COLUMN kev, DROP COLUMN epss;
