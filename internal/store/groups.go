package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

var groupsTable = &tableDef[dbsqlc.Group, Group, uuid.UUID, Page]{
	kind: KindGroups,
	key:  func(r Group) uuid.UUID { return r.ID },
	row:  func(r dbsqlc.Group) Group { return Group(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r Group) (dbsqlc.Group, error) {
		return q.InsertGroup(ctx, r.Slug, r.Name)
	},
	get:  (*dbsqlc.Queries).GetGroupByID,
	lock: (*dbsqlc.Queries).GetGroupByIDForUpdate,
	update: func(q *dbsqlc.Queries, ctx context.Context, r Group) (dbsqlc.Group, error) {
		return q.UpdateGroup(ctx, r.ID, r.Slug, r.Name)
	},
	remove:  (*dbsqlc.Queries).DeleteGroup,
	list:    paged((*dbsqlc.Queries).ListGroupsPage),
	catalog: func(c *Catalog) *[]Group { return &c.Groups },
	all:     (*dbsqlc.Queries).ListGroups,
	parts:   []part[uuid.UUID]{groupMembershipsTable},
}

// Groups is the groups table; members are in GroupMemberships.
type Groups struct {
	MutableTable[Group, uuid.UUID, Page]
}

// Groups returns the groups table; each write runs in its own transaction.
func (s *Store) Groups() Groups { return Groups{mutable(s.db(), groupsTable)} }

// Groups returns the groups table inside t.
func (t *Tx) Groups() Groups { return Groups{mutable(t.db(), groupsTable)} }

// GetBySlug returns the group with slug.
func (t Groups) GetBySlug(ctx context.Context, slug string) (Group, error) {
	return groupsTable.result(t.db.q.GetGroupBySlug(ctx, slug))
}
