-- +goose Up
-- Free-text search on image references (q=) uses a trigram index. pg_trgm is
-- a trusted extension, so the database owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX reports_image_trgm ON reports USING gin (image gin_trgm_ops);

-- +goose Down
DROP INDEX reports_image_trgm;
