-- name: ListProjects :many
SELECT * FROM projects ORDER BY team_id, slug;

-- name: GetProjectByID :one
SELECT * FROM projects WHERE id = $1;
