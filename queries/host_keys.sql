-- name: ListHostKeys :many
SELECT * FROM host_keys ORDER BY host_id, position, slug;

-- name: GetHostKeyByID :one
SELECT * FROM host_keys WHERE id = $1;

-- name: GetHostKeyBySlug :one
SELECT * FROM host_keys WHERE host_id = $1 AND slug = $2;

-- name: GetHostKeyByIDForUpdate :one
SELECT * FROM host_keys WHERE id = $1 FOR UPDATE;

-- name: InsertHostKey :one
INSERT INTO host_keys (host_id, slug, secret_ref, secret_ciphertext, tier_rate_limit_id, position, enabled)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING *;

-- UpdateHostKey leaves the secret alone (see UpdateHostKeySecret); a host key
-- stays on its host.
-- name: UpdateHostKey :one
UPDATE host_keys
SET slug = $2, tier_rate_limit_id = $3, position = $4, enabled = $5
WHERE id = $1
RETURNING *;

-- UpdateHostKeySecret sets a new secret and bumps secret_version, so breakers
-- and caches keyed on the version forget the old one.
-- name: UpdateHostKeySecret :one
UPDATE host_keys
SET secret_ref = $2, secret_ciphertext = $3, secret_version = secret_version + 1
WHERE id = $1
RETURNING *;

-- name: DeleteHostKey :execrows
DELETE FROM host_keys WHERE id = $1;

-- name: ListHostKeysPage :many
SELECT * FROM host_keys
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(host_id)::uuid IS NULL OR host_id = sqlc.narg(host_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
