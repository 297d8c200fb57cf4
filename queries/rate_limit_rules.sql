-- name: ListRateLimitRules :many
SELECT * FROM rate_limit_rules ORDER BY rate_limit_id, meter, window_seconds, id;

-- name: ListRateLimitRulesByRateLimit :many
SELECT * FROM rate_limit_rules WHERE rate_limit_id = $1 ORDER BY meter, window_seconds, id;
