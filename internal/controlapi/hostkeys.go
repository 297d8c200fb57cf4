package controlapi

import (
	"context"
	"errors"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
	gen "github.com/relay-llm/relay/openapi/controlgen"
)

// Host keys: the value is write-only. A request's secret is sealed at once
// (secret.Box, AES-256-GCM) and only the ciphertext goes to the store; no
// response, error or log line carries it.

// sealSecret turns the write-only fields of a host key body into what the
// store keeps: an env reference, or ciphertext. Exactly one of them when
// required; at most one otherwise (neither: nil, nil, nil).
func (s *Server) sealSecret(value, ref *string, required bool) (*string, []byte, error) {
	switch {
	case value != nil && ref != nil:
		return nil, nil, exactlyOne("secret", "secret_ref")
	case ref != nil:
		if err := s.cfg.Box.CheckRef(*ref); err != nil {
			return nil, nil, invalid("secret_ref: "+err.Error(), "secret_ref")
		}
		return ref, nil, nil
	case value != nil:
		sealed, err := s.cfg.Box.Seal(*value)
		if errors.Is(err, secret.ErrNoMasterKey) {
			return nil, nil, invalid("secret: Relay has no master key (RELAY_MASTER_KEY) to seal it with; use secret_ref", "secret")
		}
		if err != nil {
			return nil, nil, errors.New("seal host key secret") // the cause could name the value's size, nothing more; keep it out anyway
		}
		return nil, sealed, nil
	case required:
		return nil, nil, exactlyOne("secret", "secret_ref")
	}
	return nil, nil, nil
}

// ListHostKeys implements StrictServerInterface.
func (s *Server) ListHostKeys(ctx context.Context, req gen.ListHostKeysRequestObject) (gen.ListHostKeysResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	_, ok, err := systemList(ctx, rbac.Read)
	if err != nil || !ok {
		return gen.ListHostKeys200JSONResponse{Items: []models.HostKey{}}, err
	}
	rows, err := s.st.HostKeys().List(ctx, store.HostKeysPage{After: after, HostID: req.Params.HostID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.HostKey) uuid.UUID { return r.ID })
	return gen.ListHostKeys200JSONResponse{Items: convertAll(rows, hostKeyOut), NextCursor: next}, nil
}

// CreateHostKey implements StrictServerInterface.
func (s *Server) CreateHostKey(ctx context.Context, req gen.CreateHostKeyRequestObject) (gen.CreateHostKeyResponseObject, error) {
	c, err := systemWrite(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	ref, sealed, err := s.sealSecret(b.Secret, b.SecretRef, true)
	if err != nil {
		return nil, err
	}
	if err := got(s.st.Hosts().Get(ctx, b.HostID)).exists("host_id", "host"); err != nil {
		return nil, err
	}
	if b.TierRateLimitID != nil {
		if err := got(s.st.RateLimits().Get(ctx, *b.TierRateLimitID)).exists("tier_rate_limit_id", "rate limit"); err != nil {
			return nil, err
		}
	}
	row, err := s.st.HostKeys().Create(ctx, c.actor, store.HostKey{
		HostID: b.HostID, Slug: b.Slug, SecretRef: ref, SecretCiphertext: sealed, SecretVersion: 1,
		TierRateLimitID: b.TierRateLimitID, Position: deref(b.Position, 0), Enabled: deref(b.Enabled, true),
	})
	if err != nil {
		return nil, err
	}
	return gen.CreateHostKey201JSONResponse(hostKeyOut(row)), nil
}

// GetHostKey implements StrictServerInterface.
func (s *Server) GetHostKey(ctx context.Context, req gen.GetHostKeyRequestObject) (gen.GetHostKeyResponseObject, error) {
	_, row, err := systemRow(ctx, "host key", rbac.Read, false, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	return gen.GetHostKey200JSONResponse(hostKeyOut(row)), nil
}

// UpdateHostKey implements StrictServerInterface. A new secret (value or
// reference) and the other fields change in one transaction; the secret
// change bumps secret_version.
func (s *Server) UpdateHostKey(ctx context.Context, req gen.UpdateHostKeyRequestObject) (gen.UpdateHostKeyResponseObject, error) {
	c, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	b := req.Body
	ref, sealed, err := s.sealSecret(b.Secret, b.SecretRef, false)
	if err != nil {
		return nil, err
	}
	if id, ok := b.TierRateLimitID.Get(); ok {
		if err := got(s.st.RateLimits().Get(ctx, id)).exists("tier_rate_limit_id", "rate limit"); err != nil {
			return nil, err
		}
	}
	var row store.HostKey
	err = s.st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		row, err = tx.HostKeys().Modify(ctx, c.actor, req.ID, func(r *store.HostKey) error {
			set(&r.Slug, b.Slug)
			if b.TierRateLimitID.IsSpecified() {
				r.TierRateLimitID = b.TierRateLimitID.Pointer()
			}
			set(&r.Position, b.Position)
			set(&r.Enabled, b.Enabled)
			return nil
		})
		if err != nil || (ref == nil && sealed == nil) {
			return err
		}
		row, err = tx.HostKeys().SetSecret(ctx, c.actor, req.ID, ref, sealed)
		return err
	})
	if row, err = found("host key", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateHostKey200JSONResponse(hostKeyOut(row)), nil
}

// DeleteHostKey implements StrictServerInterface.
func (s *Server) DeleteHostKey(ctx context.Context, req gen.DeleteHostKeyRequestObject) (gen.DeleteHostKeyResponseObject, error) {
	c, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	if _, err := found("host key", struct{}{}, s.st.HostKeys().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeleteHostKey204Response{}, nil
}

// TestHostKey implements StrictServerInterface.
func (s *Server) TestHostKey(ctx context.Context, req gen.TestHostKeyRequestObject) (gen.TestHostKeyResponseObject, error) {
	if _, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, req.ID) }); err != nil {
		return nil, err
	}
	if s.cfg.HostKeyTester == nil {
		return nil, &apiError{status: 501, code: codeNotImplemented, message: "host key tests are not available in this build of Relay"}
	}
	res, err := s.cfg.HostKeyTester(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	out := gen.TestHostKey200JSONResponse{
		Ok: res.OK, LatencyMs: int32(res.Latency.Milliseconds()), Message: res.Message, TestedAt: s.now(),
	}
	if res.UpstreamStatus != 0 {
		st := int32(res.UpstreamStatus)
		out.UpstreamStatus = &st
	}
	return out, nil
}
