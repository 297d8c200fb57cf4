package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// InferenceTokensPage is a Page of inference tokens, of one user and/or one
// project when set.
type InferenceTokensPage struct {
	After     uuid.UUID
	UserID    *uuid.UUID
	ProjectID *uuid.UUID
	Limit     int32
}

var inferenceTokensTable = &tableDef[dbsqlc.InferenceToken, InferenceToken, uuid.UUID, InferenceTokensPage]{
	kind: KindInferenceTokens,
	key:  func(r InferenceToken) uuid.UUID { return r.ID },
	row:  func(r dbsqlc.InferenceToken) InferenceToken { return InferenceToken(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r InferenceToken) (dbsqlc.InferenceToken, error) {
		return q.InsertInferenceToken(ctx, r.TokenHash, r.UserID, r.ProjectID, r.ExpiresAt)
	},
	get:  (*dbsqlc.Queries).GetInferenceTokenByID,
	lock: (*dbsqlc.Queries).GetInferenceTokenByIDForUpdate,
	update: func(q *dbsqlc.Queries, ctx context.Context, r InferenceToken) (dbsqlc.InferenceToken, error) {
		return q.UpdateInferenceToken(ctx, r.ID, r.ExpiresAt)
	},
	remove: (*dbsqlc.Queries).DeleteInferenceToken,
	list: func(q *dbsqlc.Queries, ctx context.Context, p InferenceTokensPage) ([]dbsqlc.InferenceToken, error) {
		return q.ListInferenceTokensPage(ctx, p.After, p.UserID, p.ProjectID, p.Limit)
	},
	catalog: func(c *Catalog) *[]InferenceToken { return &c.InferenceTokens },
	all:     (*dbsqlc.Queries).ListInferenceTokens,
}

// InferenceTokens is the inference_tokens table. Create stores the hash the
// caller computed; the hash never reaches the audit log. Update changes only
// the expiry.
type InferenceTokens struct {
	MutableTable[InferenceToken, uuid.UUID, InferenceTokensPage]
}

// InferenceTokens returns the inference tokens table; each write runs in its own transaction.
func (s *Store) InferenceTokens() InferenceTokens {
	return InferenceTokens{mutable(s.db(), inferenceTokensTable)}
}

// InferenceTokens returns the inference tokens table inside t.
func (t *Tx) InferenceTokens() InferenceTokens {
	return InferenceTokens{mutable(t.db(), inferenceTokensTable)}
}

// GetByHash returns the inference token whose SHA-256 is hash, revoked or expired or not.
func (t InferenceTokens) GetByHash(ctx context.Context, hash []byte) (InferenceToken, error) {
	return inferenceTokensTable.result(t.db.q.GetInferenceTokenByHash(ctx, hash))
}

// Revoke marks an inference token revoked now (a second revoke keeps the first time).
func (t InferenceTokens) Revoke(ctx context.Context, actor string, id uuid.UUID) (InferenceToken, error) {
	return t.change(ctx, actor, "revoke", id, func(q *dbsqlc.Queries, _ InferenceToken) (*InferenceToken, error) {
		return ptr(inferenceTokensTable.one(q.RevokeInferenceToken(ctx, id)))
	})
}

// DeleteExpired deletes the tokens that expired before cutoff and returns how
// many. It is housekeeping, not an audited change.
func (t InferenceTokens) DeleteExpired(ctx context.Context, cutoff time.Time) (int64, error) {
	n, err := t.db.q.DeleteExpiredInferenceTokens(ctx, cutoff)
	if err != nil {
		return 0, fmt.Errorf("delete expired inference tokens: %w", mapErr(err))
	}
	return n, nil
}
