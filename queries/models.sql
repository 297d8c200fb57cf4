-- name: ListModels :many
SELECT * FROM models ORDER BY name;

-- name: GetModelByID :one
SELECT * FROM models WHERE id = $1;

-- name: GetModelByName :one
SELECT * FROM models WHERE name = $1;

-- name: GetModelByIDForUpdate :one
SELECT * FROM models WHERE id = $1 FOR UPDATE;

-- name: InsertModel :one
INSERT INTO models (
    name, provider, kind, context_window, max_output_tokens,
    supports_tools, supports_vision, supports_json, supports_thinking
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9
)
RETURNING *;

-- name: UpdateModel :one
UPDATE models
SET name = $2, provider = $3, kind = $4, context_window = $5, max_output_tokens = $6,
    supports_tools = $7, supports_vision = $8, supports_json = $9, supports_thinking = $10
WHERE id = $1
RETURNING *;

-- Deleting a model deletes its bindings and policy grants (ON DELETE CASCADE).
-- name: DeleteModel :execrows
DELETE FROM models WHERE id = $1;

-- name: ListModelsPage :many
SELECT * FROM models
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;
