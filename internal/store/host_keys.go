package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// HostKeysPage is a Page of host keys, of one host when HostID is set.
type HostKeysPage struct {
	After  uuid.UUID
	HostID *uuid.UUID
	Limit  int32
}

var hostKeysTable = &tableDef[dbsqlc.HostKey, HostKey, uuid.UUID, HostKeysPage]{
	kind:   KindHostKeys,
	key:    func(r HostKey) uuid.UUID { return r.ID },
	row:    func(r dbsqlc.HostKey) HostKey { return HostKey(r) },
	insert: fromRow(insertHostKeyParams, (*dbsqlc.Queries).InsertHostKey),
	get:    (*dbsqlc.Queries).GetHostKeyByID,
	lock:   (*dbsqlc.Queries).GetHostKeyByIDForUpdate,
	update: fromRow(updateHostKeyParams, (*dbsqlc.Queries).UpdateHostKey),
	remove: (*dbsqlc.Queries).DeleteHostKey,
	list: func(q *dbsqlc.Queries, ctx context.Context, p HostKeysPage) ([]dbsqlc.HostKey, error) {
		return q.ListHostKeysPage(ctx, p.After, p.HostID, p.Limit)
	},
	catalog: func(c *Catalog) *[]HostKey { return &c.HostKeys },
	all:     (*dbsqlc.Queries).ListHostKeys,
}

// insertHostKeyParams is what Create writes of a HostKey: all but the columns the database makes.
func insertHostKeyParams(r HostKey) dbsqlc.InsertHostKeyParams {
	return dbsqlc.InsertHostKeyParams{
		HostID: r.HostID, Slug: r.Slug, SecretRef: r.SecretRef, SecretCiphertext: r.SecretCiphertext,
		TierRateLimitID: r.TierRateLimitID, Position: r.Position, Enabled: r.Enabled,
	}
}

// updateHostKeyParams is what Update writes of a HostKey: its key and mutable columns.
func updateHostKeyParams(r HostKey) dbsqlc.UpdateHostKeyParams {
	return dbsqlc.UpdateHostKeyParams{
		ID: r.ID, Slug: r.Slug, TierRateLimitID: r.TierRateLimitID, Position: r.Position, Enabled: r.Enabled,
	}
}

// HostKeys is the host_keys table. Update leaves the secret and the host
// alone; SetSecret changes the secret. The ciphertext never reaches the audit log.
type HostKeys struct {
	MutableTable[HostKey, uuid.UUID, HostKeysPage]
}

// HostKeys returns the host keys table; each write runs in its own transaction.
func (s *Store) HostKeys() HostKeys { return HostKeys{mutable(s.db(), hostKeysTable)} }

// HostKeys returns the host keys table inside t.
func (t *Tx) HostKeys() HostKeys { return HostKeys{mutable(t.db(), hostKeysTable)} }

// GetBySlug returns the key of host with slug.
func (t HostKeys) GetBySlug(ctx context.Context, hostID uuid.UUID, slug string) (HostKey, error) {
	return hostKeysTable.result(t.db.q.GetHostKeyBySlug(ctx, hostID, slug))
}

// SetSecret replaces the secret of a host key: either an environment
// reference ("env:NAME") or AES-256-GCM ciphertext, exactly one of them
// (else ErrInvalid). It bumps SecretVersion and is audited as "rotate".
func (t HostKeys) SetSecret(ctx context.Context, actor string, id uuid.UUID, ref *string, ciphertext []byte) (HostKey, error) {
	return t.change(ctx, actor, "rotate", id, func(q *dbsqlc.Queries, _ HostKey) (*HostKey, error) {
		return ptr(hostKeysTable.one(q.UpdateHostKeySecret(ctx, id, ref, ciphertext)))
	})
}

// Reseal replaces a sealed host key's ciphertext with the same secret sealed
// under a new master key (`relay rotate-master-key`). The secret does not
// change, so neither does SecretVersion; it is audited as "rotate".
func (t HostKeys) Reseal(ctx context.Context, actor string, id uuid.UUID, ciphertext []byte) (HostKey, error) {
	return t.change(ctx, actor, "rotate", id, func(q *dbsqlc.Queries, _ HostKey) (*HostKey, error) {
		return ptr(hostKeysTable.one(q.ResealHostKey(ctx, ciphertext, id)))
	})
}
