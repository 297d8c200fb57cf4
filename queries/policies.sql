-- name: ListPolicies :many
SELECT * FROM policies ORDER BY slug;

-- name: GetPolicyByID :one
SELECT * FROM policies WHERE id = $1;

-- name: GetPolicyBySlug :one
SELECT * FROM policies WHERE slug = $1;

-- name: GetPolicyByIDForUpdate :one
SELECT * FROM policies WHERE id = $1 FOR UPDATE;

-- name: InsertPolicy :one
INSERT INTO policies (
    slug, name, all_models, all_host_keys, key_strategy, rate_limit_id,
    max_wait_ms, priority, max_attempts, limiter_failure_mode,
    capture_payloads, capture_max_bytes
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
)
RETURNING *;

-- name: UpdatePolicy :one
UPDATE policies
SET slug = $2, name = $3, all_models = $4, all_host_keys = $5, key_strategy = $6, rate_limit_id = $7,
    max_wait_ms = $8, priority = $9, max_attempts = $10, limiter_failure_mode = $11,
    capture_payloads = $12, capture_max_bytes = $13
WHERE id = $1
RETURNING *;

-- name: DeletePolicy :execrows
DELETE FROM policies WHERE id = $1;

-- name: ListPoliciesPage :many
SELECT * FROM policies
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;
