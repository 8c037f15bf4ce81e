-- +goose Up
-- One row per image digest: the report summary. Lists read only this table.
CREATE TABLE reports (
    digest        text PRIMARY KEY,
    image         text NOT NULL DEFAULT '',
    scanned_at    timestamptz NOT NULL,
    stored_at     timestamptz NOT NULL,
    created_at    timestamptz NOT NULL,
    grype_version text NOT NULL DEFAULT '',
    db_built      text NOT NULL DEFAULT '',
    db_schema     text NOT NULL DEFAULT '',
    critical      integer NOT NULL DEFAULT 0,
    high          integer NOT NULL DEFAULT 0,
    medium        integer NOT NULL DEFAULT 0,
    low           integer NOT NULL DEFAULT 0,
    negligible    integer NOT NULL DEFAULT 0,
    unknown       integer NOT NULL DEFAULT 0,
    fixable       integer NOT NULL DEFAULT 0,
    findings      integer NOT NULL DEFAULT 0,
    max_severity  smallint NOT NULL DEFAULT 0,
    bom_sha256    bytea NOT NULL
);
-- Keyset pagination: every sort key is paired with the digest.
CREATE INDEX reports_scanned_at ON reports (scanned_at, digest);
CREATE INDEX reports_image ON reports (image, digest);
CREATE INDEX reports_critical ON reports (critical, digest);
CREATE INDEX reports_high ON reports (high, digest);
CREATE INDEX reports_medium ON reports (medium, digest);
CREATE INDEX reports_low ON reports (low, digest);
-- minSeverity filter ("images with a critical CVE") and fixable filter.
CREATE INDEX reports_max_severity ON reports (max_severity, scanned_at, digest);
CREATE INDEX reports_fixable ON reports (scanned_at, digest) WHERE fixable > 0;

-- The raw BOM, compressed, apart from the summary so lists never touch it.
CREATE TABLE report_boms (
    digest   text PRIMARY KEY REFERENCES reports (digest) ON DELETE CASCADE,
    encoding text NOT NULL,
    size     bigint NOT NULL,
    data     bytea NOT NULL
);

-- One row per (vulnerability id, affected component) of a report.
CREATE TABLE findings (
    id          bigserial PRIMARY KEY,
    digest      text NOT NULL REFERENCES reports (digest) ON DELETE CASCADE,
    vuln_id     text NOT NULL,
    source      text NOT NULL DEFAULT '',
    severity    smallint NOT NULL,
    cvss_score  double precision,
    cvss_vector text NOT NULL DEFAULT '',
    pkg_name    text NOT NULL DEFAULT '',
    pkg_version text NOT NULL DEFAULT '',
    pkg_type    text NOT NULL DEFAULT '',
    purl        text NOT NULL DEFAULT '',
    fixed_in    jsonb NOT NULL DEFAULT '[]',
    fixable     boolean NOT NULL DEFAULT false,
    description text NOT NULL DEFAULT '',
    url         text NOT NULL DEFAULT ''
);
CREATE INDEX findings_digest_severity ON findings (digest, severity DESC, cvss_score DESC NULLS LAST);
CREATE INDEX findings_vuln_id ON findings (lower(vuln_id), digest);

-- Scan progress kept from the operator's image.needed and job.done events.
CREATE TABLE scans (
    digest     text PRIMARY KEY,
    image      text NOT NULL DEFAULT '',
    namespace  text NOT NULL DEFAULT '',
    scanner    text NOT NULL DEFAULT '',
    job        text NOT NULL DEFAULT '',
    status     text NOT NULL,
    reason     text NOT NULL DEFAULT '',
    message    text NOT NULL DEFAULT '',
    attempt    integer NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL
);
CREATE INDEX scans_updated_at ON scans (updated_at DESC);
CREATE INDEX scans_status_updated_at ON scans (status, updated_at DESC);

-- +goose Down
DROP TABLE scans;
DROP TABLE findings;
DROP TABLE report_boms;
DROP TABLE reports;
