package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// RoleBindingsPage is a Page of role bindings, of one user, group, team
// and/or project when set.
type RoleBindingsPage struct {
	After     uuid.UUID
	UserID    *uuid.UUID
	GroupID   *uuid.UUID
	TeamID    *uuid.UUID
	ProjectID *uuid.UUID
	Limit     int32
}

var roleBindingsTable = &tableDef[dbsqlc.RoleBinding, RoleBinding, uuid.UUID, RoleBindingsPage]{
	kind:   KindRoleBindings,
	key:    func(r RoleBinding) uuid.UUID { return r.ID },
	row:    func(r dbsqlc.RoleBinding) RoleBinding { return RoleBinding(r) },
	insert: fromRow(insertRoleBindingParams, (*dbsqlc.Queries).InsertRoleBinding),
	get:    (*dbsqlc.Queries).GetRoleBindingByID,
	lock:   (*dbsqlc.Queries).GetRoleBindingByIDForUpdate,
	update: fromRow(updateRoleBindingParams, (*dbsqlc.Queries).UpdateRoleBinding),
	remove: (*dbsqlc.Queries).DeleteRoleBinding,
	list: func(q *dbsqlc.Queries, ctx context.Context, p RoleBindingsPage) ([]dbsqlc.RoleBinding, error) {
		return q.ListRoleBindingsPage(ctx, dbsqlc.ListRoleBindingsPageParams(p))
	},
}

// insertRoleBindingParams is what Create writes of a RoleBinding: all but the columns the database makes.
func insertRoleBindingParams(r RoleBinding) dbsqlc.InsertRoleBindingParams {
	return dbsqlc.InsertRoleBindingParams{
		Role: r.Role, UserID: r.UserID, GroupID: r.GroupID, TeamID: r.TeamID, ProjectID: r.ProjectID,
	}
}

// updateRoleBindingParams is what Update writes of a RoleBinding: its key and mutable columns.
func updateRoleBindingParams(r RoleBinding) dbsqlc.UpdateRoleBindingParams {
	return dbsqlc.UpdateRoleBindingParams{
		ID: r.ID, Role: r.Role, UserID: r.UserID, GroupID: r.GroupID, TeamID: r.TeamID, ProjectID: r.ProjectID,
	}
}

// RoleBindings is the role_bindings table: a role for a user or a group, on
// the whole system (no team, no project), a team or a project.
type RoleBindings struct {
	MutableTable[RoleBinding, uuid.UUID, RoleBindingsPage]
}

// RoleBindings returns the role bindings table; each write runs in its own transaction.
func (s *Store) RoleBindings() RoleBindings { return RoleBindings{mutable(s.db(), roleBindingsTable)} }

// RoleBindings returns the role bindings table inside t.
func (t *Tx) RoleBindings() RoleBindings { return RoleBindings{mutable(t.db(), roleBindingsTable)} }

// ListByUserWithGroups returns every role binding that applies to a user:
// its own and those of its groups.
func (t RoleBindings) ListByUserWithGroups(ctx context.Context, userID uuid.UUID) ([]RoleBinding, error) {
	return roleBindingsTable.results(t.db.q.ListRoleBindingsByUserWithGroups(ctx, userID))
}
