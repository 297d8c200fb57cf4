package controlapi

import (
	"context"
	"errors"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
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

// ListHostKeys is the operation of the same name in openapi/control.yaml.
func (v *Service) ListHostKeys(ctx context.Context, params models.ListHostKeysParams) (out models.HostKeyList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListHostKeys")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	_, ok, err := systemList(ctx, rbac.Read)
	if err != nil || !ok {
		return models.HostKeyList{Items: []models.HostKey{}}, err
	}
	rows, err := s.st.HostKeys().List(ctx, store.HostKeysPage{After: after, HostID: params.HostID, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.HostKey) uuid.UUID { return r.ID }, hostKeyOut)
	return out, err
}

// CreateHostKey is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateHostKey(ctx context.Context, body *models.HostKeyCreate) (out models.HostKey, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateHostKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := systemWrite(ctx)
	if err != nil {
		return out, err
	}
	b := body
	ref, sealed, err := s.sealSecret(b.Secret, b.SecretRef, true)
	if err != nil {
		return out, err
	}
	if err := got(s.st.Hosts().Get(ctx, b.HostID)).exists("host_id", "host"); err != nil {
		return out, err
	}
	if b.TierRateLimitID != nil {
		if err := got(s.st.RateLimits().Get(ctx, *b.TierRateLimitID)).exists("tier_rate_limit_id", "rate limit"); err != nil {
			return out, err
		}
	}
	row, err := s.st.HostKeys().Create(ctx, c.actor, store.HostKey{
		HostID: b.HostID, Slug: b.Slug, SecretRef: ref, SecretCiphertext: sealed, SecretVersion: 1,
		TierRateLimitID: b.TierRateLimitID, Position: deref(b.Position, 0), Enabled: deref(b.Enabled, true),
	})
	if err != nil {
		return out, err
	}
	return hostKeyOut(row), nil
}

// GetHostKey is the operation of the same name in openapi/control.yaml.
func (v *Service) GetHostKey(ctx context.Context, id uuid.UUID) (out models.HostKey, err error) {
	s, ctx, done, err := v.enter(ctx, "GetHostKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := systemRow(ctx, "host key", rbac.Read, false, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	return hostKeyOut(row), nil
}

// UpdateHostKey is the operation of the same name in openapi/control.yaml. A new secret (value or
// reference) and the other fields change in one transaction; the secret
// change bumps secret_version.
func (v *Service) UpdateHostKey(ctx context.Context, id uuid.UUID, body *models.HostKeyUpdate) (out models.HostKey, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateHostKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	b := body
	ref, sealed, err := s.sealSecret(b.Secret, b.SecretRef, false)
	if err != nil {
		return out, err
	}
	if id, ok := b.TierRateLimitID.Get(); ok {
		if err := got(s.st.RateLimits().Get(ctx, id)).exists("tier_rate_limit_id", "rate limit"); err != nil {
			return out, err
		}
	}
	var row store.HostKey
	err = s.st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		row, err = tx.HostKeys().Modify(ctx, c.actor, id, func(r *store.HostKey) error {
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
		row, err = tx.HostKeys().SetSecret(ctx, c.actor, id, ref, sealed)
		return err
	})
	if row, err = found("host key", row, err); err != nil {
		return out, err
	}
	return hostKeyOut(row), nil
}

// DeleteHostKey is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteHostKey(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteHostKey")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, id) })
	if err != nil {
		return err
	}
	if _, err := found("host key", struct{}{}, s.st.HostKeys().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// TestHostKey is the operation of the same name in openapi/control.yaml.
func (v *Service) TestHostKey(ctx context.Context, id uuid.UUID) (out models.HostKeyTestResult, err error) {
	s, ctx, done, err := v.enter(ctx, "TestHostKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	if _, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, id) }); err != nil {
		return out, err
	}
	if s.cfg.HostKeyTester == nil {
		return out, &apiError{status: 501, code: codeNotImplemented, message: "host key tests are not available in this build of Relay"}
	}
	res, err := s.cfg.HostKeyTester(ctx, id)
	if err != nil {
		return out, err
	}
	out = models.HostKeyTestResult{
		Ok: res.OK, LatencyMs: int32(res.Latency.Milliseconds()), Message: res.Message, TestedAt: s.now(),
	}
	if res.UpstreamStatus != 0 {
		st := int32(res.UpstreamStatus)
		out.UpstreamStatus = &st
	}
	return out, nil
}
