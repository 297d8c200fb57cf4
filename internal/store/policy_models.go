package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// PolicyModelKey is the key of a policy's model grant and of its per-model rate limit.
type PolicyModelKey struct{ PolicyID, ModelID uuid.UUID }

// String is how the audit log names the grant: policy/model.
func (k PolicyModelKey) String() string { return fmt.Sprintf("%s/%s", k.PolicyID, k.ModelID) }

// PolicyModelsPage is a page of model grants in (policy, model) order after
// (AfterPolicyID, AfterModelID), of one policy when PolicyID is set.
type PolicyModelsPage struct {
	AfterPolicyID uuid.UUID
	AfterModelID  uuid.UUID
	PolicyID      *uuid.UUID
	Limit         int32
}

var policyModelsTable = &tableDef[dbsqlc.PolicyModel, PolicyModel, PolicyModelKey, PolicyModelsPage]{
	kind: KindPolicyModels,
	key:  func(r PolicyModel) PolicyModelKey { return PolicyModelKey(r) },
	row:  func(r dbsqlc.PolicyModel) PolicyModel { return PolicyModel(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r PolicyModel) (dbsqlc.PolicyModel, error) {
		return q.InsertPolicyModel(ctx, r.PolicyID, r.ModelID)
	},
	get: func(q *dbsqlc.Queries, ctx context.Context, k PolicyModelKey) (dbsqlc.PolicyModel, error) {
		return q.GetPolicyModelByPolicyAndModel(ctx, k.PolicyID, k.ModelID)
	},
	remove: func(q *dbsqlc.Queries, ctx context.Context, k PolicyModelKey) (int64, error) {
		return q.DeletePolicyModel(ctx, k.PolicyID, k.ModelID)
	},
	list: func(q *dbsqlc.Queries, ctx context.Context, p PolicyModelsPage) ([]dbsqlc.PolicyModel, error) {
		return q.ListPolicyModelsPage(ctx, p.AfterPolicyID, p.AfterModelID, p.PolicyID, p.Limit)
	},
	catalog: func(c *Catalog) *[]PolicyModel { return &c.PolicyModels },
	all:     (*dbsqlc.Queries).ListPolicyModels,
	of:      (*dbsqlc.Queries).ListPolicyModelsByPolicy,
}

// PolicyModels is the policy_models table: the models a policy grants when
// it does not grant all of them.
type PolicyModels struct {
	Table[PolicyModel, PolicyModelKey, PolicyModelsPage]
}

// PolicyModels returns the model grants table; each write runs in its own transaction.
func (s *Store) PolicyModels() PolicyModels { return PolicyModels{table(s.db(), policyModelsTable)} }

// PolicyModels returns the model grants table inside t.
func (t *Tx) PolicyModels() PolicyModels { return PolicyModels{table(t.db(), policyModelsTable)} }

// ListByPolicy returns the model grants of a policy.
func (t PolicyModels) ListByPolicy(ctx context.Context, policyID uuid.UUID) ([]PolicyModel, error) {
	return policyModelsTable.results(t.db.q.ListPolicyModelsByPolicy(ctx, policyID))
}
