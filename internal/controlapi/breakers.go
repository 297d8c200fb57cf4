package controlapi

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
)

// Breakers: listing needs Read at system scope (holds name host keys);
// clearing needs ManageSystem and writes an audit row.

// ListBreakers is the operation of the same name in openapi/control.yaml.
func (v *Service) ListBreakers(ctx context.Context, params models.ListBreakersParams) (out models.BreakerList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListBreakers")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	if err := can403(c, rbac.Read, rbac.System()); err != nil {
		return out, err
	}
	items := []models.Breaker{}
	if s.cfg.Breakers == nil {
		return models.BreakerList{Items: items}, nil
	}
	hosts := map[uuid.UUID]uuid.UUID{} // host key → host, one lookup per key
	for _, b := range s.cfg.Breakers() {
		state := breakerState(b.State)
		if params.State != nil && *params.State != state {
			continue
		}
		if b.HostID == uuid.Nil {
			hostID, ok := hosts[b.HostKeyID]
			if !ok {
				k, err := s.st.HostKeys().Get(ctx, b.HostKeyID)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return out, err
				}
				hostID = k.HostID // uuid.Nil when the key is gone
				hosts[b.HostKeyID] = hostID
			}
			if hostID == uuid.Nil {
				continue // the key is gone; its breaker will be forgotten
			}
			b.HostID = hostID
		}
		if params.HostID != nil && *params.HostID != b.HostID {
			continue
		}
		items = append(items, breakerOut(b))
	}
	return models.BreakerList{Items: items}, nil
}

// ClearBreakers is the operation of the same name in openapi/control.yaml.
func (v *Service) ClearBreakers(ctx context.Context, params models.ClearBreakersParams) (out models.BreakerList, err error) {
	s, ctx, done, err := v.enter(ctx, "ClearBreakers")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, key, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, params.HostKeyID) })
	if err != nil {
		return out, err
	}
	if s.cfg.ClearBreakers == nil {
		return out, &apiError{status: 501, code: codeNotImplemented, message: "this control plane has no breakers to clear"}
	}
	var model string
	if params.Model != nil {
		model = *params.Model
	}
	cleared, err := s.cfg.ClearBreakers(ctx, params.HostKeyID, model)
	if err != nil {
		return out, err
	}
	items := make([]models.Breaker, 0, len(cleared))
	holds := make([]string, 0, len(cleared))
	for _, b := range cleared {
		b.HostID = key.HostID
		items = append(items, breakerOut(b))
		h := b.Hold
		if b.Model != "" {
			h = b.Model + ": " + h
		}
		holds = append(holds, h)
	}
	// The audit row says what was asked and what it closed.
	type breakerClear struct {
		HostKeyID uuid.UUID
		Model     string
		Cleared   []string
	}
	if err := s.st.InTx(ctx, func(tx *store.Tx) error {
		return tx.Audit(ctx, c.actor, "delete", "breakers", params.HostKeyID.String(), nil,
			breakerClear{HostKeyID: params.HostKeyID, Model: model, Cleared: holds})
	}); err != nil {
		return out, err
	}
	return models.BreakerList{Items: items}, nil
}

func breakerOut(b BreakerState) models.Breaker {
	out := models.Breaker{
		HostKeyID: b.HostKeyID, HostID: b.HostID, SecretVersion: b.SecretVersion,
		Scope: models.BreakerScopeKey, State: breakerState(b.State), Hold: breakerHold(b.Hold),
		ConsecutiveFailures: b.ConsecutiveFailures, Reason: b.Reason,
		OpenedAt: timePtr(b.OpenedAt), RetryAt: timePtr(b.RetryAt),
	}
	if b.Model != "" {
		out.Scope, out.Model = models.BreakerScopeModel, &b.Model
	}
	return out
}

// breakerState maps an implementation's state to the API's three.
func breakerState(s string) models.BreakerState {
	switch st := models.BreakerState(strings.ToLower(s)); st {
	case models.BreakerStateClosed, models.BreakerStateHalfOpen:
		return st
	default:
		return models.BreakerStateOpen
	}
}

// breakerHold maps an implementation's state to the API's holds.
func breakerHold(s string) models.BreakerHold {
	if h := models.BreakerHold(strings.ToLower(s)); h.Valid() {
		return h
	}
	return models.BreakerHoldOpen
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
