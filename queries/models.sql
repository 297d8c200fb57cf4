-- name: ListModels :many
SELECT * FROM models ORDER BY name;

-- name: GetModelByID :one
SELECT * FROM models WHERE id = $1;

-- name: GetModelByName :one
SELECT * FROM models WHERE name = $1;

-- name: GetModelByIDForUpdate :one
SELECT * FROM models WHERE id = $1 FOR UPDATE;

-- InsertModel takes an empty strategy for the default, priority, and a nil
-- fallback list for none.
-- name: InsertModel :one
INSERT INTO models (
    name, provider, kind, context_window, max_output_tokens,
    supports_tools, supports_vision, supports_json, supports_thinking, strategy, fallbacks
) VALUES (
    sqlc.arg(name), sqlc.arg(provider), sqlc.arg(kind), sqlc.arg(context_window), sqlc.arg(max_output_tokens),
    sqlc.arg(supports_tools), sqlc.arg(supports_vision), sqlc.arg(supports_json), sqlc.arg(supports_thinking),
    coalesce(nullif(sqlc.arg(strategy)::text, ''), 'priority'), coalesce(sqlc.arg(fallbacks)::uuid[], '{}')
)
RETURNING *;

-- name: UpdateModel :one
UPDATE models
SET name = sqlc.arg(name), provider = sqlc.arg(provider), kind = sqlc.arg(kind),
    context_window = sqlc.arg(context_window), max_output_tokens = sqlc.arg(max_output_tokens),
    supports_tools = sqlc.arg(supports_tools), supports_vision = sqlc.arg(supports_vision),
    supports_json = sqlc.arg(supports_json), supports_thinking = sqlc.arg(supports_thinking),
    strategy = sqlc.arg(strategy), fallbacks = coalesce(sqlc.arg(fallbacks)::uuid[], '{}')
WHERE id = sqlc.arg(id)
RETURNING *;

-- Deleting a model deletes its bindings and policy grants (ON DELETE CASCADE).
-- name: DeleteModel :execrows
DELETE FROM models WHERE id = $1;

-- name: ListModelsPage :many
SELECT * FROM models
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;
