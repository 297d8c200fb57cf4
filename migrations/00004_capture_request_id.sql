-- +goose Up
-- Relay's own request id (X-Relay-Request-ID, minted for every request)
-- identifies a request everywhere inside Relay: payload captures, the usage
-- ledger, logs and traces. The caller's X-Request-ID is only an attribute,
-- kept in client_request_id: two callers (two projects) may send the same
-- one, and neither may reach, hide or delete the other's rows by it.
--
-- Expand-safe: nullable columns without a default are a catalog change only
-- (no table rewrite, no long lock), and code that does not know them keeps
-- working. Rows written before keep the id they had in request_id.
ALTER TABLE payload_captures ADD COLUMN client_request_id text;
ALTER TABLE usage_events ADD COLUMN client_request_id text;

-- +goose Down
ALTER TABLE usage_events DROP COLUMN client_request_id;
ALTER TABLE payload_captures DROP COLUMN client_request_id;
