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

// ListRelayKeys is the operation of the same name in openapi/control.yaml.
func (v *Service) ListRelayKeys(ctx context.Context, params models.ListRelayKeysParams) (out models.RelayKeyList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListRelayKeys")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	p := params
	rows, err := s.st.RelayKeys().ListVisible(ctx, store.RelayKeysPage{
		After: after, ProjectID: p.ProjectID, ServiceAccountID: p.ServiceAccountID, UserID: p.UserID, Limit: fetch,
	}, storeReach(c, rbac.Read))
	if err != nil {
		return out, err
	}
	rows, next := cut(rows, fetch, func(r store.RelayKey) uuid.UUID { return r.ID })
	return models.RelayKeyList{Items: convertAll(rows, s.relayKeyOut), NextCursor: next}, nil
}

// CreateRelayKey is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateRelayKey(ctx context.Context, body *models.RelayKeyCreate) (out models.RelayKeyCreated, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateRelayKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	b := body
	sc, err := s.readableProject(ctx, c, "project_id", b.ProjectID)
	if err != nil {
		return out, err
	}
	if count(b.ServiceAccountID, b.UserID) != 1 {
		return out, exactlyOne("service_account_id", "user_id")
	}
	if !c.Can(rbac.ManageProject, sc) {
		switch {
		case !c.Can(rbac.MintOwn, sc):
			return out, forbidden(rbac.Need(rbac.MintOwn, sc))
		case b.UserID == nil || *b.UserID != c.User():
			return out, forbidden("you may mint relay keys for yourself only; keys of others and of service accounts need manage_project")
		case b.PolicyID != nil || b.Priority != nil:
			return out, forbidden("choosing a relay key's policy or priority needs manage_project")
		}
	}
	if b.ServiceAccountID != nil {
		if err := s.checkSubject(ctx, c, b.ProjectID, b.ServiceAccountID, nil, nil); err != nil {
			return out, err
		}
	} else if err := s.checkSubject(ctx, c, b.ProjectID, nil, b.UserID, nil); err != nil {
		return out, err
	} else if err := s.memberOf(ctx, *b.UserID, sc); err != nil {
		return out, err
	}
	if b.PolicyID != nil {
		if err := s.attachablePolicy(ctx, c, "policy_id", *b.PolicyID, sc); err != nil {
			return out, err
		}
	}
	if b.ExpiresAt != nil && !b.ExpiresAt.After(s.now()) {
		return out, invalid("expires_at: must be in the future", "expires_at")
	}
	m := credential.NewRelayKey()
	row, err := s.st.RelayKeys().Create(ctx, c.actor, store.RelayKey{
		KeyHash: m.Hash[:], DisplayPrefix: m.DisplayPrefix, Name: deref(b.Name, ""), ProjectID: b.ProjectID,
		ServiceAccountID: b.ServiceAccountID, UserID: b.UserID, PolicyID: b.PolicyID, Priority: b.Priority,
		ExpiresAt: b.ExpiresAt,
	})
	if err != nil {
		return out, err
	}
	return models.RelayKeyCreated{RelayKey: s.relayKeyOut(row), Secret: m.Plaintext}, nil
}

