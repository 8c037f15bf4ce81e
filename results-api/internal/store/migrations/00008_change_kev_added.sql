-- +goose Up
-- A CISA KEV listing added to a finding both reports hold is a change
-- (issue 31): its findings are kind 'kev_added', counted in kev_added.
-- Every changed finding keeps its risk data (EPSS probability, NULL
-- without one; KEV listing; Grype's risk score), as the findings table.
ALTER TABLE report_changes ADD COLUMN kev_added integer NOT NULL DEFAULT 0;
ALTER TABLE report_change_findings
    DROP CONSTRAINT report_change_findings_kind_check,
    ADD CONSTRAINT report_change_findings_kind_check CHECK (kind IN ('new', 'resolved', 'kev_added')),
    ADD COLUMN kev  boolean NOT NULL DEFAULT false,
    ADD COLUMN epss double precision,
    ADD COLUMN risk double precision NOT NULL DEFAULT 0;

-- +goose Down
DELETE FROM report_change_findings WHERE kind = 'kev_added';
-- A change that held only KEV-added findings would read as an empty one.
DELETE FROM report_changes WHERE kev_added > 0 AND NOT baseline
    AND NOT EXISTS (SELECT 1 FROM report_change_findings f WHERE f.change_id = report_changes.id);
ALTER TABLE report_change_findings
    DROP COLUMN risk, DROP COLUMN epss, DROP COLUMN kev,
    DROP CONSTRAINT report_change_findings_kind_check,
    ADD CONSTRAINT report_change_findings_kind_check CHECK (kind IN ('new', 'resolved'));
ALTER TABLE report_changes DROP COLUMN kev_added;
