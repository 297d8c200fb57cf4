-- name: ListUsers :many
SELECT * FROM users ORDER BY email;

-- name: GetUserByID :one
SELECT * FROM users WHERE id = $1;

-- name: GetUserByEmail :one
SELECT * FROM users WHERE email = $1;

-- name: GetUserByIDForUpdate :one
SELECT * FROM users WHERE id = $1 FOR UPDATE;

-- name: InsertUser :one
INSERT INTO users (email, name, password_hash, disabled) VALUES ($1, $2, $3, $4) RETURNING *;

-- name: UpdateUser :one
UPDATE users SET email = $2, name = $3, password_hash = $4, disabled = $5 WHERE id = $1 RETURNING *;

-- name: DeleteUser :execrows
DELETE FROM users WHERE id = $1;

-- name: ListUsersPage :many
SELECT * FROM users
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;
