-- +goose Up
-- What runs where, from the operator's crowsnest.inventory.snapshot: one row
-- per (namespace, workload, container, digest). A snapshot replaces all
-- rows of its namespace in one transaction. Read authorization filters
-- reports with EXISTS on (digest, namespace).
CREATE TABLE inventory (
    namespace text NOT NULL,
    kind      text NOT NULL,
    name      text NOT NULL,
    container text NOT NULL,
    digest    text COLLATE "C" NOT NULL,
    image     text NOT NULL DEFAULT '',
    init      boolean NOT NULL DEFAULT false,
    pods      integer NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, kind, name, container, digest)
);
CREATE INDEX inventory_digest_namespace ON inventory (digest, namespace);

-- The last snapshot applied per namespace: an older one (event time, then
-- id, so that every replica converges on the same) is ignored.
CREATE TABLE inventory_namespaces (
    namespace  text PRIMARY KEY,
    event_time timestamptz NOT NULL,
    event_id   text NOT NULL,
    labels     jsonb NOT NULL DEFAULT '{}',
    truncated  boolean NOT NULL DEFAULT false,
    applied_at timestamptz NOT NULL
);

-- Per digest: when an inventory first listed it, when one last did, and
-- since when none does (NULL while it runs). Outlives reports: a digest
-- may run before its report is stored.
CREATE TABLE digest_runtime (
    digest            text COLLATE "C" PRIMARY KEY,
    first_seen        timestamptz NOT NULL,
    last_seen_running timestamptz NOT NULL,
    not_running_since timestamptz
);
CREATE INDEX digest_runtime_not_running_since ON digest_runtime (not_running_since) WHERE not_running_since IS NOT NULL;

-- +goose Down
DROP TABLE digest_runtime;
DROP TABLE inventory_namespaces;
DROP TABLE inventory;
