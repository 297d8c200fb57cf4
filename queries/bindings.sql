-- name: ListBindings :many
SELECT * FROM bindings ORDER BY model_id, position, id;

-- name: GetBindingByID :one
SELECT * FROM bindings WHERE id = $1;
