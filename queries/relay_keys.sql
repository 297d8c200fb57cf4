-- name: ListRelayKeys :many
SELECT * FROM relay_keys ORDER BY id;

-- name: GetRelayKeyByID :one
SELECT * FROM relay_keys WHERE id = $1;

-- name: GetRelayKeyByHash :one
SELECT * FROM relay_keys WHERE key_hash = $1;
