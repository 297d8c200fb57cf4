package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

var teamsTable = &tableDef[dbsqlc.Team, Team, uuid.UUID, Page]{
	kind: KindTeams,
	key:  func(r Team) uuid.UUID { return r.ID },
	row:  func(r dbsqlc.Team) Team { return Team(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r Team) (dbsqlc.Team, error) {
		return q.InsertTeam(ctx, r.Slug, r.Name)
	},
	get:  (*dbsqlc.Queries).GetTeamByID,
	lock: (*dbsqlc.Queries).GetTeamByIDForUpdate,
	update: func(q *dbsqlc.Queries, ctx context.Context, r Team) (dbsqlc.Team, error) {
		return q.UpdateTeam(ctx, r.ID, r.Slug, r.Name)
	},
	remove:  (*dbsqlc.Queries).DeleteTeam,
	list:    paged((*dbsqlc.Queries).ListTeamsPage),
	catalog: func(c *Catalog) *[]Team { return &c.Teams },
	all:     (*dbsqlc.Queries).ListTeams,
}

// Teams is the teams table. A team with projects cannot be deleted (ErrReferenced).
type Teams struct {
	MutableTable[Team, uuid.UUID, Page]
}

// Teams returns the teams table; each write runs in its own transaction.
func (s *Store) Teams() Teams { return Teams{mutable(s.db(), teamsTable)} }

// Teams returns the teams table inside t.
func (t *Tx) Teams() Teams { return Teams{mutable(t.db(), teamsTable)} }

// GetBySlug returns the team with slug.
func (t Teams) GetBySlug(ctx context.Context, slug string) (Team, error) {
	return teamsTable.result(t.db.q.GetTeamBySlug(ctx, slug))
}
