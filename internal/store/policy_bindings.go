package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// PolicyBindingsPage is a Page of policy bindings, of one project and/or one
// policy when set.
type PolicyBindingsPage struct {
	After     uuid.UUID
	ProjectID *uuid.UUID
	PolicyID  *uuid.UUID
	Limit     int32
}

var policyBindingsTable = &tableDef[dbsqlc.PolicyBinding, PolicyBinding, uuid.UUID, PolicyBindingsPage]{
	kind:   KindPolicyBindings,
	key:    func(r PolicyBinding) uuid.UUID { return r.ID },
	row:    func(r dbsqlc.PolicyBinding) PolicyBinding { return PolicyBinding(r) },
	insert: fromRow(insertPolicyBindingParams, (*dbsqlc.Queries).InsertPolicyBinding),
	get:    (*dbsqlc.Queries).GetPolicyBindingByID,
	lock:   (*dbsqlc.Queries).GetPolicyBindingByIDForUpdate,
	update: fromRow(updatePolicyBindingParams, (*dbsqlc.Queries).UpdatePolicyBinding),
	remove: (*dbsqlc.Queries).DeletePolicyBinding,
	list: func(q *dbsqlc.Queries, ctx context.Context, p PolicyBindingsPage) ([]dbsqlc.PolicyBinding, error) {
		return q.ListPolicyBindingsPage(ctx, p.After, p.ProjectID, p.PolicyID, p.Limit)
	},
	catalog: func(c *Catalog) *[]PolicyBinding { return &c.PolicyBindings },
	all:     (*dbsqlc.Queries).ListPolicyBindings,
}

// insertPolicyBindingParams is what Create writes of a PolicyBinding: all but the columns the database makes.
func insertPolicyBindingParams(r PolicyBinding) dbsqlc.InsertPolicyBindingParams {
	return dbsqlc.InsertPolicyBindingParams{
		ProjectID: r.ProjectID, PolicyID: r.PolicyID, ServiceAccountID: r.ServiceAccountID, UserID: r.UserID,
		GroupID: r.GroupID, Position: r.Position,
	}
}

// updatePolicyBindingParams is what Update writes of a PolicyBinding: its key and mutable columns.
func updatePolicyBindingParams(r PolicyBinding) dbsqlc.UpdatePolicyBindingParams {
	return dbsqlc.UpdatePolicyBindingParams{
		ID: r.ID, PolicyID: r.PolicyID, ServiceAccountID: r.ServiceAccountID, UserID: r.UserID, GroupID: r.GroupID,
		Position: r.Position,
	}
}

// PolicyBindings is the policy_bindings table: in a project, a subject
// (exactly one of service account, user, group) bound to a policy, in order.
// A policy binding stays in its project (Update leaves ProjectID alone).
type PolicyBindings struct {
	MutableTable[PolicyBinding, uuid.UUID, PolicyBindingsPage]
}

// PolicyBindings returns the policy bindings table; each write runs in its own transaction.
func (s *Store) PolicyBindings() PolicyBindings {
	return PolicyBindings{mutable(s.db(), policyBindingsTable)}
}

// PolicyBindings returns the policy bindings table inside t.
func (t *Tx) PolicyBindings() PolicyBindings {
	return PolicyBindings{mutable(t.db(), policyBindingsTable)}
}

// ListByProject returns the policy bindings of a project in resolution order.
func (t PolicyBindings) ListByProject(ctx context.Context, projectID uuid.UUID) ([]PolicyBinding, error) {
	return policyBindingsTable.results(t.db.q.ListPolicyBindingsByProject(ctx, projectID))
}
