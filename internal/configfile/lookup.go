package configfile

import (
	"context"
	"fmt"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/client"
)

// Lookups by natural key for the CLI's other subcommands. The API has no
// lookup by slug (only users filter by email), so these list and filter; a
// list is at most a few pages for the kinds they read.

// FindProject returns the project "team/project".
func FindProject(ctx context.Context, c *client.ClientWithResponses, teamProject string) (models.Project, error) {
	team, slug, ok := projectRef(teamProject)
	if !ok {
		return models.Project{}, fmt.Errorf("project: want team/project, got %q", teamProject)
	}
	teams, err := listAll(func(cur *string) ([]models.Team, *string, error) {
		r, err := c.ListTeamsWithResponse(ctx, &models.ListTeamsParams{Limit: limit(), Cursor: cur})
		if err != nil {
			return nil, nil, err
		}
		l, err := result(r.JSON200, r.StatusCode(), r.Body)
		return l.Items, l.NextCursor, err
	})
	if err != nil {
		return models.Project{}, fmt.Errorf("list teams: %w", err)
	}
	var teamID uuid.UUID
	for _, t := range teams {
		if t.Slug == team {
			teamID = t.ID
		}
	}
	if teamID == uuid.Nil {
		return models.Project{}, fmt.Errorf("no team %q", team)
	}
	projects, err := listAll(func(cur *string) ([]models.Project, *string, error) {
		r, err := c.ListProjectsWithResponse(ctx, &models.ListProjectsParams{Limit: limit(), Cursor: cur, TeamID: &teamID})
		if err != nil {
			return nil, nil, err
		}
		l, err := result(r.JSON200, r.StatusCode(), r.Body)
		return l.Items, l.NextCursor, err
	})
	if err != nil {
		return models.Project{}, fmt.Errorf("list projects: %w", err)
	}
	for _, p := range projects {
		if p.Slug == slug {
			return p, nil
		}
	}
	return models.Project{}, fmt.Errorf("no project %q in team %q", slug, team)
}

// FindServiceAccount returns the service account slug of a project.
func FindServiceAccount(ctx context.Context, c *client.ClientWithResponses, projectID uuid.UUID, slug string) (models.ServiceAccount, error) {
	all, err := listAll(func(cur *string) ([]models.ServiceAccount, *string, error) {
		r, err := c.ListServiceAccountsWithResponse(ctx, &models.ListServiceAccountsParams{Limit: limit(), Cursor: cur, ProjectID: &projectID})
		if err != nil {
			return nil, nil, err
		}
		l, err := result(r.JSON200, r.StatusCode(), r.Body)
		return l.Items, l.NextCursor, err
	})
	if err != nil {
		return models.ServiceAccount{}, fmt.Errorf("list service accounts: %w", err)
	}
	for _, a := range all {
		if a.Slug == slug {
			return a, nil
		}
	}
	return models.ServiceAccount{}, fmt.Errorf("no service account %q in the project", slug)
}

// FindUser returns the user with email (compared without case, as Relay's
// unique index does).
func FindUser(ctx context.Context, c *client.ClientWithResponses, email string) (models.User, error) {
	// The email filter matches exactly; try it first, then fall back to
	// listing for a different case.
	for _, filter := range []*string{&email, nil} {
		all, err := listAll(func(cur *string) ([]models.User, *string, error) {
			r, err := c.ListUsersWithResponse(ctx, &models.ListUsersParams{Limit: limit(), Cursor: cur, Email: filter})
			if err != nil {
				return nil, nil, err
			}
			l, err := result(r.JSON200, r.StatusCode(), r.Body)
			return l.Items, l.NextCursor, err
		})
		if err != nil {
			return models.User{}, fmt.Errorf("list users: %w", err)
		}
		for _, u := range all {
			if lowerEmail(string(u.Email)) == lowerEmail(email) {
				return u, nil
			}
		}
	}
	return models.User{}, fmt.Errorf("no user %q", email)
}

// FindPolicy returns the policy slug.
func FindPolicy(ctx context.Context, c *client.ClientWithResponses, slug string) (models.Policy, error) {
	all, err := listAll(func(cur *string) ([]models.Policy, *string, error) {
		r, err := c.ListPoliciesWithResponse(ctx, &models.ListPoliciesParams{Limit: limit(), Cursor: cur})
		if err != nil {
			return nil, nil, err
		}
		l, err := result(r.JSON200, r.StatusCode(), r.Body)
		return l.Items, l.NextCursor, err
	})
	if err != nil {
		return models.Policy{}, fmt.Errorf("list policies: %w", err)
	}
	for _, p := range all {
		if p.Slug == slug {
			return p, nil
		}
	}
	return models.Policy{}, fmt.Errorf("no policy %q", slug)
}

// Expect returns *v when the answer had the expected status (v is the
// response's typed field of that status, nil otherwise), else the API's
// error: for the CLI's direct calls on the generated client.
func Expect[T any](v *T, status int, body []byte) (T, error) { return result(v, status, body) }
