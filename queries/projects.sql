-- name: ListProjects :many
SELECT * FROM projects ORDER BY team_id, slug;

-- name: GetProjectByID :one
SELECT * FROM projects WHERE id = $1;

-- name: GetProjectBySlug :one
SELECT * FROM projects WHERE team_id = $1 AND slug = $2;

-- name: GetProjectByIDForUpdate :one
SELECT * FROM projects WHERE id = $1 FOR UPDATE;

-- name: InsertProject :one
INSERT INTO projects (team_id, slug, name) VALUES ($1, $2, $3) RETURNING *;

-- name: UpdateProject :one
UPDATE projects SET team_id = $2, slug = $3, name = $4 WHERE id = $1 RETURNING *;

-- name: DeleteProject :execrows
DELETE FROM projects WHERE id = $1;

-- name: ListProjectsPage :many
SELECT * FROM projects
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
