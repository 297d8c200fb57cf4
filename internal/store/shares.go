package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// Shares: what a system admin hands to a team. A system policy shared with a
// team may be attached there by the team's admins; a host key shared with a
// team may be listed by the team's own policies (the schema refuses any
// other, and taking a share back takes the host key out of those policies).
// Neither table is read by the snapshot: they decide who may write, and the
// rows they permit are what the request path sees.

// PolicyTeamShareKey is the key of a policy's share with a team.
type PolicyTeamShareKey struct{ PolicyID, TeamID uuid.UUID }

// String is how the audit log names the share: policy/team.
func (k PolicyTeamShareKey) String() string { return fmt.Sprintf("%s/%s", k.PolicyID, k.TeamID) }

// PolicyTeamSharesPage is a page of shares in (policy, team) order after
// (AfterPolicyID, AfterTeamID), of one policy when PolicyID is set.
type PolicyTeamSharesPage struct {
	AfterPolicyID uuid.UUID
	AfterTeamID   uuid.UUID
	PolicyID      *uuid.UUID
	Limit         int32
}

var policyTeamSharesTable = &tableDef[dbsqlc.PolicyTeamShare, PolicyTeamShare, PolicyTeamShareKey, PolicyTeamSharesPage]{
	kind: KindPolicyTeamShares,
	key:  func(r PolicyTeamShare) PolicyTeamShareKey { return PolicyTeamShareKey{r.PolicyID, r.TeamID} },
	row:  func(r dbsqlc.PolicyTeamShare) PolicyTeamShare { return PolicyTeamShare(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r PolicyTeamShare) (dbsqlc.PolicyTeamShare, error) {
		return q.InsertPolicyTeamShare(ctx, r.PolicyID, r.TeamID)
	},
	get: func(q *dbsqlc.Queries, ctx context.Context, k PolicyTeamShareKey) (dbsqlc.PolicyTeamShare, error) {
		return q.GetPolicyTeamShareByPolicyAndTeam(ctx, k.PolicyID, k.TeamID)
	},
	remove: func(q *dbsqlc.Queries, ctx context.Context, k PolicyTeamShareKey) (int64, error) {
		return q.DeletePolicyTeamShare(ctx, k.PolicyID, k.TeamID)
	},
	list: func(q *dbsqlc.Queries, ctx context.Context, p PolicyTeamSharesPage) ([]dbsqlc.PolicyTeamShare, error) {
		return q.ListPolicyTeamSharesPage(ctx, p.AfterPolicyID, p.AfterTeamID, p.PolicyID, p.Limit)
	},
}

// PolicyTeamShares is the policy_team_shares table.
type PolicyTeamShares struct {
	Table[PolicyTeamShare, PolicyTeamShareKey, PolicyTeamSharesPage]
}

// PolicyTeamShares returns the policy shares table; each write runs in its own transaction.
func (s *Store) PolicyTeamShares() PolicyTeamShares {
	return PolicyTeamShares{table(s.db(), policyTeamSharesTable)}
}

// PolicyTeamShares returns the policy shares table inside t.
func (t *Tx) PolicyTeamShares() PolicyTeamShares {
	return PolicyTeamShares{table(t.db(), policyTeamSharesTable)}
}

// HostKeyTeamShareKey is the key of a host key's share with a team.
type HostKeyTeamShareKey struct{ HostKeyID, TeamID uuid.UUID }

// String is how the audit log names the share: host key/team.
func (k HostKeyTeamShareKey) String() string { return fmt.Sprintf("%s/%s", k.HostKeyID, k.TeamID) }

// HostKeyTeamSharesPage is a page of shares in (host key, team) order after
// (AfterHostKeyID, AfterTeamID), of one host key and/or one team when set.
type HostKeyTeamSharesPage struct {
	AfterHostKeyID uuid.UUID
	AfterTeamID    uuid.UUID
	HostKeyID      *uuid.UUID
	TeamID         *uuid.UUID
	Limit          int32
}

var hostKeyTeamSharesTable = &tableDef[dbsqlc.HostKeyTeamShare, HostKeyTeamShare, HostKeyTeamShareKey, HostKeyTeamSharesPage]{
	kind: KindHostKeyTeamShares,
	key:  func(r HostKeyTeamShare) HostKeyTeamShareKey { return HostKeyTeamShareKey{r.HostKeyID, r.TeamID} },
	row:  func(r dbsqlc.HostKeyTeamShare) HostKeyTeamShare { return HostKeyTeamShare(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r HostKeyTeamShare) (dbsqlc.HostKeyTeamShare, error) {
		return q.InsertHostKeyTeamShare(ctx, r.HostKeyID, r.TeamID)
	},
	get: func(q *dbsqlc.Queries, ctx context.Context, k HostKeyTeamShareKey) (dbsqlc.HostKeyTeamShare, error) {
		return q.GetHostKeyTeamShareByHostKeyAndTeam(ctx, k.HostKeyID, k.TeamID)
	},
	remove: func(q *dbsqlc.Queries, ctx context.Context, k HostKeyTeamShareKey) (int64, error) {
		return q.DeleteHostKeyTeamShare(ctx, k.HostKeyID, k.TeamID)
	},
	list: func(q *dbsqlc.Queries, ctx context.Context, p HostKeyTeamSharesPage) ([]dbsqlc.HostKeyTeamShare, error) {
		return q.ListHostKeyTeamSharesPage(ctx, dbsqlc.ListHostKeyTeamSharesPageParams(p))
	},
}

// HostKeyTeamShares is the host_key_team_shares table.
type HostKeyTeamShares struct {
	Table[HostKeyTeamShare, HostKeyTeamShareKey, HostKeyTeamSharesPage]
}

// HostKeyTeamShares returns the host key shares table; each write runs in its own transaction.
func (s *Store) HostKeyTeamShares() HostKeyTeamShares {
	return HostKeyTeamShares{table(s.db(), hostKeyTeamSharesTable)}
}

// HostKeyTeamShares returns the host key shares table inside t.
func (t *Tx) HostKeyTeamShares() HostKeyTeamShares {
	return HostKeyTeamShares{table(t.db(), hostKeyTeamSharesTable)}
}
