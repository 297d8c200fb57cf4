package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// Sessions is the sessions table: control-plane sign-ins, keyed by the
// SHA-256 of the session token. Sign-ins and sign-outs are audited as login
// and logout of the user; neither the hash nor the CSRF token reaches the
// audit log.
type Sessions struct{ db db }

// Sessions returns the sessions table; each write runs in its own transaction.
func (s *Store) Sessions() Sessions { return Sessions{s.db()} }

// Sessions returns the sessions table inside t.
func (t *Tx) Sessions() Sessions { return Sessions{t.db()} }

// Create stores a session (TokenHash, UserID, CSRFToken, ExpiresAt).
func (t Sessions) Create(ctx context.Context, actor string, r Session) (Session, error) {
	err := t.db.inTx(ctx, func(tx *Tx) error {
		d, err := tx.q.InsertSession(ctx, r.TokenHash, r.UserID, r.CSRFToken, r.ExpiresAt)
		if err != nil {
			return mapErr(err)
		}
		r = Session(d)
		return tx.Audit(ctx, actor, "login", string(KindSessions), r.UserID.String(), nil, r)
	})
	if err != nil {
		return Session{}, fmt.Errorf("create session: %w", err)
	}
	return r, nil
}

// GetByHash returns the session whose token hashes to hash, unless it has expired.
func (t Sessions) GetByHash(ctx context.Context, hash []byte) (Session, error) {
	r, err := t.db.q.GetSessionByHash(ctx, hash)
	return Session(r), mapErr(err)
}

// Delete ends the session whose token hashes to hash, expired or not.
func (t Sessions) Delete(ctx context.Context, actor string, hash []byte) error {
	err := t.db.inTx(ctx, func(tx *Tx) error {
		r, err := tx.q.DeleteSession(ctx, hash)
		if err != nil {
			return mapErr(err)
		}
		return tx.Audit(ctx, actor, "logout", string(KindSessions), r.UserID.String(), Session(r), nil)
	})
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteByUser ends every session of a user (when it is disabled or its
// password changes) and returns how many there were.
func (t Sessions) DeleteByUser(ctx context.Context, actor string, userID uuid.UUID) (int64, error) {
	var n int64
	err := t.db.inTx(ctx, func(tx *Tx) error {
		var err error
		if n, err = tx.q.DeleteSessionsByUser(ctx, userID); err != nil || n == 0 {
			return mapErr(err)
		}
		return tx.Audit(ctx, actor, "logout", string(KindSessions), userID.String(), nil, nil)
	})
	if err != nil {
		return 0, fmt.Errorf("delete sessions of user %s: %w", userID, err)
	}
	return n, nil
}

// DeleteExpired deletes the sessions that have expired and returns how many.
// It is housekeeping, not an audited change.
func (t Sessions) DeleteExpired(ctx context.Context) (int64, error) {
	n, err := t.db.q.DeleteExpiredSessions(ctx)
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", mapErr(err))
	}
	return n, nil
}
