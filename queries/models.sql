-- name: ListModels :many
SELECT * FROM models ORDER BY name;

-- name: GetModelByID :one
SELECT * FROM models WHERE id = $1;
