-- name: ListHostKeys :many
SELECT * FROM host_keys ORDER BY host_id, position, slug;

-- name: GetHostKeyByID :one
SELECT * FROM host_keys WHERE id = $1;
