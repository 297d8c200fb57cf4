// Package bridge joins the inference plane to the control plane in one
// process: it builds the values controlapi.Config takes — the route explain
// and the breakers — from the router and the key pool, so that the control
// plane links neither (internal/depban holds it to that). relay serve wires
// them; tests of the control plane and the console may too.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
)

// Explainer returns the control plane's route explain: the router's
// ExplainBody, the function the inference plane's decision is built from,
// with supports saying which upstream shapes serve an inbound shape
// (translator.Supports in relay serve; nil: routing.SameShape) and the
// proxy's live figures stats (nil: latency and least_busy keep the position
// order), so an explain says what a request sent now would get.
func Explainer(supports routing.Supports, stats routing.Stats) controlapi.Explainer {
	return func(q controlapi.ExplainQuery) (controlapi.Explained, error) {
		r := routing.Router{Supports: supports, Stats: stats}
		if q.Held != nil {
			r.Breakers = heldBreakers(q.Held)
		}
		e, err := r.ExplainBody(q.Snapshot, q.Policy, q.Project, q.Model, q.Inbound, q.Body, q.Header, q.Now)
		raw, merr := json.Marshal(e)
		if merr != nil {
			return controlapi.Explained{}, fmt.Errorf("encode the route explanation: %w", merr)
		}
		out := controlapi.Explained{JSON: raw}
		if err != nil {
			out.Refusal = err.Error()
		}
		return out, nil
	}
}

// heldKey is a key's own hold (model "") or its hold for one upstream model.
type heldKey struct {
	ref   keypool.KeyRef
	model string
}

// heldSet is breakers the explain only asks: a listed key is not ready,
// every other is. Nothing is claimed, recorded or cleared.
type heldSet map[heldKey]bool

func heldBreakers(held []controlapi.HeldKey) heldSet {
	h := heldSet{}
	for _, k := range held {
		h[heldKey{keypool.KeyRef{ID: k.HostKeyID, Version: k.SecretVersion}, k.Model}] = true
	}
	return h
}

func (h heldSet) Ready(ref keypool.KeyRef, model string, _ time.Time) bool {
	return !h[heldKey{ref, ""}] && (model == "" || !h[heldKey{ref, model}])
}

func (h heldSet) Acquire(ref keypool.KeyRef, model string, now time.Time) (keypool.Ticket, bool) {
	return keypool.Ticket{}, h.Ready(ref, model, now)
}

func (heldSet) Report(keypool.Ticket, keypool.Result, time.Time) {}
func (heldSet) Panicable(keypool.KeyRef, string, time.Time) (time.Time, bool) {
	return time.Time{}, true // the explain knows holds, not their kinds
}
func (heldSet) States(time.Time) []keypool.KeyState { return nil }
func (heldSet) Clear(context.Context, snapshot.ID, string, time.Time) ([]keypool.KeyState, error) {
	return nil, errors.New("the routing explain clears no breakers")
}

// Breakers adapts the key pool's breakers to controlapi.Config's Breakers
// and ClearBreakers; now is the clock the holds are read against.
func Breakers(b keypool.Breakers, now func() time.Time) (func() []controlapi.BreakerState, controlapi.BreakerClearer) {
	list := func() []controlapi.BreakerState { return breakerStates(b.States(now())) }
	clearHolds := func(ctx context.Context, id uuid.UUID, model string) ([]controlapi.BreakerState, error) {
		cleared, err := b.Clear(ctx, id, model, now())
		return breakerStates(cleared), err
	}
	return list, clearHolds
}

func breakerStates(in []keypool.KeyState) []controlapi.BreakerState {
	out := make([]controlapi.BreakerState, 0, len(in))
	for _, k := range in {
		out = append(out, controlapi.BreakerState{
			HostKeyID: k.Ref.ID, SecretVersion: int32(k.Version), Model: k.Model,
			State: string(k.State), Hold: string(k.State), ConsecutiveFailures: int32(k.Failures),
			Reason: k.LastReason, OpenedAt: k.LastAt, RetryAt: k.Until,
		})
	}
	return out
}
