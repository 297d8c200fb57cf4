package configfile

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/client"
)

// Lookups by natural key for the CLI's other subcommands. The API has no
// lookup by slug (only users filter by email), so these list and filter; a
// list is at most a few pages for the kinds they read.

// FindProject returns the project "team/project".
func FindProject(ctx context.Context, c *client.ClientWithResponses, teamProject string) (client.Project, error) {
	team, slug, ok := projectRef(teamProject)
	if !ok {
		return client.Project{}, fmt.Errorf("project: want team/project, got %q", teamProject)
	}
	teams, err := listAll(func(cur *string) ([]client.Team, *string, error) {
		r, err := c.ListTeamsWithResponse(ctx, &client.ListTeamsParams{Limit: limit(), Cursor: cur})
		if err != nil {
			return nil, nil, err
		}
		l, err := result(r.JSON200, r.StatusCode(), r.Body)
		return l.Items, l.NextCursor, err
	})
	if err != nil {
		return client.Project{}, fmt.Errorf("list teams: %w", err)
	}
	var teamID uuid.UUID
	for _, t := range teams {
		if t.Slug == team {
			teamID = t.ID
		}
	}
	if teamID == uuid.Nil {
		return client.Project{}, fmt.Errorf("no team %q", team)
	}
	projects, err := listAll(func(cur *string) ([]client.Project, *string, error) {
		r, err := c.ListProjectsWithResponse(ctx, &client.ListProjectsParams{Limit: limit(), Cursor: cur, TeamID: &teamID})
		if err != nil {
			return nil, nil, err
		}
		l, err := result(r.JSON200, r.StatusCode(), r.Body)
		return l.Items, l.NextCursor, err
	})
	if err != nil {
		return client.Project{}, fmt.Errorf("list projects: %w", err)
	}
	for _, p := range projects {
		if p.Slug == slug {
			return p, nil
		}
	}
	return client.Project{}, fmt.Errorf("no project %q in team %q", slug, team)
}

// FindServiceAccount returns the service account slug of a project.
func FindServiceAccount(ctx context.Context, c *client.ClientWithResponses, projectID uuid.UUID, slug string) (client.ServiceAccount, error) {
	all, err := listAll(func(cur *string) ([]client.ServiceAccount, *string, error) {
		r, err := c.ListServiceAccountsWithResponse(ctx, &client.ListServiceAccountsParams{Limit: limit(), Cursor: cur, ProjectID: &projectID})
		if err != nil {
			return nil, nil, err
		}
		l, err := result(r.JSON200, r.StatusCode(), r.Body)
		return l.Items, l.NextCursor, err
	})
	if err != nil {
		return client.ServiceAccount{}, fmt.Errorf("list service accounts: %w", err)
	}
	for _, a := range all {
		if a.Slug == slug {
			return a, nil
		}
	}
	return client.ServiceAccount{}, fmt.Errorf("no service account %q in the project", slug)
}

// FindUser returns the user with email (compared without case, as Relay's
// unique index does).
func FindUser(ctx context.Context, c *client.ClientWithResponses, email string) (client.User, error) {
	// The email filter matches exactly; try it first, then fall back to
	// listing for a different case.
	for _, filter := range []*string{&email, nil} {
		all, err := listAll(func(cur *string) ([]client.User, *string, error) {
			r, err := c.ListUsersWithResponse(ctx, &client.ListUsersParams{Limit: limit(), Cursor: cur, Email: filter})
			if err != nil {
				return nil, nil, err
			}
			l, err := result(r.JSON200, r.StatusCode(), r.Body)
			return l.Items, l.NextCursor, err
		})
		if err != nil {
			return client.User{}, fmt.Errorf("list users: %w", err)
		}
		for _, u := range all {
			if lowerEmail(string(u.Email)) == lowerEmail(email) {
				return u, nil
			}
		}
	}
	return client.User{}, fmt.Errorf("no user %q", email)
}

// FindPolicy returns the policy slug.
func FindPolicy(ctx context.Context, c *client.ClientWithResponses, slug string) (client.Policy, error) {
	all, err := listAll(func(cur *string) ([]client.Policy, *string, error) {
		r, err := c.ListPoliciesWithResponse(ctx, &client.ListPoliciesParams{Limit: limit(), Cursor: cur})
		if err != nil {
			return nil, nil, err
		}
		l, err := result(r.JSON200, r.StatusCode(), r.Body)
		return l.Items, l.NextCursor, err
	})
	if err != nil {
		return client.Policy{}, fmt.Errorf("list policies: %w", err)
	}
	for _, p := range all {
		if p.Slug == slug {
			return p, nil
		}
	}
	return client.Policy{}, fmt.Errorf("no policy %q", slug)
}

// Expect returns *v when the answer had the expected status (v is the
// response's typed field of that status, nil otherwise), else the API's
// error: for the CLI's direct calls on the generated client.
func Expect[T any](v *T, status int, body []byte) (T, error) { return result(v, status, body) }
