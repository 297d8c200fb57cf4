-- name: ListRateLimitRules :many
SELECT * FROM rate_limit_rules ORDER BY rate_limit_id, meter, window_seconds, id;

-- name: ListRateLimitRulesByRateLimit :many
SELECT * FROM rate_limit_rules WHERE rate_limit_id = $1 ORDER BY meter, window_seconds, id;

-- name: GetRateLimitRuleByID :one
SELECT * FROM rate_limit_rules WHERE id = $1;

-- name: GetRateLimitRuleByIDForUpdate :one
SELECT * FROM rate_limit_rules WHERE id = $1 FOR UPDATE;

-- name: InsertRateLimitRule :one
INSERT INTO rate_limit_rules (rate_limit_id, meter, amount, window_seconds, per_principal)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- A rule stays in its rate limit.
-- name: UpdateRateLimitRule :one
UPDATE rate_limit_rules
SET meter = $2, amount = $3, window_seconds = $4, per_principal = $5
WHERE id = $1
RETURNING *;

-- name: DeleteRateLimitRule :execrows
DELETE FROM rate_limit_rules WHERE id = $1;

-- name: ListRateLimitRulesPage :many
SELECT * FROM rate_limit_rules
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(rate_limit_id)::uuid IS NULL OR rate_limit_id = sqlc.narg(rate_limit_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
