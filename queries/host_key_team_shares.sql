-- name: GetHostKeyTeamShareByHostKeyAndTeam :one
SELECT * FROM host_key_team_shares WHERE host_key_id = $1 AND team_id = $2;

-- name: InsertHostKeyTeamShare :one
INSERT INTO host_key_team_shares (host_key_id, team_id) VALUES ($1, $2) RETURNING *;

-- name: DeleteHostKeyTeamShare :execrows
DELETE FROM host_key_team_shares WHERE host_key_id = $1 AND team_id = $2;

-- ListHostKeyTeamSharesPage pages in (host key, team) order, of one host key
-- and/or one team when given.
-- name: ListHostKeyTeamSharesPage :many
SELECT * FROM host_key_team_shares
WHERE (host_key_id, team_id) > (sqlc.arg(after_host_key_id)::uuid, sqlc.arg(after_team_id)::uuid)
  AND (sqlc.narg(host_key_id)::uuid IS NULL OR host_key_id = sqlc.narg(host_key_id))
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
ORDER BY host_key_id, team_id
LIMIT sqlc.arg('limit')::int;
