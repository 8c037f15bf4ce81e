-- +goose Up
-- Finding lifecycle (issue 31): per digest, every finding key (vulnerability
-- id, package name, version, type) its reports have held, when it was first
-- seen, when a later report dropped it (resolved_at, NULL while open) and
-- when a report first listed it in CISA KEV. A finding that comes back keeps
-- its first_seen (the image held the package all along) and is open again.
-- The rows go with the report (a report stored again after its deletion
-- starts a new history, as its changes start with a new baseline).
CREATE TABLE finding_lifecycle (
    digest      text COLLATE "C" NOT NULL REFERENCES reports (digest) ON DELETE CASCADE,
    vuln_id     text NOT NULL,
    pkg_name    text NOT NULL,
    pkg_version text NOT NULL,
    pkg_type    text NOT NULL,
    severity    smallint NOT NULL,
    first_seen  timestamptz NOT NULL,
    kev_since   timestamptz,
    resolved_at timestamptz,
    PRIMARY KEY (digest, vuln_id, pkg_name, pkg_version, pkg_type)
);
-- Mean time to fix: the findings resolved in a window.
CREATE INDEX finding_lifecycle_resolved_at ON finding_lifecycle (resolved_at) WHERE resolved_at IS NOT NULL;

-- The open findings rows carry their lifecycle, so that lists, filters and
-- sorts read no other table.
ALTER TABLE findings ADD COLUMN first_seen timestamptz, ADD COLUMN kev_since timestamptz;

-- Backfill from the changes recorded since the report was first stored
-- (reports.created_at; its baseline change lists no findings). A key's
-- earliest change since then tells when it appeared: kind 'new' at that
-- change, anything else (resolved first) means the first report held it.
-- Without any change it was in the first report: created_at.
CREATE TEMPORARY TABLE lifecycle_events ON COMMIT DROP AS
SELECT DISTINCT ON (c.digest, cf.vuln_id, cf.pkg_name, cf.pkg_version, cf.pkg_type)
       c.digest, cf.vuln_id, cf.pkg_name, cf.pkg_version, cf.pkg_type, cf.kind, c.changed_at
FROM report_changes c
JOIN reports r ON r.digest = c.digest AND c.changed_at >= r.created_at
JOIN report_change_findings cf ON cf.change_id = c.id AND cf.kind IN ('new', 'resolved')
ORDER BY c.digest, cf.vuln_id, cf.pkg_name, cf.pkg_version, cf.pkg_type, c.changed_at, c.id;

INSERT INTO finding_lifecycle (digest, vuln_id, pkg_name, pkg_version, pkg_type, severity, first_seen)
SELECT DISTINCT ON (f.digest, f.vuln_id, f.pkg_name, f.pkg_version, f.pkg_type)
       f.digest, f.vuln_id, f.pkg_name, f.pkg_version, f.pkg_type, f.severity,
       CASE WHEN e.kind = 'new' THEN e.changed_at ELSE r.created_at END
FROM findings f
JOIN reports r ON r.digest = f.digest
LEFT JOIN lifecycle_events e ON e.digest = f.digest AND e.vuln_id = f.vuln_id AND e.pkg_name = f.pkg_name
     AND e.pkg_version = f.pkg_version AND e.pkg_type = f.pkg_type
ORDER BY f.digest, f.vuln_id, f.pkg_name, f.pkg_version, f.pkg_type, f.severity DESC;

-- KEV listings: the latest KEV-added change of the key, else its first
-- sighting (the report that held it already listed it).
UPDATE finding_lifecycle l SET kev_since = coalesce((
    SELECT max(c.changed_at) FROM report_changes c
    JOIN report_change_findings cf ON cf.change_id = c.id AND cf.kind = 'kev_added'
    WHERE c.digest = l.digest AND cf.vuln_id = l.vuln_id AND cf.pkg_name = l.pkg_name
      AND cf.pkg_version = l.pkg_version AND cf.pkg_type = l.pkg_type AND c.changed_at >= l.first_seen), l.first_seen)
WHERE EXISTS (SELECT 1 FROM findings f WHERE f.kev AND f.digest = l.digest AND f.vuln_id = l.vuln_id
    AND f.pkg_name = l.pkg_name AND f.pkg_version = l.pkg_version AND f.pkg_type = l.pkg_type);

-- Findings resolved since the report was first stored and not back: the
-- latest resolution (mean time to fix counts them).
INSERT INTO finding_lifecycle (digest, vuln_id, pkg_name, pkg_version, pkg_type, severity, first_seen, resolved_at)
SELECT DISTINCT ON (c.digest, cf.vuln_id, cf.pkg_name, cf.pkg_version, cf.pkg_type)
       c.digest, cf.vuln_id, cf.pkg_name, cf.pkg_version, cf.pkg_type, cf.severity,
       CASE WHEN e.kind = 'new' THEN e.changed_at ELSE r.created_at END, c.changed_at
FROM report_changes c
JOIN reports r ON r.digest = c.digest AND c.changed_at >= r.created_at
JOIN report_change_findings cf ON cf.change_id = c.id AND cf.kind = 'resolved'
JOIN lifecycle_events e ON e.digest = c.digest AND e.vuln_id = cf.vuln_id AND e.pkg_name = cf.pkg_name
     AND e.pkg_version = cf.pkg_version AND e.pkg_type = cf.pkg_type
ORDER BY c.digest, cf.vuln_id, cf.pkg_name, cf.pkg_version, cf.pkg_type, c.changed_at DESC, c.id DESC
ON CONFLICT DO NOTHING;

UPDATE findings f SET first_seen = l.first_seen, kev_since = l.kev_since
FROM finding_lifecycle l
WHERE l.digest = f.digest AND l.vuln_id = f.vuln_id AND l.pkg_name = f.pkg_name
  AND l.pkg_version = f.pkg_version AND l.pkg_type = f.pkg_type;
ALTER TABLE findings ALTER COLUMN first_seen SET NOT NULL;

-- +goose Down
ALTER TABLE findings DROP COLUMN kev_since, DROP COLUMN first_seen;
DROP TABLE finding_lifecycle;
