-- name: ListInferenceTokens :many
SELECT * FROM inference_tokens WHERE expires_at > now() - interval '1 day' ORDER BY id;

-- name: GetInferenceTokenByID :one
SELECT * FROM inference_tokens WHERE id = $1;
