package store

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestRouteCatalog_CatalogFields round-trips the routing fields of models,
// bindings and policies, their defaults, and the rules the schema keeps.
func TestRouteCatalog_CatalogFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	f := newFixture(t, b, "route")

	// Zero values take the defaults.
	if f.model.Strategy != "priority" || f.model.Fallbacks == nil || len(f.model.Fallbacks) != 0 {
		t.Errorf("new model: strategy %q, fallbacks %#v", f.model.Strategy, f.model.Fallbacks)
	}
	if f.policy.RouteStrategy != "" || f.policy.Affinity != "key" || f.policy.BudgetFallback {
		t.Errorf("new policy: route_strategy %q, affinity %q, budget_fallback %v", f.policy.RouteStrategy, f.policy.Affinity, f.policy.BudgetFallback)
	}
	bind := mk[Binding](t)(s.Bindings().Create(ctx, actor, Binding{ModelID: f.model.ID, HostID: f.host.ID, Shape: "openai", UpstreamModel: "m", PriceTiers: []byte(`[]`)}))
	if bind.Weight != 1 {
		t.Errorf("new binding: weight %d, want 1", bind.Weight)
	}

	// Set values round-trip.
	second := modelRow("model-route-2")
	second.Strategy, second.Fallbacks = "cost", []uuid.UUID{f.model.ID}
	m2 := mk[Model](t)(s.Models().Create(ctx, actor, second))
	third := mk[Model](t)(s.Models().Create(ctx, actor, modelRow("model-route-3")))
	m2 = mk[Model](t)(s.Models().Modify(ctx, actor, m2.ID, func(m *Model) error {
		m.Strategy, m.Fallbacks = "least_busy", []uuid.UUID{third.ID, f.model.ID}
		return nil
	}))
	if got := mk[Model](t)(s.Models().Get(ctx, m2.ID)); got.Strategy != "least_busy" || !slices.Equal(got.Fallbacks, []uuid.UUID{third.ID, f.model.ID}) {
		t.Errorf("model: strategy %q, fallbacks %v", got.Strategy, got.Fallbacks)
	}
	bind = mk[Binding](t)(s.Bindings().Modify(ctx, actor, bind.ID, func(r *Binding) error { r.Weight = 7; return nil }))
	if got := mk[Binding](t)(s.Bindings().Get(ctx, bind.ID)); got.Weight != 7 {
		t.Errorf("binding weight %d, want 7", got.Weight)
	}
	pol := policyRow("policy-route-2")
	pol.RouteStrategy, pol.Affinity, pol.BudgetFallback = "latency", "binding", true
	p2 := mk[Policy](t)(s.Policies().Create(ctx, actor, pol))
	if got := mk[Policy](t)(s.Policies().Get(ctx, p2.ID)); got.RouteStrategy != "latency" || got.Affinity != "binding" || !got.BudgetFallback {
		t.Errorf("policy: %q %q %v", got.RouteStrategy, got.Affinity, got.BudgetFallback)
	}
	if f.policy.DegradeAfterMs != nil || f.policy.DegradeBelowPriority != nil {
		t.Errorf("new policy degrades: %v %v", f.policy.DegradeAfterMs, f.policy.DegradeBelowPriority)
	}
	after, below := int32(250), int32(3)
	p2 = mk[Policy](t)(s.Policies().Modify(ctx, actor, p2.ID, func(r *Policy) error {
		r.DegradeAfterMs, r.DegradeBelowPriority = &after, &below
		return nil
	}))
	if got := mk[Policy](t)(s.Policies().Get(ctx, p2.ID)); got.DegradeAfterMs == nil || *got.DegradeAfterMs != 250 || got.DegradeBelowPriority == nil || *got.DegradeBelowPriority != 3 {
		t.Errorf("policy degrade: %v %v", got.DegradeAfterMs, got.DegradeBelowPriority)
	}

	embedding := modelRow("embed-route")
	embedding.Kind = "embedding"
	emb := mk[Model](t)(s.Models().Create(ctx, actor, embedding))
	setModel := func(id uuid.UUID, fn func(*Model)) func() error {
		return func() error {
			_, err := s.Models().Modify(ctx, actor, id, func(m *Model) error { fn(m); return nil })
			return err
		}
	}
	for _, c := range []struct {
		name string
		do   func() error
		want error
	}{
		{"unknown strategy", setModel(m2.ID, func(m *Model) { m.Strategy = "random" }), ErrInvalid},
		{"itself as fallback", setModel(m2.ID, func(m *Model) { m.Fallbacks = []uuid.UUID{m2.ID} }), ErrInvalid},
		{"a fallback twice", setModel(m2.ID, func(m *Model) { m.Fallbacks = []uuid.UUID{third.ID, third.ID} }), ErrInvalid},
		{"a fallback of another kind", setModel(m2.ID, func(m *Model) { m.Fallbacks = []uuid.UUID{emb.ID} }), ErrInvalid},
		{"a fallback that is no model", setModel(m2.ID, func(m *Model) { m.Fallbacks = []uuid.UUID{uuid.New()} }), ErrReferenced},
		{"a fallback changing kind", setModel(third.ID, func(m *Model) { m.Kind = "embedding" }), ErrInvalid},
		{"weight 0 on update", func() error {
			_, err := s.Bindings().Modify(ctx, actor, bind.ID, func(r *Binding) error { r.Weight = 0; return nil })
			return err
		}, ErrInvalid},
		{"unknown affinity", func() error {
			_, err := s.Policies().Modify(ctx, actor, p2.ID, func(r *Policy) error { r.Affinity = "sticky"; return nil })
			return err
		}, ErrInvalid},
		{"unknown route strategy", func() error {
			_, err := s.Policies().Modify(ctx, actor, p2.ID, func(r *Policy) error { r.RouteStrategy = "fastest"; return nil })
			return err
		}, ErrInvalid},
	} {
		if err := c.do(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}

	// A deleted model leaves every fallback list it was in.
	if err := s.Models().Delete(ctx, actor, third.ID); err != nil {
		t.Fatal(err)
	}
	if got := mk[Model](t)(s.Models().Get(ctx, m2.ID)); !slices.Equal(got.Fallbacks, []uuid.UUID{f.model.ID}) {
		t.Errorf("after deleting a fallback: %v", got.Fallbacks)
	}
	// The snapshot's read carries the fields.
	cat := mk[*Catalog](t)(b.s.ReadCatalog(ctx))
	i := slices.IndexFunc(cat.Models, func(m Model) bool { return m.ID == m2.ID })
	if i < 0 || cat.Models[i].Strategy != "least_busy" || len(cat.Models[i].Fallbacks) != 1 {
		t.Errorf("catalog read of the model: %+v", cat.Models)
	}
}

