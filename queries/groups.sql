-- name: ListGroups :many
SELECT * FROM groups ORDER BY slug;

-- name: GetGroupByID :one
SELECT * FROM groups WHERE id = $1;