// GetRelayKey is the operation of the same name in openapi/control.yaml.
func (v *Service) GetRelayKey(ctx context.Context, id uuid.UUID) (out models.RelayKey, err error) {
	s, ctx, done, err := v.enter(ctx, "GetRelayKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, k, _, err := projectRow(ctx, s, "relay key", 0, func() (store.RelayKey, error) { return s.st.RelayKeys().Get(ctx, id) }, relayKeyProject)
	if err != nil {
		return out, err
	}
	return s.relayKeyOut(k), nil
}

// UpdateRelayKey is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateRelayKey(ctx context.Context, id uuid.UUID, body *models.RelayKeyUpdate) (out models.RelayKey, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateRelayKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, sc, manager, err := s.relayKeyForWrite(ctx, id)
	if err != nil {
		return out, err
	}
	b := body
	if !manager && (b.PolicyID.IsSpecified() || b.Priority.IsSpecified()) {
		return out, forbidden("changing a relay key's policy or priority needs manage_project")
	}
	if id, ok := b.PolicyID.Get(); ok {
		if err := s.attachablePolicy(ctx, c, "policy_id", id, sc); err != nil {
			return out, err
		}
	}
	if t, ok := b.ExpiresAt.Get(); ok && !t.After(s.now()) {
		return out, invalid("expires_at: must be in the future (revoke the key to stop it now)", "expires_at")
	}
	row, err := s.st.RelayKeys().Modify(ctx, c.actor, id, func(r *store.RelayKey) error {
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
		return out, err
	}
	return s.relayKeyOut(row), nil
}

// DeleteRelayKey is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteRelayKey(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteRelayKey")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, _, _, err := s.relayKeyForWrite(ctx, id)
	if err != nil {
		return err
	}
	if _, err := found("relay key", struct{}{}, s.st.RelayKeys().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// RevokeRelayKey is the operation of the same name in openapi/control.yaml.
func (v *Service) RevokeRelayKey(ctx context.Context, id uuid.UUID) (out models.RelayKey, err error) {
	s, ctx, done, err := v.enter(ctx, "RevokeRelayKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, _, _, err := s.relayKeyForWrite(ctx, id)
	if err != nil {
		return out, err
	}
	row, err := got(s.st.RelayKeys().Revoke(ctx, c.actor, id)).orNotFound("relay key")
	if err != nil {
		return out, err
	}
	return s.relayKeyOut(row), nil
}

// RotateRelayKey is the operation of the same name in openapi/control.yaml. In one transaction: the
// old key's expires_at moves to now + grace (never later than it was) — or,
// with grace 0, the old key is revoked at once — and a new key is minted with
// the old one's name, owner, project, policy, priority and expiry. The
// snapshot honours expires_at, so the old key works exactly until then.
func (v *Service) RotateRelayKey(ctx context.Context, id uuid.UUID, body *models.RelayKeyRotate) (out models.RelayKeyRotated, err error) {
	s, ctx, done, err := v.enter(ctx, "RotateRelayKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, old, _, _, err := s.relayKeyForWrite(ctx, id)
	if err != nil {
		return out, err
	}
	now := s.now()
	if st := credentialStatus(now, old.ExpiresAt, old.RevokedAt); st != models.CredentialStatusActive {
		return out, conflict("the relay key is " + string(st) + "; only an active key can be rotated")
	}
	grace := time.Duration(body.GraceSeconds) * time.Second
	m := credential.NewRelayKey()
	var prev, next store.RelayKey
	err = s.st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if grace == 0 {
			prev, err = tx.RelayKeys().Revoke(ctx, c.actor, id)
		} else {
			prev, err = tx.RelayKeys().Modify(ctx, c.actor, id, func(r *store.RelayKey) error {
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
		return out, err
	}
	return models.RelayKeyRotated{RelayKey: s.relayKeyOut(next), Secret: m.Plaintext, Previous: s.relayKeyOut(prev)}, nil
}

// Inference tokens --------------------------------------------------------------

const (
	defaultTokenTTL = time.Hour
	maxTokenTTL     = 24 * time.Hour
)

// CreateInferenceToken implements StrictServerInterface: a signed-in user
// with MintOwn on the project mints a token for itself.
func (v *Service) CreateInferenceToken(ctx context.Context, body *models.InferenceTokenCreate) (out models.InferenceTokenCreated, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateInferenceToken")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	if c.user == nil {
		return out, forbidden("inference tokens are minted for a signed-in user; the admin token has none")
	}
	b := body
	sc, err := s.readableProject(ctx, c, "project_id", b.ProjectID)
	if err != nil {
		return out, err
	}
	if err := can403(c, rbac.MintOwn, sc); err != nil {
		return out, err
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
		return out, err
	}
	return models.InferenceTokenCreated{InferenceToken: s.inferenceTokenOut(row), Secret: m.Plaintext}, nil
}

// ListInferenceTokens implements StrictServerInterface: the caller's own
// tokens and those of the projects it manages (all for the admin token).
func (v *Service) ListInferenceTokens(ctx context.Context, params models.ListInferenceTokensParams) (out models.InferenceTokenList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListInferenceTokens")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	rows, err := s.st.InferenceTokens().ListVisible(ctx, store.InferenceTokensPage{
		After: after, UserID: params.UserID, ProjectID: params.ProjectID, Limit: fetch,
	}, storeReach(c, rbac.ManageProject))
	if err != nil {
		return out, err
	}
	rows, next := cut(rows, fetch, func(r store.InferenceToken) uuid.UUID { return r.ID })
	return models.InferenceTokenList{Items: convertAll(rows, s.inferenceTokenOut), NextCursor: next}, nil
}

// RevokeInferenceToken implements StrictServerInterface: one's own tokens,
// or any token of a project one manages; others are not found.
func (v *Service) RevokeInferenceToken(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "RevokeInferenceToken")
	if err != nil {
		return err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return err
	}
	t, err := got(s.st.InferenceTokens().Get(ctx, id)).orNotFound("inference token")
	if err != nil {
		return err
	}
	if t.UserID != c.User() {
		sc, err := s.projectScope(ctx, t.ProjectID)
		if err != nil || !c.Can(rbac.ManageProject, sc) {
			return notFound("inference token")
		}
	}
	if _, err := got(s.st.InferenceTokens().Revoke(ctx, c.actor, id)).orNotFound("inference token"); err != nil {
		return err
	}
	return nil
}
