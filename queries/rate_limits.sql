-- name: ListRateLimits :many
SELECT * FROM rate_limits ORDER BY slug;

-- name: GetRateLimitByID :one
SELECT * FROM rate_limits WHERE id = $1;
