-- name: ListBudgets :many
SELECT * FROM budgets ORDER BY id;

-- name: GetBudgetByID :one
SELECT * FROM budgets WHERE id = $1;

-- name: GetBudgetByIDForUpdate :one
SELECT * FROM budgets WHERE id = $1 FOR UPDATE;

-- name: InsertBudget :one
INSERT INTO budgets (team_id, project_id, relay_key_id, period, amount)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- A budget keeps its scope (team, project or relay key).
-- name: UpdateBudget :one
UPDATE budgets SET period = $2, amount = $3 WHERE id = $1 RETURNING *;

-- name: DeleteBudget :execrows
DELETE FROM budgets WHERE id = $1;

-- name: ListBudgetsPage :many
SELECT * FROM budgets
WHERE id > sqlc.arg(after)::uuid
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.narg(relay_key_id)::uuid IS NULL OR relay_key_id = sqlc.narg(relay_key_id))
ORDER BY id
LIMIT sqlc.arg('limit')::int;
