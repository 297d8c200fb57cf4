-- name: ListGroups :many
SELECT * FROM groups ORDER BY slug;

-- name: GetGroupByID :one
SELECT * FROM groups WHERE id = $1;

-- name: GetGroupBySlug :one
SELECT * FROM groups WHERE slug = $1;

-- name: GetGroupByIDForUpdate :one
SELECT * FROM groups WHERE id = $1 FOR UPDATE;

-- name: InsertGroup :one
INSERT INTO groups (slug, name) VALUES ($1, $2) RETURNING *;

-- name: UpdateGroup :one
UPDATE groups SET slug = $2, name = $3 WHERE id = $1 RETURNING *;

-- name: DeleteGroup :execrows
DELETE FROM groups WHERE id = $1;

-- name: ListGroupsPage :many
SELECT * FROM groups
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;
