package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// GroupMembershipKey is the key of a group membership.
type GroupMembershipKey struct{ GroupID, UserID uuid.UUID }

// String is how the audit log names a membership: group/user.
func (k GroupMembershipKey) String() string { return fmt.Sprintf("%s/%s", k.GroupID, k.UserID) }

// GroupMembershipsPage is a page of memberships in (group, user) order after
// (AfterGroupID, AfterUserID), of one group or one user when set.
type GroupMembershipsPage struct {
	AfterGroupID uuid.UUID
	AfterUserID  uuid.UUID
	GroupID      *uuid.UUID
	UserID       *uuid.UUID
	Limit        int32
}

var groupMembershipsTable = &tableDef[dbsqlc.GroupMembership, GroupMembership, GroupMembershipKey, GroupMembershipsPage]{
	kind: KindGroupMemberships,
	key:  func(r GroupMembership) GroupMembershipKey { return GroupMembershipKey{r.GroupID, r.UserID} },
	row:  func(r dbsqlc.GroupMembership) GroupMembership { return GroupMembership(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r GroupMembership) (dbsqlc.GroupMembership, error) {
		return q.InsertGroupMembership(ctx, r.GroupID, r.UserID)
	},
	get: func(q *dbsqlc.Queries, ctx context.Context, k GroupMembershipKey) (dbsqlc.GroupMembership, error) {
		return q.GetGroupMembershipByGroupAndUser(ctx, k.GroupID, k.UserID)
	},
	remove: func(q *dbsqlc.Queries, ctx context.Context, k GroupMembershipKey) (int64, error) {
		return q.DeleteGroupMembership(ctx, k.GroupID, k.UserID)
	},
	list: func(q *dbsqlc.Queries, ctx context.Context, p GroupMembershipsPage) ([]dbsqlc.GroupMembership, error) {
		return q.ListGroupMembershipsPage(ctx, dbsqlc.ListGroupMembershipsPageParams(p))
	},
	catalog: func(c *Catalog) *[]GroupMembership { return &c.GroupMemberships },
	all:     (*dbsqlc.Queries).ListGroupMemberships,
	of:      (*dbsqlc.Queries).ListGroupMembershipsByGroup,
}

// GroupMemberships is the group_memberships table: which users are in which groups.
type GroupMemberships struct {
	Table[GroupMembership, GroupMembershipKey, GroupMembershipsPage]
}

// GroupMemberships returns the memberships table; each write runs in its own transaction.
func (s *Store) GroupMemberships() GroupMemberships {
	return GroupMemberships{table(s.db(), groupMembershipsTable)}
}

// GroupMemberships returns the memberships table inside t.
func (t *Tx) GroupMemberships() GroupMemberships {
	return GroupMemberships{table(t.db(), groupMembershipsTable)}
}

// ListByGroup returns the memberships of a group.
func (t GroupMemberships) ListByGroup(ctx context.Context, groupID uuid.UUID) ([]GroupMembership, error) {
	return groupMembershipsTable.results(t.db.q.ListGroupMembershipsByGroup(ctx, groupID))
}

// ListByUser returns the memberships of a user.
func (t GroupMemberships) ListByUser(ctx context.Context, userID uuid.UUID) ([]GroupMembership, error) {
	return groupMembershipsTable.results(t.db.q.ListGroupMembershipsByUser(ctx, userID))
}
