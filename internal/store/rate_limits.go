package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

var rateLimitsTable = &tableDef[dbsqlc.RateLimit, RateLimit, uuid.UUID, Page]{
	kind: KindRateLimits,
	key:  func(r RateLimit) uuid.UUID { return r.ID },
	row:  func(r dbsqlc.RateLimit) RateLimit { return RateLimit(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r RateLimit) (dbsqlc.RateLimit, error) {
		return q.InsertRateLimit(ctx, r.Slug, r.Name)
	},
	get:  (*dbsqlc.Queries).GetRateLimitByID,
	lock: (*dbsqlc.Queries).GetRateLimitByIDForUpdate,
	update: func(q *dbsqlc.Queries, ctx context.Context, r RateLimit) (dbsqlc.RateLimit, error) {
		return q.UpdateRateLimit(ctx, r.ID, r.Slug, r.Name)
	},
	remove:  (*dbsqlc.Queries).DeleteRateLimit,
	list:    paged((*dbsqlc.Queries).ListRateLimitsPage),
	catalog: func(c *Catalog) *[]RateLimit { return &c.RateLimits },
	all:     (*dbsqlc.Queries).ListRateLimits,
	parts:   []part[uuid.UUID]{rateLimitRulesTable},
}

// RateLimits is the rate_limits table; the rules are in RateLimitRules.
// Deleting a rate limit deletes its rules and unsets it where policies and
// host keys name it.
type RateLimits struct {
	MutableTable[RateLimit, uuid.UUID, Page]
}

// RateLimits returns the rate limits table; each write runs in its own transaction.
func (s *Store) RateLimits() RateLimits { return RateLimits{mutable(s.db(), rateLimitsTable)} }

// RateLimits returns the rate limits table inside t.
func (t *Tx) RateLimits() RateLimits { return RateLimits{mutable(t.db(), rateLimitsTable)} }

// GetBySlug returns the rate limit with slug.
func (t RateLimits) GetBySlug(ctx context.Context, slug string) (RateLimit, error) {
	return rateLimitsTable.result(t.db.q.GetRateLimitBySlug(ctx, slug))
}
