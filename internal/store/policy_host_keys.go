package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// PolicyHostKeyKey is the key of a policy's host key grant.
type PolicyHostKeyKey struct{ PolicyID, HostKeyID uuid.UUID }

// String is how the audit log names the grant: policy/host key.
func (k PolicyHostKeyKey) String() string { return fmt.Sprintf("%s/%s", k.PolicyID, k.HostKeyID) }

// PolicyHostKeysPage is a page of host key grants in (policy, host key) order
// after (AfterPolicyID, AfterHostKeyID), of one policy when PolicyID is set.
type PolicyHostKeysPage struct {
	AfterPolicyID  uuid.UUID
	AfterHostKeyID uuid.UUID
	PolicyID       *uuid.UUID
	Limit          int32
}

var policyHostKeysTable = &tableDef[dbsqlc.PolicyHostKey, PolicyHostKey, PolicyHostKeyKey, PolicyHostKeysPage]{
	kind: KindPolicyHostKeys,
	key:  func(r PolicyHostKey) PolicyHostKeyKey { return PolicyHostKeyKey(r) },
	row:  func(r dbsqlc.PolicyHostKey) PolicyHostKey { return PolicyHostKey(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r PolicyHostKey) (dbsqlc.PolicyHostKey, error) {
		return q.InsertPolicyHostKey(ctx, r.PolicyID, r.HostKeyID)
	},
	get: func(q *dbsqlc.Queries, ctx context.Context, k PolicyHostKeyKey) (dbsqlc.PolicyHostKey, error) {
		return q.GetPolicyHostKeyByPolicyAndHostKey(ctx, k.PolicyID, k.HostKeyID)
	},
	remove: func(q *dbsqlc.Queries, ctx context.Context, k PolicyHostKeyKey) (int64, error) {
		return q.DeletePolicyHostKey(ctx, k.PolicyID, k.HostKeyID)
	},
	list: func(q *dbsqlc.Queries, ctx context.Context, p PolicyHostKeysPage) ([]dbsqlc.PolicyHostKey, error) {
		return q.ListPolicyHostKeysPage(ctx, p.AfterPolicyID, p.AfterHostKeyID, p.PolicyID, p.Limit)
	},
	catalog: func(c *Catalog) *[]PolicyHostKey { return &c.PolicyHostKeys },
	all:     (*dbsqlc.Queries).ListPolicyHostKeys,
	of:      (*dbsqlc.Queries).ListPolicyHostKeysByPolicy,
}

// PolicyHostKeys is the policy_host_keys table: the host keys a policy's
// requests may spend when it does not grant all of them.
type PolicyHostKeys struct {
	Table[PolicyHostKey, PolicyHostKeyKey, PolicyHostKeysPage]
}

// PolicyHostKeys returns the host key grants table; each write runs in its own transaction.
func (s *Store) PolicyHostKeys() PolicyHostKeys {
	return PolicyHostKeys{table(s.db(), policyHostKeysTable)}
}

// PolicyHostKeys returns the host key grants table inside t.
func (t *Tx) PolicyHostKeys() PolicyHostKeys {
	return PolicyHostKeys{table(t.db(), policyHostKeysTable)}
}

// ListByPolicy returns the host key grants of a policy.
func (t PolicyHostKeys) ListByPolicy(ctx context.Context, policyID uuid.UUID) ([]PolicyHostKey, error) {
	return policyHostKeysTable.results(t.db.q.ListPolicyHostKeysByPolicy(ctx, policyID))
}
