-- name: ListServiceAccounts :many
SELECT * FROM service_accounts ORDER BY project_id, slug;

-- name: GetServiceAccountByID :one
SELECT * FROM service_accounts WHERE id = $1;

-- name: GetServiceAccountBySlug :one
SELECT * FROM service_accounts WHERE project_id = $1 AND slug = $2;

-- name: GetServiceAccountByIDForUpdate :one
SELECT * FROM service_accounts WHERE id = $1 FOR UPDATE;

-- name: InsertServiceAccount :one
INSERT INTO service_accounts (project_id, slug, name, policy_id) VALUES ($1, $2, $3, $4) RETURNING *;

-- A service account stays in its project: its relay keys are attributed there.
-- name: UpdateServiceAccount :one
UPDATE service_accounts SET slug = $2, name = $3, policy_id = $4 WHERE id = $1 RETURNING *;

-- name: DeleteServiceAccount :execrows
DELETE FROM service_accounts WHERE id = $1;

-- name: ListServiceAccountsPage :many
SELECT * FROM service_accounts
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
