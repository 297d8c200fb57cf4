-- name: ListTeams :many
SELECT * FROM teams ORDER BY slug;

-- name: GetTeamByID :one
SELECT * FROM teams WHERE id = $1;

-- name: GetTeamBySlug :one
SELECT * FROM teams WHERE slug = $1;

-- name: GetTeamByIDForUpdate :one
SELECT * FROM teams WHERE id = $1 FOR UPDATE;

-- name: InsertTeam :one
INSERT INTO teams (slug, name) VALUES ($1, $2) RETURNING *;

-- name: UpdateTeam :one
UPDATE teams SET slug = $2, name = $3 WHERE id = $1 RETURNING *;

-- name: DeleteTeam :execrows
DELETE FROM teams WHERE id = $1;

-- name: ListTeamsPage :many
SELECT * FROM teams
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;
