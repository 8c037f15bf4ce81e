-- +goose Up
-- The Grype vulnerability DB the cluster's matcher serves now (issue 31),
-- as its last crowsnest.vulndb.updated event said: one row, replaced by a
-- newer announcement only, so that an event delivered late or twice (every
-- replica sees each event) never moves it back. GET /api/v1/vulndb shows it
-- next to how many reports were matched against which DB build.
CREATE TABLE vulndb_served (
    id            smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    built         timestamptz NOT NULL,
    schema        text NOT NULL,
    checksum      text NOT NULL,
    source        text NOT NULL,
    grype_version text NOT NULL DEFAULT '',
    event_id      text NOT NULL,
    announced_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE vulndb_served;
