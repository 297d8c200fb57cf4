-- name: ListPolicyHostKeys :many
SELECT * FROM policy_host_keys ORDER BY policy_id, host_key_id;

-- name: ListPolicyHostKeysByPolicy :many
SELECT * FROM policy_host_keys WHERE policy_id = $1 ORDER BY host_key_id;
