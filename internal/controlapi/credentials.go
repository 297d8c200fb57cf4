package controlapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/credential"
	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	gen "github.com/relay-llm/relay/openapi/controlgen"
)

// Relay keys and inference tokens. The secret is minted here
// (internal/credential), returned once by the call that mints it, and stored
// only as its SHA-256 with a display prefix.
//
// Who may manage a relay key: ManageProject on its project, for every key of
// the project; MintOwn (developers) for the keys the caller owns as a user —
// without choosing their policy or priority, which would let a developer
// pick a more generous policy than the project gives them.

func relayKeyProject(r store.RelayKey) uuid.UUID { return r.ProjectID }

// relayKeyForWrite reads a relay key the caller may change, with its project's scope.
func (s *Server) relayKeyForWrite(ctx context.Context, id uuid.UUID) (*caller, store.RelayKey, rbac.Scope, bool, error) {
	c, k, sc, err := projectRow(ctx, s, "relay key", 0, func() (store.RelayKey, error) { return s.st.RelayKeys().Get(ctx, id) }, relayKeyProject)
	if err != nil {
		return nil, k, sc, false, err
	}
	if c.Can(rbac.ManageProject, sc) {
		return c, k, sc, true, nil
	}
	if k.UserID != nil && *k.UserID == c.User() && c.Can(rbac.MintOwn, sc) {
		return c, k, sc, false, nil
	}
	return nil, k, sc, false, forbidden(rbac.Need(rbac.ManageProject, sc) + " (or mint_own for your own keys)")
}

// memberOf checks that a relay key's owning user has a role in the key's
// project (a binding on it, its team or the system, direct or through a
// group): a key minted for anyone else would spend in the user's name where
// the user can neither see nor revoke it. Anyone else is a 422 on user_id.
func (s *Server) memberOf(ctx context.Context, user uuid.UUID, sc rbac.Scope) error {
	u, err := s.userCaller(ctx, user, nil)
	var e *apiError
	if errors.As(err, &e) && e.status == http.StatusUnauthorized {
		return noSuch("user_id", "user with a role in the project")
	}
	if err != nil {
		return err
	}
	if !u.Can(rbac.Read, sc) {
		return noSuch("user_id", "user with a role in the project")
	}
	return nil
}

// ListRelayKeys implements StrictServerInterface.
func (s *Server) ListRelayKeys(ctx context.Context, req gen.ListRelayKeysRequestObject) (gen.ListRelayKeysResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	rows, err := s.st.RelayKeys().ListVisible(ctx, store.RelayKeysPage{
		After: after, ProjectID: p.ProjectID, ServiceAccountID: p.ServiceAccountID, UserID: p.UserID, Limit: fetch,
	}, storeReach(c, rbac.Read))
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.RelayKey) uuid.UUID { return r.ID })
	return gen.ListRelayKeys200JSONResponse{Items: convertAll(rows, s.relayKeyOut), NextCursor: next}, nil
}

// CreateRelayKey implements StrictServerInterface.
func (s *Server) CreateRelayKey(ctx context.Context, req gen.CreateRelayKeyRequestObject) (gen.CreateRelayKeyResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	sc, err := s.readableProject(ctx, c, "project_id", b.ProjectID)
	if err != nil {
		return nil, err
	}
	if count(b.ServiceAccountID, b.UserID) != 1 {
		return nil, exactlyOne("service_account_id", "user_id")
	}
	if !c.Can(rbac.ManageProject, sc) {
		switch {
		case !c.Can(rbac.MintOwn, sc):
			return nil, forbidden(rbac.Need(rbac.MintOwn, sc))
		case b.UserID == nil || *b.UserID != c.User():
			return nil, forbidden("you may mint relay keys for yourself only; keys of others and of service accounts need manage_project")
		case b.PolicyID != nil || b.Priority != nil:
			return nil, forbidden("choosing a relay key's policy or priority needs manage_project")
		}
	}
	if b.ServiceAccountID != nil {
		if err := s.checkSubject(ctx, c, b.ProjectID, b.ServiceAccountID, nil, nil); err != nil {
			return nil, err
		}
	} else if err := s.checkSubject(ctx, c, b.ProjectID, nil, b.UserID, nil); err != nil {
		return nil, err
	} else if err := s.memberOf(ctx, *b.UserID, sc); err != nil {
		return nil, err
	}
	if b.PolicyID != nil {
		if err := s.attachablePolicy(ctx, c, "policy_id", *b.PolicyID, sc); err != nil {
			return nil, err
		}
	}
	if b.ExpiresAt != nil && !b.ExpiresAt.After(s.now()) {
		return nil, invalid("expires_at: must be in the future", "expires_at")
	}
	m := credential.NewRelayKey()
	row, err := s.st.RelayKeys().Create(ctx, c.actor, store.RelayKey{
		KeyHash: m.Hash[:], DisplayPrefix: m.DisplayPrefix, Name: deref(b.Name, ""), ProjectID: b.ProjectID,
		ServiceAccountID: b.ServiceAccountID, UserID: b.UserID, PolicyID: b.PolicyID, Priority: b.Priority,
		ExpiresAt: b.ExpiresAt,
	})
	if err != nil {
		return nil, err
	}
	return gen.CreateRelayKey201JSONResponse{RelayKey: s.relayKeyOut(row), Secret: m.Plaintext}, nil
}

