-- name: InsertAuditLog :one
INSERT INTO audit_log (actor, action, kind, object_id, before, after, client_addr)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING *;

-- name: ListAuditLogPage :many
SELECT * FROM audit_log
WHERE id > sqlc.arg(after)::bigint
  AND (sqlc.narg(kind)::text IS NULL OR kind = sqlc.narg(kind))
  AND (sqlc.narg(object_id)::text IS NULL OR object_id = sqlc.narg(object_id))
  AND (sqlc.narg(actor)::text IS NULL OR actor = sqlc.narg(actor))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
