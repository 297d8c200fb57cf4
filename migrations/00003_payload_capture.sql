-- +goose Up
-- Payload capture (docs/observability.md): a policy may turn on capturing
-- the bodies of its requests. Captures live apart from the usage ledger in
-- payload_captures, written in batches off the request path (bounded queue,
-- drop on full), capped in size per body, deleted after the retention
-- period by the capture writer's maintenance, and deletable on demand by
-- request id or project (redaction). Headers are never captured.
ALTER TABLE policies
    ADD COLUMN capture_payloads  boolean NOT NULL DEFAULT false,
    -- The cap on each captured body; 0 is the default, 65536.
    ADD COLUMN capture_max_bytes integer NOT NULL DEFAULT 0
        CHECK (capture_max_bytes = 0 OR capture_max_bytes BETWEEN 1024 AND 1048576);

CREATE TABLE payload_captures (
    request_id     text NOT NULL,
    created_at     timestamptz NOT NULL,
    project_id     uuid NOT NULL,
    relay_key_id   uuid,          -- the relay key that called, or
    inference_token_id uuid,      -- the inference token
    policy_id      uuid,
    model          text NOT NULL DEFAULT '',
    status         integer NOT NULL DEFAULT 0,
    request_body   bytea NOT NULL,  -- as the caller sent it, up to the cap
    response_body  bytea NOT NULL,  -- the bytes sent to the caller (a stream's events), up to the cap
    truncated      boolean NOT NULL DEFAULT false,
    PRIMARY KEY (request_id, created_at)
);
CREATE INDEX payload_captures_created_idx ON payload_captures (created_at);
CREATE INDEX payload_captures_project_idx ON payload_captures (project_id, created_at);

-- +goose Down
DROP TABLE payload_captures;
ALTER TABLE policies DROP COLUMN capture_max_bytes, DROP COLUMN capture_payloads;
