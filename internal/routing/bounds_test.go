package routing

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/keypool"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// A model or a pinned host the caller may not use answers exactly as one
// that does not exist: the same kind and the same words, whether the model
// is ungranted or unknown, the host exists (bound or not, its keys the
// caller's or not) or does not.
func TestRoute_NotGrantedAnswersLikeUnknown(t *testing.T) {
	t.Parallel()
	snap, c := setup()
	// A policy that may spend openai-b's key only.
	var b1 snapshot.ID
	for _, k := range c.data.HostKeys {
		if k.Slug == "b1" {
			b1 = k.ID
		}
	}
	own := &snapshot.Policy{ID: c.id(), AllModels: true, HostKeys: map[snapshot.ID]struct{}{b1: {}}}
	var r Router
	tests := []struct {
		name, model string
		policy      *snapshot.Policy
	}{
		{"ungranted model", "ungranted", c.policy},
		{"unknown model", "nothing-like-it", c.policy},
		{"ungranted model pinned to a real host", "ungranted@openai-a", c.policy},
		{"ungranted model pinned to no host", "ungranted@nowhere", c.policy},
		{"granted model, unknown host", "gpt@nowhere", c.policy},
		{"granted model, host without its binding", "claude@openai-a", c.policy},
		{"granted model, host whose keys are not the caller's", "gpt@openai-a", own},
		{"no policy", "gpt", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var p Plan
			err := r.Route(snap, tt.policy, tt.model, wire.InboundChat, now, &p)
			var e *wire.Error
			if !errors.As(err, &e) || !errors.Is(err, wire.ErrModelNotFound) || e.Msg != `The model "`+tt.model+`" does not exist.` {
				t.Errorf("%v, want the refusal of a model that does not exist", err)
			}
		})
	}
	// The caller's own host still routes.
	var p Plan
	if err := r.Route(snap, own, "gpt@openai-b", wire.InboundChat, now, &p); err != nil {
		t.Fatalf("the caller's own host: %v", err)
	}
}

// Two tenants share a host whose keys their policies split: whatever
// session either names (the other's included), its plan holds only the
// keys its own policy grants, in any strategy a hint asks for.
func TestAffinity_SessionsStayWithinTheirGrants(t *testing.T) {
	t.Parallel()
	snap, c, keys := pool(4, snapshot.AffinityBinding)
	mine := &snapshot.Policy{ID: c.id(), AllModels: true, HostKeys: map[snapshot.ID]struct{}{keys[0].ID: {}, keys[1].ID: {}}}
	theirs := &snapshot.Policy{ID: c.id(), AllModels: true, HostKeys: map[snapshot.ID]struct{}{keys[2].ID: {}, keys[3].ID: {}}}
	var r Router
	for _, pol := range []*snapshot.Policy{mine, theirs} {
		for i := range 200 {
			var p Plan
			req := Request{Model: "gpt", Inbound: wire.InboundChat, Session: session(i), SessionFrom: "header", Hint: Hint(i % 4)}
			if err := r.RouteRequest(snap, pol, &req, now, &p); err != nil {
				t.Fatal(err)
			}
			for _, k := range p.First().Keys {
				if !pol.GrantsHostKey(k.ID) {
					t.Fatalf("session %d (hint %s) may be tried on %s, which its policy does not grant", i, req.Hint, k.Slug)
				}
			}
			if c := p.First(); len(c.Keys) != 2 || c.KeysNotGranted != 2 {
				t.Fatalf("session %d: %d keys, %d not granted", i, len(c.Keys), c.KeysNotGranted)
			}
		}
	}
}

// A hint never reaches a fallback the policy does not grant, nor changes
// a strategy the policy fixes.
func TestHint_WithinPolicy(t *testing.T) {
	t.Parallel()
	c := &catalog{}
	h := c.host("h", true)
	c.key(h, "k", 0, nil)
	dear, cheap := c.model("dear"), c.model("cheap")
	dear.Fallbacks = []snapshot.ID{cheap.ID}
	cheap.Fallbacks = []snapshot.ID{dear.ID}
	c.bind(dear, h, wire.ShapeOpenAI, 0, true).Pricing = snapshot.Pricing{Input: 10_000_000}
	c.bind(cheap, h, wire.ShapeOpenAI, 1, true).Pricing = snapshot.Pricing{Input: 1_000}
	snap := snapshot.Build(&c.data, 1, now)
	pol := &snapshot.Policy{ID: c.id(), AllHostKeys: true, Models: map[snapshot.ID]struct{}{dear.ID: {}}, RouteStrategy: snapshot.RoutePriority}
	var r Router
	var p Plan
	req := Request{Model: "dear", Inbound: wire.InboundChat, Hint: HintCost, Needs: Needs{PromptTokens: 1000}}
	if err := r.RouteRequest(snap, pol, &req, now, &p); err != nil {
		t.Fatal(err)
	}
	if p.Strategy != snapshot.RoutePriority || !p.HintIgnored || len(p.Bindings) != 1 || p.Bindings[0].Model != dear {
		t.Fatalf("strategy %s (ignored %v), %d bindings", p.Strategy, p.HintIgnored, len(p.Bindings))
	}
	if len(p.Dropped) != 1 || p.Dropped[0].Why != "not granted" {
		t.Fatalf("dropped %+v", p.Dropped)
	}
	// Granted both, the mutual fallback is walked once each way, never in a loop.
	pol.Models[cheap.ID] = struct{}{}
	if err := r.RouteRequest(snap, pol, &req, now, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Bindings) != 2 || p.Bindings[1].Model != cheap || p.Bindings[1].Fallback != 1 {
		t.Fatalf("%d bindings", len(p.Bindings))
	}
}

