package usage

import (
	"encoding/json"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
)

// Event is one request as the ledger stores it: the proxy's Record and its
// cost.
type Event struct {
	event.Record
	// Cost in nano-units of currency (1e-9).
	Cost int64
	// Saved is what the prompt-cache reads saved, in nano-units: the
	// cache-read tokens at the input price minus at the cached input price.
	Saved int64
	// Unpriced is set when the request has a binding the current snapshot no
	// longer holds (deleted while the request ran): its cost is 0.
	Unpriced bool

	// Where the writer's journal holds the event (nil: nowhere).
	jseg *jsegment
	jidx int32
}

// NewEvent prices rec with its binding in snap (nil: unpriced).
func NewEvent(rec *event.Record, snap *snapshot.Snapshot) Event {
	ev := Event{Record: *rec}
	if rec.Cache == "hit" {
		// Nothing went upstream: the hit saved what the answer cost when
		// it was produced (priced by the proxy as it served it).
		ev.Saved = rec.CacheSavedCost
	}
	if rec.CallPrice > 0 {
		// A fixed price per call (an MCP tool call), micro- to nano-units.
		ev.Cost = rec.CallPrice * 1000
		if rec.CallPrice > math.MaxInt64/1000 {
			ev.Cost = math.MaxInt64
		}
	}
	if rec.BindingID == uuid.Nil {
		return ev // refused before routing (or not a model call): no binding's cost
	}
	var b *snapshot.Binding
	if snap != nil {
		b = snap.Binding(rec.BindingID)
	}
	if b == nil {
		ev.Unpriced = true
		return ev
	}
	r := pricing.RatesFor(&b.Pricing, rec.Usage.Input)
	if rec.Batch {
		ev.Cost = satAdd(ev.Cost, pricing.BatchCostAt(r, rec.Usage))
		ev.Saved = pricing.BatchSavedAt(r, rec.Usage)
		return ev
	}
	ev.Cost = satAdd(ev.Cost, satAdd(pricing.CostAt(r, rec.Usage), pricing.UnitCost(&b.Pricing, rec.Units)))
	ev.Saved = pricing.SavedAt(r, rec.Usage)
	return ev
}

// satAdd adds two non-negative costs, saturating at MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// row is the ledger row of e. Its identifier pointers point into e, which
// must outlive the row.
func (e *Event) row() store.UsageEvent {
	r := &e.Record
	row := store.UsageEvent{
		RequestID:        r.RequestID,
		ClientRequestID:  optString(&r.ClientRequestID),
		CreatedAt:        r.At,
		ServiceAccountID: ref(&r.ServiceAccountID),
		UserID:           ref(&r.UserID),
		ProjectID:        ref(&r.ProjectID),
		TeamID:           ref(&r.TeamID),
		PolicyID:         ref(&r.PolicyID),
		Model:            r.Model,
		BindingID:        ref(&r.BindingID),
		HostID:           ref(&r.HostID),
		HostKeyID:        ref(&r.HostKeyID),
		InboundShape:     r.Inbound,
		UpstreamShape:    string(r.Upstream),
		Stream:           r.Stream,
		Status:           int32(r.Status),
		ErrorKind:        r.ErrorKind,
		Attempts:         int32(r.Attempts),
		InputTokens:      r.Usage.Input,
		OutputTokens:     r.Usage.Output,
		CachedReadTokens: r.Usage.CacheRead,
		CacheWriteTokens: r.Usage.CacheWrite,
		ReasoningTokens:  r.Usage.Reasoning,
		Cost:             e.Cost,
		Saved:            e.Saved,
		Route:            optString(&r.Route),
		RouteDetail:      routeDetail(r.RouteDetail),
		TTFBMs:           clamp32(r.TimeToFirstByte / time.Millisecond),
		TotalMs:          clamp32(r.Total / time.Millisecond),
		OverheadUs:       clamp32(r.Overhead / time.Microsecond),
	}
	switch r.CredentialKind {
	case snapshot.CredentialInferenceToken:
		row.InferenceTokenID = ref(&r.CredentialID)
	default:
		row.RelayKeyID = ref(&r.CredentialID)
	}
	return row
}

// routeDetail is the decision for the ledger's jsonb column: nil when there
// is none or it is not valid JSON, so that one bad event cannot make
// Postgres refuse the whole batch.
func routeDetail(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return b
}

// ref is nil for uuid.Nil, else id.
func ref(id *uuid.UUID) *uuid.UUID {
	if *id == uuid.Nil {
		return nil
	}
	return id
}

// optString is nil for "", else s.
func optString(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

func clamp32(d time.Duration) int32 {
	return int32(min(max(int64(d), 0), math.MaxInt32))
}