// TestRouteCatalog_UsageRouteAndSaved stores the routing decision and the money
// the cache saved, and sums saved by binding and host key alike from the
// ledger and from the rollups.
func TestRouteCatalog_UsageRouteAndSaved(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	at := time.Date(2026, 4, 2, 10, 0, 0, 0, time.UTC)
	bindA, bindB, keyA, keyB := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	detail := json.RawMessage(`{"chosen": "a", "candidates": [{"binding": "a", "score": 1}]}`)
	events := []UsageEvent{
		{RequestID: "r1", CreatedAt: at, Model: "m", Status: 200, BindingID: &bindA, HostKeyID: &keyA,
			InputTokens: 1000, CachedReadTokens: 800, Saved: 2000, Route: ptrTo("binding=a; key=1; strategy=priority; affinity=hit"), RouteDetail: detail},
		{RequestID: "r2", CreatedAt: at.Add(time.Minute), Model: "m", Status: 200, BindingID: &bindA, HostKeyID: &keyB,
			InputTokens: 1000, CachedReadTokens: 0, Saved: 0, Route: ptrTo("binding=a; key=2; strategy=priority; affinity=miss")},
		{RequestID: "r3", CreatedAt: at.Add(2 * time.Minute), Model: "m", Status: 200, BindingID: &bindB, HostKeyID: &keyA,
			InputTokens: 500, CachedReadTokens: 400, Saved: 1000},
	}
	if n := mk[int64](t)(s.IngestUsageEvents(ctx, events)); n != 3 {
		t.Fatalf("ingested %d", n)
	}
	rows := mk[[]UsageEvent](t)(s.ListUsageEvents(ctx, UsageEventsPage{From: at, Limit: 10}))
	if len(rows) != 3 || *rows[0].Route != *events[0].Route || rows[0].Saved != 2000 || rows[2].Route != nil || rows[2].RouteDetail != nil {
		t.Fatalf("stored events: %+v", rows)
	}
	var d map[string]any
	if err := json.Unmarshal(rows[0].RouteDetail, &d); err != nil || d["chosen"] != "a" {
		t.Errorf("route detail %s (%v)", rows[0].RouteDetail, err)
	}

	q := UsageSumQuery{From: at.Truncate(time.Hour), To: at.Truncate(time.Hour).Add(time.Hour), By: UsageDims{Binding: true}}
	ledger := mk[[]UsageSum](t)(s.SumUsageEvents(ctx, q))
	rolled := mk[[]UsageSum](t)(s.SumUsageRollups(ctx, GrainHour, q))
	if !sameSums(ledger, rolled) {
		t.Errorf("by binding: ledger %v, rollups %v", ledger, rolled)
	}
	want := map[uuid.UUID][2]int64{bindA: {800, 2000}, bindB: {400, 1000}}
	for _, r := range rolled {
		if w := want[r.BindingID]; r.CachedReadTokens != w[0] || r.Saved != w[1] {
			t.Errorf("binding %s: cached %d saved %d, want %v", r.BindingID, r.CachedReadTokens, r.Saved, w)
		}
	}
	q.By = UsageDims{HostKey: true}
	rolled = mk[[]UsageSum](t)(s.SumUsageRollups(ctx, GrainHour, q))
	if !sameSums(mk[[]UsageSum](t)(s.SumUsageEvents(ctx, q)), rolled) || len(rolled) != 2 {
		t.Errorf("by host key: %v", rolled)
	}
	for _, r := range rolled {
		if r.HostKeyID == keyA && (r.Saved != 3000 || r.InputTokens != 1500) {
			t.Errorf("key A: %+v", r)
		}
	}
}
