-- +goose Up
-- Why each report was written (scan, rescan, rematch), when its findings
-- were last matched against a vulnerability DB, and a fingerprint of its
-- findings rows: a replacement with the same fingerprint keeps its rows.
ALTER TABLE reports ADD COLUMN cause text NOT NULL DEFAULT 'scan';
ALTER TABLE reports ADD COLUMN matched_at timestamptz;
ALTER TABLE reports ADD COLUMN findings_sha256 bytea;

-- One row per change of a digest's findings: its first report (baseline,
-- counts only) and every later report whose finding keys differ. No
-- foreign key to reports: the history outlives a deleted report (a report
-- scanned again after its deletion starts with a new baseline).
CREATE TABLE report_changes (
    id                  bigserial PRIMARY KEY,
    digest              text COLLATE "C" NOT NULL,
    image               text NOT NULL DEFAULT '',
    cause               text NOT NULL,
    db_built            text NOT NULL DEFAULT '',
    db_schema           text NOT NULL DEFAULT '',
    changed_at          timestamptz NOT NULL,
    baseline            boolean NOT NULL DEFAULT false,
    new_critical        integer NOT NULL DEFAULT 0,
    new_high            integer NOT NULL DEFAULT 0,
    new_medium          integer NOT NULL DEFAULT 0,
    new_low             integer NOT NULL DEFAULT 0,
    new_negligible      integer NOT NULL DEFAULT 0,
    new_unknown         integer NOT NULL DEFAULT 0,
    resolved_critical   integer NOT NULL DEFAULT 0,
    resolved_high       integer NOT NULL DEFAULT 0,
    resolved_medium     integer NOT NULL DEFAULT 0,
    resolved_low        integer NOT NULL DEFAULT 0,
    resolved_negligible integer NOT NULL DEFAULT 0,
    resolved_unknown    integer NOT NULL DEFAULT 0,
    -- The worst severity among the new and resolved findings (the
    -- minSeverity filter of the feed).
    max_severity        smallint NOT NULL DEFAULT 0
);
-- The fleet feed (newest first) and one digest's history.
CREATE INDEX report_changes_changed_at ON report_changes (changed_at DESC, id DESC);
CREATE INDEX report_changes_digest ON report_changes (digest, id DESC);

-- The new and resolved findings of a change (none for a baseline).
CREATE TABLE report_change_findings (
    change_id   bigint NOT NULL REFERENCES report_changes (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('new', 'resolved')),
    vuln_id     text NOT NULL,
    severity    smallint NOT NULL,
    pkg_name    text NOT NULL DEFAULT '',
    pkg_version text NOT NULL DEFAULT '',
    pkg_type    text NOT NULL DEFAULT '',
    fixed_in    jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX report_change_findings_change ON report_change_findings (change_id, kind, severity DESC);

-- +goose Down
DROP TABLE report_change_findings;
DROP TABLE report_changes;
ALTER TABLE reports DROP COLUMN findings_sha256;
ALTER TABLE reports DROP COLUMN matched_at;
ALTER TABLE reports DROP COLUMN cause;
