package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// ProjectsPage is a Page of projects, of one team when TeamID is set.
type ProjectsPage struct {
	After  uuid.UUID
	TeamID *uuid.UUID
	Limit  int32
}

var projectsTable = &tableDef[dbsqlc.Project, Project, uuid.UUID, ProjectsPage]{
	kind: KindProjects,
	key:  func(r Project) uuid.UUID { return r.ID },
	row:  func(r dbsqlc.Project) Project { return Project(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r Project) (dbsqlc.Project, error) {
		return q.InsertProject(ctx, r.TeamID, r.Slug, r.Name)
	},
	get:  (*dbsqlc.Queries).GetProjectByID,
	lock: (*dbsqlc.Queries).GetProjectByIDForUpdate,
	update: func(q *dbsqlc.Queries, ctx context.Context, r Project) (dbsqlc.Project, error) {
		return q.UpdateProject(ctx, r.ID, r.TeamID, r.Slug, r.Name)
	},
	remove: (*dbsqlc.Queries).DeleteProject,
	list: func(q *dbsqlc.Queries, ctx context.Context, p ProjectsPage) ([]dbsqlc.Project, error) {
		return q.ListProjectsPage(ctx, p.After, p.TeamID, p.Limit)
	},
	catalog: func(c *Catalog) *[]Project { return &c.Projects },
	all:     (*dbsqlc.Queries).ListProjects,
}

// Projects is the projects table. Deleting a project deletes its service
// accounts, relay keys, policy bindings, inference tokens and budgets.
type Projects struct {
	MutableTable[Project, uuid.UUID, ProjectsPage]
}

// Projects returns the projects table; each write runs in its own transaction.
func (s *Store) Projects() Projects { return Projects{mutable(s.db(), projectsTable)} }

// Projects returns the projects table inside t.
func (t *Tx) Projects() Projects { return Projects{mutable(t.db(), projectsTable)} }

// GetBySlug returns the project of team with slug.
func (t Projects) GetBySlug(ctx context.Context, teamID uuid.UUID, slug string) (Project, error) {
	return projectsTable.result(t.db.q.GetProjectBySlug(ctx, teamID, slug))
}
