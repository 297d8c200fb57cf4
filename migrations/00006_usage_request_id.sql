-- +goose Up
-- GET /api/usage/events/{request_id} finds an event by Relay's request id
-- alone. The id carries no time, so the identity index (created_at,
-- request_id) cannot narrow it: this index, made on the parent, is made on
-- every daily partition, present and future, and a lookup probes each
-- partition's index once.
CREATE INDEX usage_events_request_idx ON usage_events (request_id);

-- +goose Down
DROP INDEX usage_events_request_idx;
