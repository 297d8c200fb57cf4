-- +goose Up
-- Outbound headers (issue 21, docs/inference-api.md#headers): the caller's
-- headers an operator lets through to a host beyond what the binding's shape
-- forwards. Canonical header names; the control API refuses credentials,
-- billing and framing headers (wire.CheckForwardHeaders) before they get here.
ALTER TABLE hosts
    ADD COLUMN forward_headers text[] NOT NULL DEFAULT '{}'
        CONSTRAINT hosts_forward_headers_check CHECK (cardinality(forward_headers) <= 32
            AND array_position(forward_headers, NULL) IS NULL);

-- +goose Down
ALTER TABLE hosts DROP COLUMN forward_headers;
