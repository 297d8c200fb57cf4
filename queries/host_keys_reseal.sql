-- name: ResealHostKey :one
-- Replaces the ciphertext of a sealed host key with the same secret sealed
-- under another master key: the secret is unchanged, so secret_version is too.
UPDATE host_keys SET secret_ciphertext = sqlc.arg(secret_ciphertext)::bytea
WHERE id = sqlc.arg(id) AND secret_ciphertext IS NOT NULL
RETURNING *;
