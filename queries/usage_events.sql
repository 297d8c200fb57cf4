-- name: InsertUsageEvents :copyfrom
INSERT INTO usage_events (
    request_id, created_at, relay_key_id, service_account_id, user_id, project_id, team_id,
    policy_id, model, binding_id, host_id, host_key_id, inbound_shape, upstream_shape, stream,
    status, error_kind, attempts, input_tokens, output_tokens, cached_read_tokens,
    cache_write_tokens, reasoning_tokens, cost, ttfb_ms, total_ms, overhead_us
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
    $21, $22, $23, $24, $25, $26, $27
);

-- ListUsageEventsPage pages through events in time order; the key is
-- (created_at, request_id).
-- name: ListUsageEventsPage :many
SELECT * FROM usage_events
WHERE (created_at, request_id) > (sqlc.arg(after_created_at)::timestamptz, sqlc.arg(after_request_id)::text)
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
ORDER BY created_at, request_id
LIMIT sqlc.arg('limit')::int;
