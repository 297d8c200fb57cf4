package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// RelayKeysPage is a Page of relay keys, of one project, service account
// and/or user when set.
type RelayKeysPage struct {
	After            uuid.UUID
	ProjectID        *uuid.UUID
	ServiceAccountID *uuid.UUID
	UserID           *uuid.UUID
	Limit            int32
}

var relayKeysTable = &tableDef[dbsqlc.RelayKey, RelayKey, uuid.UUID, RelayKeysPage]{
	kind:   KindRelayKeys,
	key:    func(r RelayKey) uuid.UUID { return r.ID },
	row:    func(r dbsqlc.RelayKey) RelayKey { return RelayKey(r) },
	insert: fromRow(insertRelayKeyParams, (*dbsqlc.Queries).InsertRelayKey),
	get:    (*dbsqlc.Queries).GetRelayKeyByID,
	lock:   (*dbsqlc.Queries).GetRelayKeyByIDForUpdate,
	update: fromRow(updateRelayKeyParams, (*dbsqlc.Queries).UpdateRelayKey),
	remove: (*dbsqlc.Queries).DeleteRelayKey,
	list: func(q *dbsqlc.Queries, ctx context.Context, p RelayKeysPage) ([]dbsqlc.RelayKey, error) {
		return q.ListRelayKeysPage(ctx, dbsqlc.ListRelayKeysPageParams(p))
	},
	catalog: func(c *Catalog) *[]RelayKey { return &c.RelayKeys },
	all:     (*dbsqlc.Queries).ListRelayKeys,
}

// insertRelayKeyParams is what Create writes of a RelayKey: all but the columns the database makes.
func insertRelayKeyParams(r RelayKey) dbsqlc.InsertRelayKeyParams {
	return dbsqlc.InsertRelayKeyParams{
		KeyHash: r.KeyHash, DisplayPrefix: r.DisplayPrefix, Name: r.Name, ProjectID: r.ProjectID,
		ServiceAccountID: r.ServiceAccountID, UserID: r.UserID, PolicyID: r.PolicyID, Priority: r.Priority,
		ExpiresAt: r.ExpiresAt,
	}
}

// updateRelayKeyParams is what Update writes of a RelayKey: its key and mutable columns.
func updateRelayKeyParams(r RelayKey) dbsqlc.UpdateRelayKeyParams {
	return dbsqlc.UpdateRelayKeyParams{
		ID: r.ID, Name: r.Name, PolicyID: r.PolicyID, Priority: r.Priority, ExpiresAt: r.ExpiresAt,
	}
}

// RelayKeys is the relay_keys table. Create stores the hash the caller
// computed (the key itself is never stored); the hash never reaches the audit
// log. Update changes only the name, policy, priority and expiry.
type RelayKeys struct {
	MutableTable[RelayKey, uuid.UUID, RelayKeysPage]
}

// RelayKeys returns the relay keys table; each write runs in its own transaction.
func (s *Store) RelayKeys() RelayKeys { return RelayKeys{mutable(s.db(), relayKeysTable)} }

// RelayKeys returns the relay keys table inside t.
func (t *Tx) RelayKeys() RelayKeys { return RelayKeys{mutable(t.db(), relayKeysTable)} }

// GetByHash returns the relay key whose SHA-256 is hash, revoked or expired or not.
func (t RelayKeys) GetByHash(ctx context.Context, hash []byte) (RelayKey, error) {
	return relayKeysTable.result(t.db.q.GetRelayKeyByHash(ctx, hash))
}

// Revoke marks a relay key revoked now (a second revoke keeps the first time).
func (t RelayKeys) Revoke(ctx context.Context, actor string, id uuid.UUID) (RelayKey, error) {
	return t.change(ctx, actor, "revoke", id, func(q *dbsqlc.Queries, _ RelayKey) (*RelayKey, error) {
		return ptr(relayKeysTable.one(q.RevokeRelayKey(ctx, id)))
	})
}
