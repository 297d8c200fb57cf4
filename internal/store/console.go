package store

import (
	"context"
	"strings"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// This file holds the searches of the admin console (ui/, through
// controlapi): one keyset page of the rows whose names contain a term, with
// the same reach as ListVisible (queries/console_search.sql). Page.After and
// Page.Limit apply as in List.

// likePattern is a LIKE pattern matching term anywhere, with the term's own
// wildcards escaped (LIKE's default escape character is the backslash).
func likePattern(term string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(term) + "%"
}

// Search returns one page of the hosts whose slug, name or base URL contains term.
func (t Hosts) Search(ctx context.Context, p Page, term string) ([]Host, error) {
	rows, err := t.db.q.SearchHostsPage(ctx, p.After, likePattern(term), p.Limit)
	return hostsTable.listed(rows, err)
}

// Search returns one page of the models whose name or provider contains term.
func (t Models) Search(ctx context.Context, p Page, term string) ([]Model, error) {
	rows, err := t.db.q.SearchModelsPage(ctx, p.After, likePattern(term), p.Limit)
	return modelsTable.listed(rows, err)
}

// Search returns one page of the policies p reaches whose slug or name contains term.
func (t Policies) Search(ctx context.Context, p PoliciesPage, term string) ([]Policy, error) {
	rows, err := t.db.q.SearchPoliciesPage(ctx, dbsqlc.SearchPoliciesPageParams{
		After: p.After, Pattern: likePattern(term), AllTeams: p.AllTeams, TeamIds: ids(p.TeamIDs), Limit: p.Limit,
	})
	return policiesTable.listed(rows, err)
}

// SearchVisible returns one page of the teams in r whose slug or name contains term.
func (t Teams) SearchVisible(ctx context.Context, p Page, term string, r Reach) ([]Team, error) {
	rows, err := t.db.q.SearchTeamsVisiblePage(ctx, dbsqlc.SearchTeamsVisiblePageParams{
		After: p.After, Pattern: likePattern(term), AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return teamsTable.listed(rows, err)
}

// SearchVisible returns one page of the projects in r whose slug or name contains term.
func (t Projects) SearchVisible(ctx context.Context, p Page, term string, r Reach) ([]Project, error) {
	rows, err := t.db.q.SearchProjectsVisiblePage(ctx, dbsqlc.SearchProjectsVisiblePageParams{
		After: p.After, Pattern: likePattern(term), AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return projectsTable.listed(rows, err)
}

// SearchVisible returns one page of the service accounts in r whose slug or name contains term.
func (t ServiceAccounts) SearchVisible(ctx context.Context, p Page, term string, r Reach) ([]ServiceAccount, error) {
	rows, err := t.db.q.SearchServiceAccountsVisiblePage(ctx, dbsqlc.SearchServiceAccountsVisiblePageParams{
		After: p.After, Pattern: likePattern(term), AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return serviceAccountsTable.listed(rows, err)
}

// SearchVisible returns one page of the relay keys in r whose name or display prefix contains term.
func (t RelayKeys) SearchVisible(ctx context.Context, p Page, term string, r Reach) ([]RelayKey, error) {
	rows, err := t.db.q.SearchRelayKeysVisiblePage(ctx, dbsqlc.SearchRelayKeysVisiblePageParams{
		After: p.After, Pattern: likePattern(term), AllRows: r.All, TeamIds: ids(r.TeamIDs), ProjectIds: ids(r.ProjectIDs), Limit: p.Limit,
	})
	return relayKeysTable.listed(rows, err)
}

// SearchVisible returns one page of the users in r whose email or name contains term.
func (t Users) SearchVisible(ctx context.Context, p Page, term string, r Reach) ([]User, error) {
	rows, err := t.db.q.SearchUsersVisiblePage(ctx, dbsqlc.SearchUsersVisiblePageParams{
		After: p.After, Pattern: likePattern(term), AllRows: r.All, SelfID: r.SelfID, Limit: p.Limit,
	})
	return usersTable.listed(rows, err)
}
