-- name: ListPolicies :many
SELECT * FROM policies ORDER BY slug;

-- name: GetPolicyByID :one
SELECT * FROM policies WHERE id = $1;
