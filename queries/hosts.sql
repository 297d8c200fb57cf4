-- name: ListHosts :many
SELECT * FROM hosts ORDER BY slug;

-- name: GetHostByID :one
SELECT * FROM hosts WHERE id = $1;
