package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// This file holds the reads the control API adds to the tables: sign-in by
// email, the role grants of a user, and lists limited to what a caller may
// see (ListVisible). The filters of each Page apply as in List, and Reach
// narrows further.

// Reach is how far a caller's reading reaches, for the ListVisible methods:
// everything (All), or the teams and projects listed — a project is in reach
// when it is listed itself or its team is. SelfID is the caller's user, for
// the kinds a user always sees of its own (its user row, its role bindings,
// its inference tokens); uuid.Nil for none.
type Reach struct {
	All        bool
	SelfID     uuid.UUID
	TeamIDs    []uuid.UUID
	ProjectIDs []uuid.UUID
}

// ids never hands pgx a nil slice: NULL and '{}' behave alike in ANY(), but
// an explicit empty array keeps the plans simple to read.
func ids(v []uuid.UUID) []uuid.UUID {
	if v == nil {
		return []uuid.UUID{}
	}
	return v
}

// RoleGrant is a role binding that applies to a user, with the team of a
// project-scoped one (ProjectTeamID) so a caller can place it without another read.
type RoleGrant struct {
	ID            uuid.UUID
	Role          string
	TeamID        *uuid.UUID
	ProjectID     *uuid.UUID
	ProjectTeamID *uuid.UUID
}

// GetByEmailFold returns the user with email, ignoring case (sign-in).
func (t Users) GetByEmailFold(ctx context.Context, email string) (User, error) {
	return usersTable.result(t.db.q.GetUserByEmailFold(ctx, email))
}

// ListVisible returns one page of the users in r: all of them, or only r.SelfID.
// email, when set, keeps only the user with that exact email.
func (t Users) ListVisible(ctx context.Context, p Page, email *string, r Reach) ([]User, error) {
	rows, err := t.db.q.ListUsersVisiblePage(ctx, dbsqlc.ListUsersVisiblePageParams{
		After: p.After, Email: email, AllRows: r.All, SelfID: r.SelfID, Limit: p.Limit,
	})
	return usersTable.listed(rows, err)
}

// ListGrantsByUser returns every role binding that applies to a user: its own
// and those of its groups.
func (t RoleBindings) ListGrantsByUser(ctx context.Context, userID uuid.UUID) ([]RoleGrant, error) {
	rows, err := t.db.q.ListRoleGrantsByUser(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("list role grants of user %s: %w", userID, mapErr(err))
	}
	return each(rows, func(r dbsqlc.ListRoleGrantsByUserRow) RoleGrant { return RoleGrant(r) }), nil
}

// ListVisible returns one page of the role bindings in r: the caller's own
// (direct and through its groups) and those scoped to teams and projects in
// reach; system-wide ones only when r.All.
func (t RoleBindings) ListVisible(ctx context.Context, p RoleBindingsPage, r Reach) ([]RoleBinding, error) {
	rows, err := t.db.q.ListRoleBindingsVisiblePage(ctx, dbsqlc.ListRoleBindingsVisiblePageParams{
		After: p.After, UserID: p.UserID, GroupID: p.GroupID, TeamID: p.TeamID, ProjectID: p.ProjectID,
		AllRows: r.All, SelfID: r.SelfID, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return roleBindingsTable.listed(rows, err)
}

// ListByRateLimits returns the rules of several rate limits, grouped by rate limit.
func (t RateLimitRules) ListByRateLimits(ctx context.Context, rateLimitIDs []uuid.UUID) ([]RateLimitRule, error) {
	rows, err := t.db.q.ListRateLimitRulesByRateLimits(ctx, ids(rateLimitIDs))
	return rateLimitRulesTable.listed(rows, err)
}

// ListVisible returns one page of the teams in r, a team being in reach also
// when one of its projects is.
func (t Teams) ListVisible(ctx context.Context, p Page, r Reach) ([]Team, error) {
	rows, err := t.db.q.ListTeamsVisiblePage(ctx, dbsqlc.ListTeamsVisiblePageParams{
		After: p.After, AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return teamsTable.listed(rows, err)
}

// ListVisible returns one page of the projects in r.
func (t Projects) ListVisible(ctx context.Context, p ProjectsPage, r Reach) ([]Project, error) {
	rows, err := t.db.q.ListProjectsVisiblePage(ctx, dbsqlc.ListProjectsVisiblePageParams{
		After: p.After, TeamID: p.TeamID, AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return projectsTable.listed(rows, err)
}

// ListVisible returns one page of the service accounts of projects in r.
func (t ServiceAccounts) ListVisible(ctx context.Context, p ServiceAccountsPage, r Reach) ([]ServiceAccount, error) {
	rows, err := t.db.q.ListServiceAccountsVisiblePage(ctx, dbsqlc.ListServiceAccountsVisiblePageParams{
		After: p.After, ProjectID: p.ProjectID, AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return serviceAccountsTable.listed(rows, err)
}

// ListVisible returns one page of the relay keys of projects in r.
func (t RelayKeys) ListVisible(ctx context.Context, p RelayKeysPage, r Reach) ([]RelayKey, error) {
	rows, err := t.db.q.ListRelayKeysVisiblePage(ctx, dbsqlc.ListRelayKeysVisiblePageParams{
		After: p.After, ProjectID: p.ProjectID, ServiceAccountID: p.ServiceAccountID, UserID: p.UserID,
		AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return relayKeysTable.listed(rows, err)
}

// ListVisible returns one page of the policy bindings of projects in r.
func (t PolicyBindings) ListVisible(ctx context.Context, p PolicyBindingsPage, r Reach) ([]PolicyBinding, error) {
	rows, err := t.db.q.ListPolicyBindingsVisiblePage(ctx, dbsqlc.ListPolicyBindingsVisiblePageParams{
		After: p.After, ProjectID: p.ProjectID, PolicyID: p.PolicyID,
		AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return policyBindingsTable.listed(rows, err)
}

// ListVisible returns one page of the budgets in r: team budgets of teams in
// reach, project and relay-key budgets of projects in reach.
func (t Budgets) ListVisible(ctx context.Context, p BudgetsPage, r Reach) ([]Budget, error) {
	rows, err := t.db.q.ListBudgetsVisiblePage(ctx, dbsqlc.ListBudgetsVisiblePageParams{
		After: p.After, TeamID: p.TeamID, ProjectID: p.ProjectID, RelayKeyID: p.RelayKeyID,
		AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return budgetsTable.listed(rows, err)
}

// ListVisible returns one page of the inference tokens in r: r.SelfID's own
// and those of projects in reach.
func (t InferenceTokens) ListVisible(ctx context.Context, p InferenceTokensPage, r Reach) ([]InferenceToken, error) {
	rows, err := t.db.q.ListInferenceTokensVisiblePage(ctx, dbsqlc.ListInferenceTokensVisiblePageParams{
		After: p.After, UserID: p.UserID, ProjectID: p.ProjectID,
		AllRows: r.All, SelfID: r.SelfID, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return inferenceTokensTable.listed(rows, err)
}
