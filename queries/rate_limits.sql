-- name: ListRateLimits :many
SELECT * FROM rate_limits ORDER BY slug;

-- name: GetRateLimitByID :one
SELECT * FROM rate_limits WHERE id = $1;

-- name: GetRateLimitBySlug :one
SELECT * FROM rate_limits WHERE slug = $1;

-- name: GetRateLimitByIDForUpdate :one
SELECT * FROM rate_limits WHERE id = $1 FOR UPDATE;

-- name: InsertRateLimit :one
INSERT INTO rate_limits (slug, name) VALUES ($1, $2) RETURNING *;

-- name: UpdateRateLimit :one
UPDATE rate_limits SET slug = $2, name = $3 WHERE id = $1 RETURNING *;

-- name: DeleteRateLimit :execrows
DELETE FROM rate_limits WHERE id = $1;

-- name: ListRateLimitsPage :many
SELECT * FROM rate_limits
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;
