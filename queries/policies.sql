-- name: ListPolicies :many
SELECT * FROM policies ORDER BY slug;

-- name: GetPolicyByID :one
SELECT * FROM policies WHERE id = $1;

-- name: GetPolicyBySlug :one
SELECT * FROM policies WHERE slug = $1;

-- name: GetPolicyByIDForUpdate :one
SELECT * FROM policies WHERE id = $1 FOR UPDATE;

-- InsertPolicy takes an empty affinity for the default, key.
-- name: InsertPolicy :one
INSERT INTO policies (
    slug, name, all_models, all_host_keys, key_strategy, rate_limit_id,
    max_wait_ms, priority, max_attempts, limiter_failure_mode,
    capture_payloads, capture_max_bytes, route_strategy, affinity, budget_fallback, team_id,
    degrade_after_ms, degrade_below_priority, response_cache, guardrails
) VALUES (
    sqlc.arg(slug), sqlc.arg(name), sqlc.arg(all_models), sqlc.arg(all_host_keys), sqlc.arg(key_strategy),
    sqlc.narg(rate_limit_id), sqlc.arg(max_wait_ms), sqlc.arg(priority), sqlc.arg(max_attempts),
    sqlc.arg(limiter_failure_mode), sqlc.arg(capture_payloads), sqlc.arg(capture_max_bytes),
    sqlc.arg(route_strategy), coalesce(nullif(sqlc.arg(affinity)::text, ''), 'key'), sqlc.arg(budget_fallback),
    sqlc.narg(team_id), sqlc.narg(degrade_after_ms), sqlc.narg(degrade_below_priority), sqlc.narg(response_cache),
    sqlc.narg(guardrails)
)
RETURNING *;

-- name: UpdatePolicy :one
UPDATE policies
SET slug = $2, name = $3, all_models = $4, all_host_keys = $5, key_strategy = $6, rate_limit_id = $7,
    max_wait_ms = $8, priority = $9, max_attempts = $10, limiter_failure_mode = $11,
    capture_payloads = $12, capture_max_bytes = $13, route_strategy = $14, affinity = $15,
    budget_fallback = $16, degrade_after_ms = $17, degrade_below_priority = $18, response_cache = $19,
    guardrails = $20, mcp_grants = $21, mcp_require_approval = $22
WHERE id = $1
RETURNING *;

-- name: DeletePolicy :execrows
DELETE FROM policies WHERE id = $1;

-- name: ListPoliciesPage :many
SELECT * FROM policies
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- ListPoliciesVisiblePage is a page of the policies a caller may read: every
-- system policy, and the policies of the teams listed (all of them when all).
-- name: ListPoliciesVisiblePage :many
SELECT * FROM policies
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.arg(all_teams)::bool OR team_id IS NULL OR team_id = ANY(sqlc.arg(team_ids)::uuid[]))
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
