package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

var policiesTable = &tableDef[dbsqlc.Policy, Policy, uuid.UUID, Page]{
	kind:    KindPolicies,
	key:     func(r Policy) uuid.UUID { return r.ID },
	row:     func(r dbsqlc.Policy) Policy { return Policy(r) },
	insert:  fromRow(insertPolicyParams, (*dbsqlc.Queries).InsertPolicy),
	get:     (*dbsqlc.Queries).GetPolicyByID,
	lock:    (*dbsqlc.Queries).GetPolicyByIDForUpdate,
	update:  fromRow(updatePolicyParams, (*dbsqlc.Queries).UpdatePolicy),
	remove:  (*dbsqlc.Queries).DeletePolicy,
	list:    paged((*dbsqlc.Queries).ListPoliciesPage),
	catalog: func(c *Catalog) *[]Policy { return &c.Policies },
	all:     (*dbsqlc.Queries).ListPolicies,
	parts:   []part[uuid.UUID]{policyModelsTable, policyHostKeysTable, policyModelRateLimitsTable},
}

// insertPolicyParams is what Create writes of a Policy: all but the columns the database makes.
func insertPolicyParams(r Policy) dbsqlc.InsertPolicyParams {
	return dbsqlc.InsertPolicyParams{
		Slug: r.Slug, Name: r.Name, AllModels: r.AllModels, AllHostKeys: r.AllHostKeys, KeyStrategy: r.KeyStrategy,
		RateLimitID: r.RateLimitID, MaxWaitMs: r.MaxWaitMs, Priority: r.Priority, MaxAttempts: r.MaxAttempts,
		LimiterFailureMode: r.LimiterFailureMode, CapturePayloads: r.CapturePayloads,
		CaptureMaxBytes: r.CaptureMaxBytes, RouteStrategy: r.RouteStrategy, Affinity: r.Affinity,
		BudgetFallback: r.BudgetFallback, TeamID: r.TeamID,
		DegradeAfterMs: r.DegradeAfterMs, DegradeBelowPriority: r.DegradeBelowPriority,
		ResponseCache: r.ResponseCache, Guardrails: r.Guardrails,
	}
}

// updatePolicyParams is what Update writes of a Policy: its key and mutable columns.
func updatePolicyParams(r Policy) dbsqlc.UpdatePolicyParams {
	return dbsqlc.UpdatePolicyParams{
		ID: r.ID, Slug: r.Slug, Name: r.Name, AllModels: r.AllModels, AllHostKeys: r.AllHostKeys,
		KeyStrategy: r.KeyStrategy, RateLimitID: r.RateLimitID, MaxWaitMs: r.MaxWaitMs, Priority: r.Priority,
		MaxAttempts: r.MaxAttempts, LimiterFailureMode: r.LimiterFailureMode, CapturePayloads: r.CapturePayloads,
		CaptureMaxBytes: r.CaptureMaxBytes, RouteStrategy: r.RouteStrategy, Affinity: r.Affinity,
		BudgetFallback: r.BudgetFallback, DegradeAfterMs: r.DegradeAfterMs,
		DegradeBelowPriority: r.DegradeBelowPriority,
		ResponseCache:        r.ResponseCache,
		MCPGrants:            mcpGrants(r.MCPGrants), MCPRequireApproval: r.MCPRequireApproval,
		Guardrails: r.Guardrails,
	}
}

// mcpGrants is never nil: the column is NOT NULL.
func mcpGrants(g []string) []string {
	if g == nil {
		return []string{}
	}
	return g
}

// Policies is the policies table; its grants are in PolicyModels,
// PolicyHostKeys and PolicyModelRateLimits. Deleting a policy deletes its
// grants and policy bindings and unsets it where relay keys and service
// accounts name it.
type Policies struct {
	MutableTable[Policy, uuid.UUID, Page]
}

// Policies returns the policies table; each write runs in its own transaction.
func (s *Store) Policies() Policies { return Policies{mutable(s.db(), policiesTable)} }

// Policies returns the policies table inside t.
func (t *Tx) Policies() Policies { return Policies{mutable(t.db(), policiesTable)} }

// GetBySlug returns the policy with slug.
func (t Policies) GetBySlug(ctx context.Context, slug string) (Policy, error) {
	return policiesTable.result(t.db.q.GetPolicyBySlug(ctx, slug))
}

// PoliciesPage is a Page of the policies a caller may read: every system
// policy and those of the teams in TeamIDs (of every team when AllTeams); of
// one team only when TeamID is set.
type PoliciesPage struct {
	After    uuid.UUID
	AllTeams bool
	TeamIDs  []uuid.UUID
	TeamID   *uuid.UUID
	Limit    int32
}

// ListVisible returns a page of the policies p reaches.
func (t Policies) ListVisible(ctx context.Context, p PoliciesPage) ([]Policy, error) {
	return policiesTable.listed(t.db.q.ListPoliciesVisiblePage(ctx, dbsqlc.ListPoliciesVisiblePageParams{
		After: p.After, AllTeams: p.AllTeams, TeamIds: ids(p.TeamIDs), TeamID: p.TeamID, Limit: p.Limit,
	}))
}