// Equal session ids of two projects land on keys independently: over many
// sessions the two projects' first keys differ about as often as chance
// says (3/4 of the time for 4 keys), not never.
func TestAffinity_SessionScopedByProject(t *testing.T) {
	t.Parallel()
	snap, c, _ := pool(4, snapshot.AffinityKey)
	var r Router
	a, b := snapshot.ID{0xa}, snapshot.ID{0xb}
	first := func(project snapshot.ID, s uint64) *snapshot.HostKey {
		var p Plan
		req := Request{Model: "gpt", Inbound: wire.InboundChat, Session: s, SessionFrom: "prompt_cache_key", Project: project}
		if err := r.RouteRequest(snap, c.policy, &req, now, &p); err != nil {
			t.Fatal(err)
		}
		return p.FirstChoice(snap).Key
	}
	differ := 0
	for i := range 400 {
		ka := first(a, session(i))
		if again := first(a, session(i)); again != ka {
			t.Fatalf("session %d of one project moved from %s to %s", i, ka.Slug, again.Slug)
		}
		if first(b, session(i)) != ka {
			differ++
		}
	}
	if differ < 240 || differ > 360 {
		t.Fatalf("the same session of two projects went to different keys %d of 400 times, want about 300", differ)
	}
}

// X-Relay-Route names a key by a label of (project, key): stable for one
// project, different for another, never the slot.
func TestSummary_KeyLabelIsPerProject(t *testing.T) {
	t.Parallel()
	snap, c, keys := pool(3, snapshot.AffinityOff)
	var r Router
	summary := func(project snapshot.ID) string {
		var p Plan
		if err := r.RouteRequest(snap, c.policy, &Request{Model: "gpt", Inbound: wire.InboundChat, Project: project}, now, &p); err != nil {
			t.Fatal(err)
		}
		return string(p.AppendSummary(nil, p.FirstChoice(snap)))
	}
	a, b := summary(snapshot.ID{0xa}), summary(snapshot.ID{0xb})
	if a != summary(snapshot.ID{0xa}) {
		t.Fatal("a project's label changed between requests")
	}
	if a == b || strings.Contains(a, "slot=") || !strings.Contains(a, "key="+KeyLabel(snapshot.ID{0xa}, keys[0].ID)+";") {
		t.Fatalf("summaries %q and %q", a, b)
	}
}

// When the breakers hold every key of every candidate, the request is routed
// in panic mode, the least recently failed key first, and says so.
func TestRoute_PanicWhenEveryKeyIsHeld(t *testing.T) {
	t.Parallel()
	snap, c, keys := pool(3, snapshot.AffinityOff)
	b := keypool.NewMemory(keypool.BreakerConfig{})
	// k1 failed first, then k2, then k0.
	for i, k := range []*snapshot.HostKey{keys[1], keys[2], keys[0]} {
		at := now.Add(time.Duration(i-3) * 100 * time.Millisecond)
		tk, _ := b.Acquire(keypool.Ref(k), "up-gpt", at)
		b.Report(tk, keypool.Result{Outcome: keypool.OutcomeFailure, Scope: keypool.ScopeModel, Reason: "500"}, at)
	}
	r := Router{Breakers: b}
	var p Plan
	if err := r.Route(snap, c.policy, "gpt", wire.InboundChat, now, &p); err != nil {
		t.Fatalf("every key held: %v, want panic mode", err)
	}
	cand := p.First()
	if !p.Panic || cand == nil || len(cand.Keys) != 3 || cand.Keys[0] != keys[1] || cand.Keys[1] != keys[2] || cand.Keys[2] != keys[0] || cand.KeysHeld != 3 {
		t.Fatalf("panic %v, candidate %+v", p.Panic, cand)
	}
	if s := string(p.AppendSummary(nil, p.FirstChoice(snap))); !strings.HasSuffix(s, "; panic=1") {
		t.Fatalf("summary %q", s)
	}
	// One key ready again: no panic, only that key.
	tk, _ := b.Acquire(keypool.Ref(keys[1]), "up-gpt", now.Add(time.Second))
	b.Report(tk, keypool.Result{Outcome: keypool.OutcomeSuccess}, now.Add(time.Second))
	if err := r.Route(snap, c.policy, "gpt", wire.InboundChat, now, &p); err != nil || p.Panic || len(p.First().Keys) != 1 {
		t.Fatalf("one key ready: %v, panic %v", err, p.Panic)
	}
	// Without breakers to ask, nothing is held and there is no panic.
	if err := (&Router{}).Route(snap, c.policy, "gpt", wire.InboundChat, now, &p); err != nil || p.Panic {
		t.Fatalf("no breakers: %v, panic %v", err, p.Panic)
	}
}
