package usage_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/internal/wire"
)

// A finished batch's event costs half of the same usage made request by
// request, the cache saving too.
func TestNewEvent_BatchAtTheBatchPrice(t *testing.T) {
	t.Parallel()
	m := &snapshot.Model{ID: uuid.New(), Name: "m", Kind: "chat"}
	h := &snapshot.Host{ID: uuid.New(), Slug: "h", Enabled: true}
	b := &snapshot.Binding{ID: uuid.New(), ModelID: m.ID, HostID: h.ID, Shape: wire.ShapeOpenAI, Enabled: true,
		Pricing: snapshot.Pricing{Input: 3_000_000, CachedInput: 300_000, CacheWrite: 3_750_000, Output: 15_000_000, Reasoning: 15_000_000}}
	snap := snapshot.Build(&snapshot.Data{Models: []*snapshot.Model{m}, Hosts: []*snapshot.Host{h}, Bindings: []*snapshot.Binding{b}}, 1, time.Now())
	rec := event.Record{RequestID: "batch_1", BindingID: b.ID, Inbound: "batch",
		Usage: wire.Usage{Input: 1000, CacheRead: 600, CacheWrite: 100, Output: 200, Reasoning: 50}}
	one := usage.NewEvent(&rec, snap)
	rec.Batch = true
	batch := usage.NewEvent(&rec, snap)
	if one.Cost != 4_455_000 || batch.Cost != 2_227_500 {
		t.Fatalf("cost %d one by one, %d in a batch; want 4455000 and 2227500", one.Cost, batch.Cost)
	}
	if batch.Saved*2 != one.Saved || batch.Saved == 0 {
		t.Fatalf("saved %d one by one, %d in a batch", one.Saved, batch.Saved)
	}
}

// A response cache hit's event costs nothing and saved what the proxy
// priced the cached answer at, whatever its binding says now.
func TestNewEvent_CacheHitSaved(t *testing.T) {
	t.Parallel()
	rec := event.Record{RequestID: "hit_1", Cache: "hit", CacheSaved: wire.Usage{Input: 100, Output: 20}, CacheBindingID: uuid.New(), CacheSavedCost: 1234}
	ev := usage.NewEvent(&rec, nil)
	if ev.Cost != 0 || ev.Saved != 1234 {
		t.Fatalf("hit: cost %d saved %d, want 0 and 1234", ev.Cost, ev.Saved)
	}
	rec.Cache = "miss"
	if ev := usage.NewEvent(&rec, nil); ev.Saved != 0 {
		t.Fatalf("miss: saved %d", ev.Saved)
	}
}
