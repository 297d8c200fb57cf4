-- name: ListBudgets :many
SELECT * FROM budgets ORDER BY id;

-- name: GetBudgetByID :one
SELECT * FROM budgets WHERE id = $1;
