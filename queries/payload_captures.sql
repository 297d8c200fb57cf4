-- Captures are addressed by Relay's own request id (X-Relay-Request-ID),
-- never by the caller's X-Request-ID (client_request_id): callers choose
-- theirs, and two projects may send the same one.

-- ListPayloadCapturesByRequest returns the captures of a request id, newest
-- first. Relay mints a new id for every request, so there is one; only rows
-- written before migration 00004, keyed by the caller's X-Request-ID, may
-- share an id across projects, and the caller picks the one it may see.
-- name: ListPayloadCapturesByRequest :many
SELECT * FROM payload_captures WHERE request_id = $1 ORDER BY created_at DESC LIMIT 32;

-- DeletePayloadCapturesByRequest deletes a request's captures in one
-- project: the one the caller was authorised for, so that an older row of
-- another project with the same id stays.
-- name: DeletePayloadCapturesByRequest :execrows
DELETE FROM payload_captures WHERE request_id = $1 AND project_id = $2;

-- name: DeletePayloadCapturesByProject :execrows
DELETE FROM payload_captures WHERE project_id = $1;

-- name: DeletePayloadCapturesBefore :execrows
-- At most sqlc.arg(batch) rows at a time: the caller repeats until fewer go.
DELETE FROM payload_captures WHERE ctid IN (
    SELECT pc.ctid FROM payload_captures pc WHERE pc.created_at < sqlc.arg(before)::timestamptz LIMIT sqlc.arg(batch)::int
);

-- name: InsertPayloadCaptures :copyfrom
INSERT INTO payload_captures (
    request_id, created_at, project_id, relay_key_id, inference_token_id, policy_id,
    model, status, request_body, response_body, truncated, client_request_id
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
);
