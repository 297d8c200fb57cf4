-- name: ListTeams :many
SELECT * FROM teams ORDER BY slug;

-- name: GetTeamByID :one
SELECT * FROM teams WHERE id = $1;
