-- name: GetPolicyTeamShareByPolicyAndTeam :one
SELECT * FROM policy_team_shares WHERE policy_id = $1 AND team_id = $2;

-- name: InsertPolicyTeamShare :one
INSERT INTO policy_team_shares (policy_id, team_id) VALUES ($1, $2) RETURNING *;

-- name: DeletePolicyTeamShare :execrows
DELETE FROM policy_team_shares WHERE policy_id = $1 AND team_id = $2;

-- name: ListPolicyTeamSharesPage :many
SELECT * FROM policy_team_shares
WHERE (policy_id, team_id) > (sqlc.arg(after_policy_id)::uuid, sqlc.arg(after_team_id)::uuid)
  AND (sqlc.narg(policy_id)::uuid IS NULL OR policy_id = sqlc.narg(policy_id))
ORDER BY policy_id, team_id
LIMIT sqlc.arg('limit')::int;
