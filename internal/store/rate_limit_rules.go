package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// RateLimitRulesPage is a Page of rules, of one rate limit when RateLimitID is set.
type RateLimitRulesPage struct {
	After       uuid.UUID
	RateLimitID *uuid.UUID
	Limit       int32
}

var rateLimitRulesTable = &tableDef[dbsqlc.RateLimitRule, RateLimitRule, uuid.UUID, RateLimitRulesPage]{
	kind:   KindRateLimitRules,
	key:    func(r RateLimitRule) uuid.UUID { return r.ID },
	row:    func(r dbsqlc.RateLimitRule) RateLimitRule { return RateLimitRule(r) },
	insert: fromRow(insertRateLimitRuleParams, (*dbsqlc.Queries).InsertRateLimitRule),
	get:    (*dbsqlc.Queries).GetRateLimitRuleByID,
	lock:   (*dbsqlc.Queries).GetRateLimitRuleByIDForUpdate,
	update: fromRow(updateRateLimitRuleParams, (*dbsqlc.Queries).UpdateRateLimitRule),
	remove: (*dbsqlc.Queries).DeleteRateLimitRule,
	list: func(q *dbsqlc.Queries, ctx context.Context, p RateLimitRulesPage) ([]dbsqlc.RateLimitRule, error) {
		return q.ListRateLimitRulesPage(ctx, p.After, p.RateLimitID, p.Limit)
	},
	catalog: func(c *Catalog) *[]RateLimitRule { return &c.RateLimitRules },
	all:     (*dbsqlc.Queries).ListRateLimitRules,
	of:      (*dbsqlc.Queries).ListRateLimitRulesByRateLimit,
}

// insertRateLimitRuleParams is what Create writes of a RateLimitRule: all but the columns the database makes.
func insertRateLimitRuleParams(r RateLimitRule) dbsqlc.InsertRateLimitRuleParams {
	return dbsqlc.InsertRateLimitRuleParams{
		RateLimitID: r.RateLimitID, Meter: r.Meter, Amount: r.Amount, WindowSeconds: r.WindowSeconds,
		PerPrincipal: r.PerPrincipal,
	}
}

// updateRateLimitRuleParams is what Update writes of a RateLimitRule: its key and mutable columns.
func updateRateLimitRuleParams(r RateLimitRule) dbsqlc.UpdateRateLimitRuleParams {
	return dbsqlc.UpdateRateLimitRuleParams{
		ID: r.ID, Meter: r.Meter, Amount: r.Amount, WindowSeconds: r.WindowSeconds, PerPrincipal: r.PerPrincipal,
	}
}

// RateLimitRules is the rate_limit_rules table. A rule stays in its rate
// limit (Update leaves RateLimitID alone).
type RateLimitRules struct {
	MutableTable[RateLimitRule, uuid.UUID, RateLimitRulesPage]
}

// RateLimitRules returns the rules table; each write runs in its own transaction.
func (s *Store) RateLimitRules() RateLimitRules {
	return RateLimitRules{mutable(s.db(), rateLimitRulesTable)}
}

// RateLimitRules returns the rules table inside t.
func (t *Tx) RateLimitRules() RateLimitRules {
	return RateLimitRules{mutable(t.db(), rateLimitRulesTable)}
}

// ListByRateLimit returns the rules of a rate limit.
func (t RateLimitRules) ListByRateLimit(ctx context.Context, rateLimitID uuid.UUID) ([]RateLimitRule, error) {
	return rateLimitRulesTable.results(t.db.q.ListRateLimitRulesByRateLimit(ctx, rateLimitID))
}
