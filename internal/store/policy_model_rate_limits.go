package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// PolicyModelRateLimitsPage is a page of per-model rate limits in (policy,
// model) order after (AfterPolicyID, AfterModelID), of one policy when
// PolicyID is set.
type PolicyModelRateLimitsPage struct {
	AfterPolicyID uuid.UUID
	AfterModelID  uuid.UUID
	PolicyID      *uuid.UUID
	Limit         int32
}

var policyModelRateLimitsTable = &tableDef[dbsqlc.PolicyModelRateLimit, PolicyModelRateLimit, PolicyModelKey, PolicyModelRateLimitsPage]{
	kind: KindPolicyModelRateLimits,
	key: func(r PolicyModelRateLimit) PolicyModelKey {
		return PolicyModelKey{r.PolicyID, r.ModelID}
	},
	row: func(r dbsqlc.PolicyModelRateLimit) PolicyModelRateLimit { return PolicyModelRateLimit(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r PolicyModelRateLimit) (dbsqlc.PolicyModelRateLimit, error) {
		return q.InsertPolicyModelRateLimit(ctx, r.PolicyID, r.ModelID, r.RateLimitID, r.Position)
	},
	get: func(q *dbsqlc.Queries, ctx context.Context, k PolicyModelKey) (dbsqlc.PolicyModelRateLimit, error) {
		return q.GetPolicyModelRateLimitByPolicyAndModel(ctx, k.PolicyID, k.ModelID)
	},
	lock: func(q *dbsqlc.Queries, ctx context.Context, k PolicyModelKey) (dbsqlc.PolicyModelRateLimit, error) {
		return q.GetPolicyModelRateLimitByPolicyAndModelForUpdate(ctx, k.PolicyID, k.ModelID)
	},
	update: func(q *dbsqlc.Queries, ctx context.Context, r PolicyModelRateLimit) (dbsqlc.PolicyModelRateLimit, error) {
		return q.UpdatePolicyModelRateLimit(ctx, r.PolicyID, r.ModelID, r.RateLimitID, r.Position)
	},
	remove: func(q *dbsqlc.Queries, ctx context.Context, k PolicyModelKey) (int64, error) {
		return q.DeletePolicyModelRateLimit(ctx, k.PolicyID, k.ModelID)
	},
	list: func(q *dbsqlc.Queries, ctx context.Context, p PolicyModelRateLimitsPage) ([]dbsqlc.PolicyModelRateLimit, error) {
		return q.ListPolicyModelRateLimitsPage(ctx, p.AfterPolicyID, p.AfterModelID, p.PolicyID, p.Limit)
	},
	catalog: func(c *Catalog) *[]PolicyModelRateLimit { return &c.PolicyModelRateLimits },
	all:     (*dbsqlc.Queries).ListPolicyModelRateLimits,
	of:      (*dbsqlc.Queries).ListPolicyModelRateLimitsByPolicy,
}

// PolicyModelRateLimits is the policy_model_rate_limits table: the rate
// limit a policy applies to one model, the first matching position winning.
type PolicyModelRateLimits struct {
	MutableTable[PolicyModelRateLimit, PolicyModelKey, PolicyModelRateLimitsPage]
}

// PolicyModelRateLimits returns the per-model rate limits table; each write
// runs in its own transaction.
func (s *Store) PolicyModelRateLimits() PolicyModelRateLimits {
	return PolicyModelRateLimits{mutable(s.db(), policyModelRateLimitsTable)}
}

// PolicyModelRateLimits returns the per-model rate limits table inside t.
func (t *Tx) PolicyModelRateLimits() PolicyModelRateLimits {
	return PolicyModelRateLimits{mutable(t.db(), policyModelRateLimitsTable)}
}

// ListByPolicy returns the per-model rate limits of a policy in order.
func (t PolicyModelRateLimits) ListByPolicy(ctx context.Context, policyID uuid.UUID) ([]PolicyModelRateLimit, error) {
	return policyModelRateLimitsTable.results(t.db.q.ListPolicyModelRateLimitsByPolicy(ctx, policyID))
}
