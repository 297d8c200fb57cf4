package routing

import (
	"errors"
	"testing"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// A caller the policy does not grant a model learns nothing of the
// catalog's hosts by pinning one: whether the host exists or not, the
// answer is the same refusal.
func TestRoute_PinnedHostOfAnUngrantedModelTellsNothing(t *testing.T) {
	t.Parallel()
	snap, c := setup()
	var r Router
	var p Plan
	for _, model := range []string{"ungranted", "ungranted@openai-a", "ungranted@nowhere"} {
		err := r.Route(snap, c.policy, model, wire.InboundChat, now, &p)
		var e *wire.Error
		if !errors.As(err, &e) || !errors.Is(err, wire.ErrForbidden) || e.Msg != `The model "ungranted" is not granted to this relay key.` {
			t.Errorf("%s: %v, want the same refusal as without a pin", model, err)
		}
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
