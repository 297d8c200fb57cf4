-- name: ListPolicyModelRateLimits :many
SELECT * FROM policy_model_rate_limits ORDER BY policy_id, position, model_id;

-- name: ListPolicyModelRateLimitsByPolicy :many
SELECT * FROM policy_model_rate_limits WHERE policy_id = $1 ORDER BY position, model_id;

-- name: GetPolicyModelRateLimitByPolicyAndModel :one
SELECT * FROM policy_model_rate_limits WHERE policy_id = $1 AND model_id = $2;

-- name: GetPolicyModelRateLimitByPolicyAndModelForUpdate :one
SELECT * FROM policy_model_rate_limits WHERE policy_id = $1 AND model_id = $2 FOR UPDATE;

-- name: InsertPolicyModelRateLimit :one
INSERT INTO policy_model_rate_limits (policy_id, model_id, rate_limit_id, position)
VALUES ($1, $2, $3, $4)
RETURNING *;

-- name: UpdatePolicyModelRateLimit :one
UPDATE policy_model_rate_limits
SET rate_limit_id = $3, position = $4
WHERE policy_id = $1 AND model_id = $2
RETURNING *;

-- name: DeletePolicyModelRateLimit :execrows
DELETE FROM policy_model_rate_limits WHERE policy_id = $1 AND model_id = $2;

-- name: ListPolicyModelRateLimitsPage :many
SELECT * FROM policy_model_rate_limits
WHERE (policy_id, model_id) > (sqlc.arg(after_policy_id)::uuid, sqlc.arg(after_model_id)::uuid)
  AND (sqlc.narg(policy_id)::uuid IS NULL OR policy_id = sqlc.narg(policy_id))
ORDER BY policy_id, model_id
LIMIT sqlc.arg('limit')::int;
