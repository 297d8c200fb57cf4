-- name: GetPayloadCapture :one
SELECT * FROM payload_captures WHERE request_id = $1 ORDER BY created_at DESC LIMIT 1;

-- name: DeletePayloadCapturesByRequest :execrows
DELETE FROM payload_captures WHERE request_id = $1;

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
    model, status, request_body, response_body, truncated
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11
);
