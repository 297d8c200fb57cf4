package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// BudgetsPage is a Page of budgets, of one team, project and/or relay key when set.
type BudgetsPage struct {
	After      uuid.UUID
	TeamID     *uuid.UUID
	ProjectID  *uuid.UUID
	RelayKeyID *uuid.UUID
	Limit      int32
}

var budgetsTable = &tableDef[dbsqlc.Budget, Budget, uuid.UUID, BudgetsPage]{
	kind:   KindBudgets,
	key:    func(r Budget) uuid.UUID { return r.ID },
	row:    func(r dbsqlc.Budget) Budget { return Budget(r) },
	insert: fromRow(insertBudgetParams, (*dbsqlc.Queries).InsertBudget),
	get:    (*dbsqlc.Queries).GetBudgetByID,
	lock:   (*dbsqlc.Queries).GetBudgetByIDForUpdate,
	update: func(q *dbsqlc.Queries, ctx context.Context, r Budget) (dbsqlc.Budget, error) {
		return q.UpdateBudget(ctx, r.ID, r.Period, r.Amount)
	},
	remove: (*dbsqlc.Queries).DeleteBudget,
	list: func(q *dbsqlc.Queries, ctx context.Context, p BudgetsPage) ([]dbsqlc.Budget, error) {
		return q.ListBudgetsPage(ctx, dbsqlc.ListBudgetsPageParams(p))
	},
	catalog: func(c *Catalog) *[]Budget { return &c.Budgets },
	all:     (*dbsqlc.Queries).ListBudgets,
}

// insertBudgetParams is what Create writes of a Budget: all but the columns the database makes.
func insertBudgetParams(r Budget) dbsqlc.InsertBudgetParams {
	return dbsqlc.InsertBudgetParams{
		TeamID: r.TeamID, ProjectID: r.ProjectID, RelayKeyID: r.RelayKeyID, Period: r.Period, Amount: r.Amount,
	}
}

// Budgets is the budgets table: spend caps on exactly one of a team, a
// project or a relay key. A budget keeps its scope: Update changes only the
// period and amount.
type Budgets struct {
	MutableTable[Budget, uuid.UUID, BudgetsPage]
}

// Budgets returns the budgets table; each write runs in its own transaction.
func (s *Store) Budgets() Budgets { return Budgets{mutable(s.db(), budgetsTable)} }

// Budgets returns the budgets table inside t.
func (t *Tx) Budgets() Budgets { return Budgets{mutable(t.db(), budgetsTable)} }
