package proxy_test

import (
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// A budget downgrade never comes back to what the budget refused: with
// mutual fallbacks (dear → cheap → dear, which the catalog allows), the
// cheap model's plan holds dear as its fallback, and when cheap's binding
// fails the failover walk must not try dear.
func TestRoute_BudgetDowngradeNeverReturnsToTheRefusedModel(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	h := f.host("h")
	f.key(h, "k", "sk-up-k-secret")
	h2 := f.host("h2")
	f.key(h2, "k2", "sk-up-k2-secret")
	dear, cheap := f.model("dear", true), f.model("cheap", true)
	dear.Fallbacks = []snapshot.ID{cheap.ID}
	cheap.Fallbacks = []snapshot.ID{dear.ID}
	f.bind(dear, h2, wire.ShapeOpenAI, "dear-upstream").Pricing = snapshot.Pricing{Input: 10_000_000, Output: 30_000_000}
	f.bind(cheap, h, wire.ShapeOpenAI, "cheap-upstream").Pricing = snapshot.Pricing{Input: 1_000_000, Output: 2_000_000}
	f.policy.BudgetFallback = true
	f.cfg.Limiter = &budgetLimiter{admitted: make(chan string, 1)}
	f.start()
	resp, out := f.post("/v1/chat/completions", `{"model":"dear","messages":[{"role":"user","content":"hi"}]}`, map[string]string{testFault: "500"})
	if resp.StatusCode != 502 {
		t.Errorf("%d %s", resp.StatusCode, out)
	}
	for _, r := range f.requests() {
		if r.Model == "dear-upstream" {
			t.Fatalf("the budget refused dear, and dear was tried: %+v", r.Path)
		}
	}
	if !strings.Contains(f.logs.String(), "over budget") {
		t.Errorf("the log does not say why dear was left out:\n%s", f.logs.String())
	}
}

// A budget refusal that stands is recorded on the model the caller asked
// for, with its own route, not on the last fallback looked at.
func TestRoute_BudgetRefusalRecordsTheModelAsked(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	h := f.host("h")
	f.key(h, "k", "sk-up-k-secret")
	dear, pricier := f.model("dear", true), f.model("pricier", true)
	dear.Fallbacks = []snapshot.ID{pricier.ID}
	f.bind(dear, h, wire.ShapeOpenAI, "dear-upstream").Pricing = snapshot.Pricing{Input: 10_000_000, Output: 30_000_000}
	f.bind(pricier, h, wire.ShapeOpenAI, "pricier-upstream").Pricing = snapshot.Pricing{Input: 20_000_000, Output: 60_000_000}
	f.policy.BudgetFallback = true
	f.cfg.Limiter = &budgetLimiter{admitted: make(chan string, 1)}
	f.start()
	resp, out := f.post("/v1/chat/completions", `{"model":"dear","messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != 429 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	rec := f.rec.next(t)
	if rec.Model != "dear" || rec.ModelID != dear.ID || !strings.Contains(string(rec.RouteDetail), `"model":"dear"`) {
		t.Errorf("record on %q: %s", rec.Model, rec.RouteDetail)
	}
}
