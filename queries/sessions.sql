-- name: InsertSession :one
INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at)
VALUES ($1, $2, $3, $4)
RETURNING *;

-- GetSessionByHash finds a session that has not expired yet.
-- name: GetSessionByHash :one
SELECT * FROM sessions WHERE token_hash = $1 AND expires_at > now();

-- name: DeleteSession :one
DELETE FROM sessions WHERE token_hash = $1 RETURNING *;

-- name: DeleteSessionsByUser :execrows
DELETE FROM sessions WHERE user_id = $1;

-- name: DeleteExpiredSessions :execrows
DELETE FROM sessions WHERE expires_at <= now();