// GetRelayKey implements StrictServerInterface.
func (s *Server) GetRelayKey(ctx context.Context, req gen.GetRelayKeyRequestObject) (gen.GetRelayKeyResponseObject, error) {
	_, k, _, err := projectRow(ctx, s, "relay key", 0, func() (store.RelayKey, error) { return s.st.RelayKeys().Get(ctx, req.ID) }, relayKeyProject)
	if err != nil {
		return nil, err
	}
	return gen.GetRelayKey200JSONResponse(s.relayKeyOut(k)), nil
}

// UpdateRelayKey implements StrictServerInterface.
func (s *Server) UpdateRelayKey(ctx context.Context, req gen.UpdateRelayKeyRequestObject) (gen.UpdateRelayKeyResponseObject, error) {
	c, _, sc, manager, err := s.relayKeyForWrite(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if !manager && (b.PolicyID.IsSpecified() || b.Priority.IsSpecified()) {
		return nil, forbidden("changing a relay key's policy or priority needs manage_project")
	}
	if id, ok := b.PolicyID.Get(); ok {
		if err := s.attachablePolicy(ctx, c, "policy_id", id, sc); err != nil {
			return nil, err
		}
	}
	if t, ok := b.ExpiresAt.Get(); ok && !t.After(s.now()) {
		return nil, invalid("expires_at: must be in the future (revoke the key to stop it now)", "expires_at")
	}
	row, err := s.st.RelayKeys().Modify(ctx, c.actor, req.ID, func(r *store.RelayKey) error {
		set(&r.Name, b.Name)
		if b.PolicyID.IsSpecified() {
			r.PolicyID = b.PolicyID.Pointer()
		}
		if b.Priority.IsSpecified() {
			r.Priority = b.Priority.Pointer()
		}
		if b.ExpiresAt.IsSpecified() {
			r.ExpiresAt = b.ExpiresAt.Pointer()
		}
		return nil
	})
	if row, err = found("relay key", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateRelayKey200JSONResponse(s.relayKeyOut(row)), nil
}

// DeleteRelayKey implements StrictServerInterface.
func (s *Server) DeleteRelayKey(ctx context.Context, req gen.DeleteRelayKeyRequestObject) (gen.DeleteRelayKeyResponseObject, error) {
	c, _, _, _, err := s.relayKeyForWrite(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if _, err := found("relay key", struct{}{}, s.st.RelayKeys().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeleteRelayKey204Response{}, nil
}

// RevokeRelayKey implements StrictServerInterface.
func (s *Server) RevokeRelayKey(ctx context.Context, req gen.RevokeRelayKeyRequestObject) (gen.RevokeRelayKeyResponseObject, error) {
	c, _, _, _, err := s.relayKeyForWrite(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	row, err := got(s.st.RelayKeys().Revoke(ctx, c.actor, req.ID)).orNotFound("relay key")
	if err != nil {
		return nil, err
	}
	return gen.RevokeRelayKey200JSONResponse(s.relayKeyOut(row)), nil
}

// RotateRelayKey implements StrictServerInterface. In one transaction: the
// old key's expires_at moves to now + grace (never later than it was) — or,
// with grace 0, the old key is revoked at once — and a new key is minted with
// the old one's name, owner, project, policy, priority and expiry. The
// snapshot honours expires_at, so the old key works exactly until then.
func (s *Server) RotateRelayKey(ctx context.Context, req gen.RotateRelayKeyRequestObject) (gen.RotateRelayKeyResponseObject, error) {
	c, old, _, _, err := s.relayKeyForWrite(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if st := credentialStatus(now, old.ExpiresAt, old.RevokedAt); st != models.CredentialStatusActive {
		return nil, conflict("the relay key is " + string(st) + "; only an active key can be rotated")
	}
	grace := time.Duration(req.Body.GraceSeconds) * time.Second
	m := credential.NewRelayKey()
	var prev, next store.RelayKey
	err = s.st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if grace == 0 {
			prev, err = tx.RelayKeys().Revoke(ctx, c.actor, req.ID)
		} else {
			prev, err = tx.RelayKeys().Modify(ctx, c.actor, req.ID, func(r *store.RelayKey) error {
				if until := now.Add(grace); r.ExpiresAt == nil || until.Before(*r.ExpiresAt) {
					r.ExpiresAt = &until
				}
				return nil
			})
		}
		if err != nil {
			return err
		}
		next, err = tx.RelayKeys().Create(ctx, c.actor, store.RelayKey{
			KeyHash: m.Hash[:], DisplayPrefix: m.DisplayPrefix, Name: old.Name, ProjectID: old.ProjectID,
			ServiceAccountID: old.ServiceAccountID, UserID: old.UserID, PolicyID: old.PolicyID,
			Priority: old.Priority, ExpiresAt: old.ExpiresAt,
		})
		return err
	})
	if prev, err = found("relay key", prev, err); err != nil {
		return nil, err
	}
	return gen.RotateRelayKey201JSONResponse{RelayKey: s.relayKeyOut(next), Secret: m.Plaintext, Previous: s.relayKeyOut(prev)}, nil
}

// Inference tokens --------------------------------------------------------------

const (
	defaultTokenTTL = time.Hour
	maxTokenTTL     = 24 * time.Hour
)

// CreateInferenceToken implements StrictServerInterface: a signed-in user
// with MintOwn on the project mints a token for itself.
func (s *Server) CreateInferenceToken(ctx context.Context, req gen.CreateInferenceTokenRequestObject) (gen.CreateInferenceTokenResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if c.user == nil {
		return nil, forbidden("inference tokens are minted for a signed-in user; the admin token has none")
	}
	b := req.Body
	sc, err := s.readableProject(ctx, c, "project_id", b.ProjectID)
	if err != nil {
		return nil, err
	}
	if err := can403(c, rbac.MintOwn, sc); err != nil {
		return nil, err
	}
	ttl := defaultTokenTTL
	if b.TTLSeconds != nil {
		ttl = min(time.Duration(*b.TTLSeconds)*time.Second, maxTokenTTL)
	}
	m := credential.NewInferenceToken()
	row, err := s.st.InferenceTokens().Create(ctx, c.actor, store.InferenceToken{
		TokenHash: m.Hash[:], UserID: c.user.ID, ProjectID: b.ProjectID, ExpiresAt: s.now().Add(ttl),
	})
	if err != nil {
		return nil, err
	}
	return gen.CreateInferenceToken201JSONResponse{InferenceToken: s.inferenceTokenOut(row), Secret: m.Plaintext}, nil
}

// ListInferenceTokens implements StrictServerInterface: the caller's own
// tokens and those of the projects it manages (all for the admin token).
func (s *Server) ListInferenceTokens(ctx context.Context, req gen.ListInferenceTokensRequestObject) (gen.ListInferenceTokensResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.InferenceTokens().ListVisible(ctx, store.InferenceTokensPage{
		After: after, UserID: req.Params.UserID, ProjectID: req.Params.ProjectID, Limit: fetch,
	}, storeReach(c, rbac.ManageProject))
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.InferenceToken) uuid.UUID { return r.ID })
	return gen.ListInferenceTokens200JSONResponse{Items: convertAll(rows, s.inferenceTokenOut), NextCursor: next}, nil
}

// RevokeInferenceToken implements StrictServerInterface: one's own tokens,
// or any token of a project one manages; others are not found.
func (s *Server) RevokeInferenceToken(ctx context.Context, req gen.RevokeInferenceTokenRequestObject) (gen.RevokeInferenceTokenResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	t, err := got(s.st.InferenceTokens().Get(ctx, req.ID)).orNotFound("inference token")
	if err != nil {
		return nil, err
	}
	if t.UserID != c.User() {
		sc, err := s.projectScope(ctx, t.ProjectID)
		if err != nil || !c.Can(rbac.ManageProject, sc) {
			return nil, notFound("inference token")
		}
	}
	if _, err := got(s.st.InferenceTokens().Revoke(ctx, c.actor, req.ID)).orNotFound("inference token"); err != nil {
		return nil, err
	}
	return gen.RevokeInferenceToken204Response{}, nil
}
