-- name: ListPolicyBindings :many
SELECT * FROM policy_bindings ORDER BY project_id, position, id;

-- name: GetPolicyBindingByID :one
SELECT * FROM policy_bindings WHERE id = $1;

-- name: GetPolicyBindingByIDForUpdate :one
SELECT * FROM policy_bindings WHERE id = $1 FOR UPDATE;

-- ListPolicyBindingsByProject is a project's policy bindings in resolution order.
-- name: ListPolicyBindingsByProject :many
SELECT * FROM policy_bindings WHERE project_id = $1 ORDER BY position, id;

-- name: InsertPolicyBinding :one
INSERT INTO policy_bindings (project_id, policy_id, service_account_id, user_id, group_id, position)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- A policy binding stays in its project.
-- name: UpdatePolicyBinding :one
UPDATE policy_bindings
SET policy_id = $2, service_account_id = $3, user_id = $4, group_id = $5, position = $6
WHERE id = $1
RETURNING *;

-- name: DeletePolicyBinding :execrows
DELETE FROM policy_bindings WHERE id = $1;

-- name: ListPolicyBindingsPage :many
SELECT * FROM policy_bindings
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.narg(policy_id)::uuid IS NULL OR policy_id = sqlc.narg(policy_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
