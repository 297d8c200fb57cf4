-- name: GetRoleBindingByID :one
SELECT * FROM role_bindings WHERE id = $1;

-- name: GetRoleBindingByIDForUpdate :one
SELECT * FROM role_bindings WHERE id = $1 FOR UPDATE;

-- ListRoleBindingsByUserWithGroups is every role binding that applies to a
-- user: its own and those of the groups it is a member of.
-- name: ListRoleBindingsByUserWithGroups :many
SELECT * FROM role_bindings
WHERE user_id = sqlc.arg(user_id)::uuid
   OR group_id IN (SELECT group_id FROM group_memberships WHERE group_memberships.user_id = sqlc.arg(user_id)::uuid)
ORDER BY id;

-- name: InsertRoleBinding :one
INSERT INTO role_bindings (role, user_id, group_id, team_id, project_id)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- name: UpdateRoleBinding :one
UPDATE role_bindings
SET role = $2, user_id = $3, group_id = $4, team_id = $5, project_id = $6
WHERE id = $1
RETURNING *;

-- name: DeleteRoleBinding :execrows
DELETE FROM role_bindings WHERE id = $1;

-- name: ListRoleBindingsPage :many
SELECT * FROM role_bindings
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(user_id)::uuid IS NULL OR user_id = sqlc.narg(user_id))
  AND (sqlc.narg(group_id)::uuid IS NULL OR group_id = sqlc.narg(group_id))
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
