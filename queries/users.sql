-- name: ListUsers :many
SELECT * FROM users ORDER BY email;

-- name: GetUserByID :one
SELECT * FROM users WHERE id = $1;
