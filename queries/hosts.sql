-- name: ListHosts :many
SELECT * FROM hosts ORDER BY slug;

-- name: GetHostByID :one
SELECT * FROM hosts WHERE id = $1;

-- name: GetHostBySlug :one
SELECT * FROM hosts WHERE slug = $1;

-- name: GetHostByIDForUpdate :one
SELECT * FROM hosts WHERE id = $1 FOR UPDATE;

-- name: InsertHost :one
INSERT INTO hosts (
    slug, name, provider, base_url, enabled,
    connect_timeout_ms, first_byte_timeout_ms, idle_timeout_ms, total_timeout_ms, forward_headers,
    breaker_server_failures, breaker_network_failures, profile, profile_params
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14
)
RETURNING *;

-- name: UpdateHost :one
UPDATE hosts
SET slug = $2, name = $3, provider = $4, base_url = $5, enabled = $6,
    connect_timeout_ms = $7, first_byte_timeout_ms = $8, idle_timeout_ms = $9, total_timeout_ms = $10,
    forward_headers = $11, breaker_server_failures = $12, breaker_network_failures = $13,
    profile = $14, profile_params = $15
WHERE id = $1
RETURNING *;

-- Deleting a host deletes its bindings and host keys (ON DELETE CASCADE).
-- name: DeleteHost :execrows
DELETE FROM hosts WHERE id = $1;

-- name: ListHostsPage :many
SELECT * FROM hosts
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;
