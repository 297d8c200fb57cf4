-- name: ListPolicyModelRateLimits :many
SELECT * FROM policy_model_rate_limits ORDER BY policy_id, position, model_id;

-- name: ListPolicyModelRateLimitsByPolicy :many
SELECT * FROM policy_model_rate_limits WHERE policy_id = $1 ORDER BY position, model_id;
