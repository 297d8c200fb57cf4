-- name: ListRelayKeys :many
SELECT * FROM relay_keys ORDER BY id;

-- name: GetRelayKeyByID :one
SELECT * FROM relay_keys WHERE id = $1;

-- name: GetRelayKeyByHash :one
SELECT * FROM relay_keys WHERE key_hash = $1;

-- name: GetRelayKeyByIDForUpdate :one
SELECT * FROM relay_keys WHERE id = $1 FOR UPDATE;

-- name: InsertRelayKey :one
INSERT INTO relay_keys (
    key_hash, display_prefix, name, project_id, service_account_id, user_id,
    policy_id, priority, expires_at
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9
)
RETURNING *;

-- The hash, prefix and owner of a relay key never change; revoke it and
-- create another instead.
-- name: UpdateRelayKey :one
UPDATE relay_keys
SET name = $2, policy_id = $3, priority = $4, expires_at = $5
WHERE id = $1
RETURNING *;

-- RevokeRelayKey keeps the first revocation time when called twice.
-- name: RevokeRelayKey :one
UPDATE relay_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *;

-- name: DeleteRelayKey :execrows
DELETE FROM relay_keys WHERE id = $1;

-- name: ListRelayKeysPage :many
SELECT * FROM relay_keys
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.narg(service_account_id)::uuid IS NULL OR service_account_id = sqlc.narg(service_account_id))
  AND (sqlc.narg(user_id)::uuid IS NULL OR user_id = sqlc.narg(user_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
