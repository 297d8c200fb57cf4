-- name: ListInferenceTokens :many
SELECT * FROM inference_tokens WHERE expires_at > now() - interval '1 day' ORDER BY id;

-- name: GetInferenceTokenByID :one
SELECT * FROM inference_tokens WHERE id = $1;

-- name: GetInferenceTokenByHash :one
SELECT * FROM inference_tokens WHERE token_hash = $1;

-- name: GetInferenceTokenByIDForUpdate :one
SELECT * FROM inference_tokens WHERE id = $1 FOR UPDATE;

-- name: InsertInferenceToken :one
INSERT INTO inference_tokens (token_hash, user_id, project_id, expires_at)
VALUES ($1, $2, $3, $4)
RETURNING *;

-- Only the expiry of an inference token changes (to extend or shorten it).
-- name: UpdateInferenceToken :one
UPDATE inference_tokens SET expires_at = $2 WHERE id = $1 RETURNING *;

-- RevokeInferenceToken keeps the first revocation time when called twice.
-- name: RevokeInferenceToken :one
UPDATE inference_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *;

-- name: DeleteInferenceToken :execrows
DELETE FROM inference_tokens WHERE id = $1;

-- DeleteExpiredInferenceTokens removes tokens that expired before the cutoff.
-- name: DeleteExpiredInferenceTokens :execrows
DELETE FROM inference_tokens WHERE expires_at < sqlc.arg(cutoff)::timestamptz;

-- name: ListInferenceTokensPage :many
SELECT * FROM inference_tokens
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(user_id)::uuid IS NULL OR user_id = sqlc.narg(user_id))
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
