-- name: ListBindings :many
SELECT * FROM bindings ORDER BY model_id, position, id;

-- name: GetBindingByID :one
SELECT * FROM bindings WHERE id = $1;

-- name: GetBindingByModelAndHost :one
SELECT * FROM bindings WHERE model_id = $1 AND host_id = $2;

-- name: GetBindingByIDForUpdate :one
SELECT * FROM bindings WHERE id = $1 FOR UPDATE;

-- ListBindingsByModel is a model's bindings in routing order.
-- name: ListBindingsByModel :many
SELECT * FROM bindings WHERE model_id = $1 ORDER BY position, id;

-- InsertBinding takes a weight of 0 for the default, 1.
-- name: InsertBinding :one
INSERT INTO bindings (
    model_id, host_id, shape, upstream_model, position, enabled,
    input_price, output_price, cached_input_price, cache_write_price, reasoning_price, price_tiers, weight, unit_prices
) VALUES (
    sqlc.arg(model_id), sqlc.arg(host_id), sqlc.arg(shape), sqlc.arg(upstream_model), sqlc.arg(position),
    sqlc.arg(enabled), sqlc.arg(input_price), sqlc.arg(output_price), sqlc.arg(cached_input_price),
    sqlc.arg(cache_write_price), sqlc.narg(reasoning_price), sqlc.arg(price_tiers),
    coalesce(nullif(sqlc.arg(weight)::integer, 0), 1), sqlc.arg(unit_prices)
)
RETURNING *;

-- A binding is the join of one model and one host: those two never change.
-- name: UpdateBinding :one
UPDATE bindings
SET shape = $2, upstream_model = $3, position = $4, enabled = $5,
    input_price = $6, output_price = $7, cached_input_price = $8, cache_write_price = $9,
    reasoning_price = $10, price_tiers = $11, weight = $12, unit_prices = $13
WHERE id = $1
RETURNING *;

-- name: DeleteBinding :execrows
DELETE FROM bindings WHERE id = $1;

-- name: ListBindingsPage :many
SELECT * FROM bindings
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(model_id)::uuid IS NULL OR model_id = sqlc.narg(model_id))
  AND (sqlc.narg(host_id)::uuid IS NULL OR host_id = sqlc.narg(host_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
