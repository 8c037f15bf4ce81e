-- +goose Up
-- The transactional outbox: each report change writes the event it emits
-- here, in its own transaction; the relay (internal/events) publishes the
-- rows to JetStream and deletes each once the stream has acknowledged it.
CREATE TABLE event_outbox (
    id              bigserial PRIMARY KEY,
    subject         text NOT NULL,
    digest          text COLLATE "C" NOT NULL,
    -- The CloudEvents id, sent as Nats-Msg-Id (also inside payload).
    event_id        text NOT NULL,
    -- The CloudEvents JSON envelope, published byte for byte.
    payload         json NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text NOT NULL DEFAULT ''
);
-- The relay publishes only the oldest row of each digest (order per digest).
CREATE INDEX event_outbox_digest_id ON event_outbox (digest, id);
CREATE INDEX event_outbox_next_attempt_at ON event_outbox (next_attempt_at);

-- +goose Down
DROP TABLE event_outbox;
