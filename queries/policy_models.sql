-- name: ListPolicyModels :many
SELECT * FROM policy_models ORDER BY policy_id, model_id;

-- name: ListPolicyModelsByPolicy :many
SELECT * FROM policy_models WHERE policy_id = $1 ORDER BY model_id;
