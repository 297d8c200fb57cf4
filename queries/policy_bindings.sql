-- name: ListPolicyBindings :many
SELECT * FROM policy_bindings ORDER BY project_id, position, id;

-- name: GetPolicyBindingByID :one
SELECT * FROM policy_bindings WHERE id = $1;
