-- Queries of the control API (internal/controlapi): sign-in, role lookups and
-- lists limited to what the caller may see. A "visible" list takes the
-- caller's reach as all_rows (everything, for system-wide readers) or as the
-- teams and projects it may read; a project is reachable when it is listed
-- itself or its team is.

-- GetUserByEmailFold finds a user by email, ignoring case (the unique index
-- is on lower(email)).
-- name: GetUserByEmailFold :one
SELECT * FROM users WHERE lower(email) = lower(sqlc.arg(email)::text);

-- ListRoleGrantsByUser is every role binding that applies to a user, its own
-- and its groups', with the team of a project-scoped binding.
-- name: ListRoleGrantsByUser :many
SELECT rb.id, rb.role, rb.team_id, rb.project_id, p.team_id AS project_team_id
FROM role_bindings rb
LEFT JOIN projects p ON p.id = rb.project_id
WHERE rb.user_id = sqlc.arg(user_id)::uuid
   OR rb.group_id IN (SELECT gm.group_id FROM group_memberships gm WHERE gm.user_id = sqlc.arg(user_id)::uuid)
ORDER BY rb.id;

-- ListRateLimitRulesByRateLimits returns the rules of several rate limits.
-- name: ListRateLimitRulesByRateLimits :many
SELECT * FROM rate_limit_rules
WHERE rate_limit_id = ANY(sqlc.arg(rate_limit_ids)::uuid[])
ORDER BY rate_limit_id, meter, window_seconds, id;

-- ListTeamsVisiblePage: a team is visible when listed, or when one of its
-- projects is (members of a project see the team it belongs to).
-- name: ListTeamsVisiblePage :many
SELECT * FROM teams
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.arg(all_rows)::bool
       OR id = ANY(sqlc.arg(team_ids)::uuid[])
       OR id IN (SELECT p.team_id FROM projects p WHERE p.id = ANY(sqlc.arg(project_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: ListProjectsVisiblePage :many
SELECT * FROM projects
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
  AND (sqlc.arg(all_rows)::bool
       OR team_id = ANY(sqlc.arg(team_ids)::uuid[])
       OR id = ANY(sqlc.arg(project_ids)::uuid[]))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: ListServiceAccountsVisiblePage :many
SELECT * FROM service_accounts
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.arg(all_rows)::bool
       OR project_id = ANY(sqlc.arg(project_ids)::uuid[])
       OR project_id IN (SELECT p.id FROM projects p WHERE p.team_id = ANY(sqlc.arg(team_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: ListRelayKeysVisiblePage :many
SELECT * FROM relay_keys
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.narg(service_account_id)::uuid IS NULL OR service_account_id = sqlc.narg(service_account_id))
  AND (sqlc.narg(user_id)::uuid IS NULL OR user_id = sqlc.narg(user_id))
  AND (sqlc.arg(all_rows)::bool
       OR project_id = ANY(sqlc.arg(project_ids)::uuid[])
       OR project_id IN (SELECT p.id FROM projects p WHERE p.team_id = ANY(sqlc.arg(team_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: ListPolicyBindingsVisiblePage :many
SELECT * FROM policy_bindings
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.narg(policy_id)::uuid IS NULL OR policy_id = sqlc.narg(policy_id))
  AND (sqlc.arg(all_rows)::bool
       OR project_id = ANY(sqlc.arg(project_ids)::uuid[])
       OR project_id IN (SELECT p.id FROM projects p WHERE p.team_id = ANY(sqlc.arg(team_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- ListBudgetsVisiblePage: a team budget is visible with its team; a project
-- or relay-key budget with its project.
-- name: ListBudgetsVisiblePage :many
SELECT * FROM budgets
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.narg(relay_key_id)::uuid IS NULL OR relay_key_id = sqlc.narg(relay_key_id))
  AND (sqlc.arg(all_rows)::bool
       OR team_id = ANY(sqlc.arg(team_ids)::uuid[])
       OR coalesce(project_id, (SELECT rk.project_id FROM relay_keys rk WHERE rk.id = budgets.relay_key_id)) IN (
              SELECT p.id FROM projects p
              WHERE p.id = ANY(sqlc.arg(project_ids)::uuid[]) OR p.team_id = ANY(sqlc.arg(team_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- ListRoleBindingsVisiblePage: the caller's own bindings (direct and through
-- its groups) and those scoped to the teams and projects it may read;
-- system-wide bindings only with all_rows.
-- name: ListRoleBindingsVisiblePage :many
SELECT * FROM role_bindings
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(user_id)::uuid IS NULL OR user_id = sqlc.narg(user_id))
  AND (sqlc.narg(group_id)::uuid IS NULL OR group_id = sqlc.narg(group_id))
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.arg(all_rows)::bool
       OR user_id = sqlc.arg(self_id)::uuid
       OR group_id IN (SELECT gm.group_id FROM group_memberships gm WHERE gm.user_id = sqlc.arg(self_id)::uuid)
       OR team_id = ANY(sqlc.arg(team_ids)::uuid[])
       OR project_id = ANY(sqlc.arg(project_ids)::uuid[])
       OR project_id IN (SELECT p.id FROM projects p WHERE p.team_id = ANY(sqlc.arg(team_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- ListInferenceTokensVisiblePage: the caller's own tokens and those of the
-- projects it manages.
-- name: ListInferenceTokensVisiblePage :many
SELECT * FROM inference_tokens
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(user_id)::uuid IS NULL OR user_id = sqlc.narg(user_id))
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.arg(all_rows)::bool
       OR user_id = sqlc.arg(self_id)::uuid
       OR project_id = ANY(sqlc.arg(project_ids)::uuid[])
       OR project_id IN (SELECT p.id FROM projects p WHERE p.team_id = ANY(sqlc.arg(team_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- ListUsersVisiblePage: every user with all_rows, else only the caller.
-- name: ListUsersVisiblePage :many
SELECT * FROM users
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(email)::text IS NULL OR email = sqlc.narg(email))
  AND (sqlc.arg(all_rows)::bool OR id = sqlc.arg(self_id)::uuid)
ORDER BY id
LIMIT sqlc.arg('limit')::int;
