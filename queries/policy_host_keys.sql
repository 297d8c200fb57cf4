-- name: ListPolicyHostKeys :many
SELECT * FROM policy_host_keys ORDER BY policy_id, host_key_id;

-- name: ListPolicyHostKeysByPolicy :many
SELECT * FROM policy_host_keys WHERE policy_id = $1 ORDER BY host_key_id;

-- name: GetPolicyHostKeyByPolicyAndHostKey :one
SELECT * FROM policy_host_keys WHERE policy_id = $1 AND host_key_id = $2;

-- name: InsertPolicyHostKey :one
INSERT INTO policy_host_keys (policy_id, host_key_id) VALUES ($1, $2) RETURNING *;

-- name: DeletePolicyHostKey :execrows
DELETE FROM policy_host_keys WHERE policy_id = $1 AND host_key_id = $2;

-- name: ListPolicyHostKeysPage :many
SELECT * FROM policy_host_keys
WHERE (policy_id, host_key_id) > (sqlc.arg(after_policy_id)::uuid, sqlc.arg(after_host_key_id)::uuid)
  AND (sqlc.narg(policy_id)::uuid IS NULL OR policy_id = sqlc.narg(policy_id))
ORDER BY policy_id, host_key_id
LIMIT sqlc.arg('limit')::int;
