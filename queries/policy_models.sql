-- name: ListPolicyModels :many
SELECT * FROM policy_models ORDER BY policy_id, model_id;

-- name: ListPolicyModelsByPolicy :many
SELECT * FROM policy_models WHERE policy_id = $1 ORDER BY model_id;

-- name: GetPolicyModelByPolicyAndModel :one
SELECT * FROM policy_models WHERE policy_id = $1 AND model_id = $2;

-- name: InsertPolicyModel :one
INSERT INTO policy_models (policy_id, model_id) VALUES ($1, $2) RETURNING *;

-- name: DeletePolicyModel :execrows
DELETE FROM policy_models WHERE policy_id = $1 AND model_id = $2;

-- name: ListPolicyModelsPage :many
SELECT * FROM policy_models
WHERE (policy_id, model_id) > (sqlc.arg(after_policy_id)::uuid, sqlc.arg(after_model_id)::uuid)
  AND (sqlc.narg(policy_id)::uuid IS NULL OR policy_id = sqlc.narg(policy_id))
ORDER BY policy_id, model_id
LIMIT sqlc.arg('limit')::int;
