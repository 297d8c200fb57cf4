-- name: NotifyCatalog :exec
SELECT pg_notify('relay_catalog', sqlc.arg(payload)::text);
