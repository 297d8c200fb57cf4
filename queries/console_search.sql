-- Searches of the admin console (ui/): one keyset page of the rows whose slug
-- or name (a relay key: its name or display prefix; a user: its email or name)
-- matches a LIKE pattern, with the reach filters of the control API's
-- visible lists (queries/controlapi_access.sql). The pattern is built and
-- escaped by the store; a search scans the primary key in order and stops at
-- the page's last row.

-- name: SearchHostsPage :many
SELECT * FROM hosts
WHERE id > sqlc.arg(after)::uuid
  AND (slug ILIKE sqlc.arg(pattern)::text OR name ILIKE sqlc.arg(pattern)::text OR base_url ILIKE sqlc.arg(pattern)::text)
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: SearchModelsPage :many
SELECT * FROM models
WHERE id > sqlc.arg(after)::uuid
  AND (name ILIKE sqlc.arg(pattern)::text OR provider ILIKE sqlc.arg(pattern)::text)
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: SearchPoliciesPage :many
SELECT * FROM policies
WHERE id > sqlc.arg(after)::uuid
  AND (slug ILIKE sqlc.arg(pattern)::text OR name ILIKE sqlc.arg(pattern)::text)
  AND (sqlc.arg(all_teams)::bool OR team_id IS NULL OR team_id = ANY(sqlc.arg(team_ids)::uuid[]))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: SearchTeamsVisiblePage :many
SELECT * FROM teams
WHERE id > sqlc.arg(after)::uuid
  AND (slug ILIKE sqlc.arg(pattern)::text OR name ILIKE sqlc.arg(pattern)::text)
  AND (sqlc.arg(all_rows)::bool
       OR id = ANY(sqlc.arg(team_ids)::uuid[])
       OR id IN (SELECT p.team_id FROM projects p WHERE p.id = ANY(sqlc.arg(project_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: SearchProjectsVisiblePage :many
SELECT * FROM projects
WHERE id > sqlc.arg(after)::uuid
  AND (slug ILIKE sqlc.arg(pattern)::text OR name ILIKE sqlc.arg(pattern)::text)
  AND (sqlc.arg(all_rows)::bool
       OR team_id = ANY(sqlc.arg(team_ids)::uuid[])
       OR id = ANY(sqlc.arg(project_ids)::uuid[]))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: SearchServiceAccountsVisiblePage :many
SELECT * FROM service_accounts
WHERE id > sqlc.arg(after)::uuid
  AND (slug ILIKE sqlc.arg(pattern)::text OR name ILIKE sqlc.arg(pattern)::text)
  AND (sqlc.arg(all_rows)::bool
       OR project_id = ANY(sqlc.arg(project_ids)::uuid[])
       OR project_id IN (SELECT p.id FROM projects p WHERE p.team_id = ANY(sqlc.arg(team_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: SearchRelayKeysVisiblePage :many
SELECT * FROM relay_keys
WHERE id > sqlc.arg(after)::uuid
  AND (name ILIKE sqlc.arg(pattern)::text OR display_prefix ILIKE sqlc.arg(pattern)::text)
  AND (sqlc.arg(all_rows)::bool
       OR project_id = ANY(sqlc.arg(project_ids)::uuid[])
       OR project_id IN (SELECT p.id FROM projects p WHERE p.team_id = ANY(sqlc.arg(team_ids)::uuid[])))
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: SearchUsersVisiblePage :many
SELECT * FROM users
WHERE id > sqlc.arg(after)::uuid
  AND (email ILIKE sqlc.arg(pattern)::text OR name ILIKE sqlc.arg(pattern)::text)
  AND (sqlc.arg(all_rows)::bool OR id = sqlc.arg(self_id)::uuid)
ORDER BY id
LIMIT sqlc.arg('limit')::int;
