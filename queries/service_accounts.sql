-- name: ListServiceAccounts :many
SELECT * FROM service_accounts ORDER BY project_id, slug;

-- name: GetServiceAccountByID :one
SELECT * FROM service_accounts WHERE id = $1;
