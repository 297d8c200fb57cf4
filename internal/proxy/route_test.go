package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/translator"
	"github.com/relay-llm/relay/internal/wire"
)

// routeFixture is a fixture whose mock upstream keeps a prompt cache per
// key, and whose policy leaves affinity at its default.
func routeFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.mock = mockupstream.New(mockupstream.Options{PromptCache: true, FaultHeader: testFault})
	f.up = httptest.NewServer(f.mock)
	t.Cleanup(f.up.Close)
	f.policy.Affinity = ""
	return f
}

// keyPool adds host "pool" with n keys and model "gpt-test" on it.
func (f *fixture) keyPool(n int) []*snapshot.HostKey {
	h := f.host("pool")
	var keys []*snapshot.HostKey
	for i := range n {
		keys = append(keys, f.key(h, fmt.Sprintf("k%d", i), fmt.Sprintf("sk-up-pool-key-%d-secret", i)))
	}
	f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
	return keys
}

// routeOf parses X-Relay-Route into its fields.
func routeOf(t *testing.T, v string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for part := range strings.SplitSeq(v, "; ") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			t.Fatalf("X-Relay-Route %q: part %q", v, part)
		}
		out[k] = val
	}
	return out
}

// chat posts a chat request with the given session header and returns its
// X-Relay-Route fields.
func (f *fixture) chat(body string, header map[string]string) map[string]string {
	f.t.Helper()
	resp, out := f.post("/v1/chat/completions", body, header)
	if resp.StatusCode != 200 {
		f.t.Fatalf("%d %s", resp.StatusCode, out)
	}
	return routeOf(f.t, resp.Header.Get("X-Relay-Route"))
}

func TestRoute_OneSessionStaysOnOneKey(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	f.keyPool(4)
	f.start()
	body := `{"model":"gpt-test","prompt_cache_key":"session-42","messages":[{"role":"user","content":"hi"}]}`
	first := f.chat(body, nil)
	if first["affinity"] != "hit" || first["strategy"] != "priority" {
		t.Fatalf("route %v", first)
	}
	for i := range 99 {
		if got := f.chat(body, nil); got["key"] != first["key"] {
			t.Fatalf("request %d went to key %s, the session's is %s", i+2, got["key"], first["key"])
		}
	}
}

func TestRoute_SessionsSpreadOverAllKeys(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	keys := f.keyPool(4)
	f.start()
	count := map[string]int{}
	for i := range 100 {
		count[f.chat(chatBody, map[string]string{"X-Relay-Session": fmt.Sprintf("s-%d", i)})["key"]]++
	}
	// 25 expected per key, binomial sd ≈ 4.3; allow 4.5 sd either way.
	project := f.data.RelayKeys[0].ProjectID
	for _, k := range keys {
		if n := count[routing.KeyLabel(project, k.ID)]; n < 6 || n > 44 {
			t.Errorf("key %s holds %d of 100 sessions: %v", k.Slug, n, count)
		}
	}
}

func TestRoute_KeyDownMovesOnlyItsSessions(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	keys := f.keyPool(4)
	f.start()
	session := func(i int) map[string]string { return map[string]string{"X-Relay-Session": fmt.Sprintf("s-%d", i)} }
	before := map[int]string{}
	for i := range 60 {
		before[i] = f.chat(chatBody, session(i))["key"]
	}
	down := routing.KeyLabel(f.data.RelayKeys[0].ProjectID, keys[1].ID)
	// Key 1 goes down: its breaker holds it.
	now := f.clock.Now()
	b := f.h.Breakers()
	tk, _ := b.Acquire(keypool.Ref(keys[1]), "", now)
	b.Report(tk, keypool.Result{Outcome: keypool.OutcomeAuth, Reason: "401"}, now)
	moved := 0
	for i := range 60 {
		got := f.chat(chatBody, session(i))
		switch {
		case got["key"] == down:
			t.Fatalf("session %d still on the held key", i)
		case before[i] == down:
			moved++
			if got["affinity"] != "hit" {
				t.Errorf("a moved session's new key is its rendezvous key among the healthy: %v", got)
			}
		case got["key"] != before[i]:
			t.Fatalf("session %d moved from key %s to %s though its key is healthy", i, before[i], got["key"])
		}
	}
	if moved == 0 {
		t.Fatal("no session was on key 1: the test proves nothing")
	}
}

// fallbackCatalog adds "small" (16k context) on host a, falling back to
// "big" (200k) on host b.
func (f *fixture) fallbackCatalog(smallSecret string) (small, big *snapshot.Model) {
	a, b := f.host("a"), f.host("b")
	f.key(a, "a1", smallSecret)
	f.key(b, "b1", "sk-up-b1-secret")
	small, big = f.model("small", true), f.model("big", true)
	small.ContextWindow, small.SupportsTools, small.SupportsJSON = 16_000, true, true
	big.ContextWindow, big.SupportsTools, big.SupportsJSON, big.SupportsVision = 200_000, true, true, true
	small.Fallbacks = []snapshot.ID{big.ID}
	f.bind(small, a, wire.ShapeOpenAI, "small-upstream")
	f.bind(big, b, wire.ShapeOpenAI, "big-upstream")
	return small, big
}

func TestRoute_LongPromptNeverReachesSmallContextModel(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	f.fallbackCatalog("sk-up-a1-secret")
	f.start()
	long := strings.Repeat("lorem ipsum dolor sit amet ", 15_000) // ~400 KB: ~100k tokens
	resp, out := f.post("/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":"`+long+`"}]}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %.300s", resp.StatusCode, out)
	}
	if r := routeOf(t, resp.Header.Get("X-Relay-Route")); r["fallback"] != "big" || r["binding"] != "b/big-upstream" {
		t.Errorf("route %v", r)
	}
	for _, r := range f.requests() {
		if r.Model == "small-upstream" {
			t.Fatal("the 100k-token prompt reached the 16k-context model")
		}
	}
	rec := f.rec.next(t)
	if rec.Model != "big" || !strings.Contains(string(rec.RouteDetail), `"skip":"context window too small"`) {
		t.Errorf("record model %q detail %s", rec.Model, rec.RouteDetail)
	}
	// A short prompt stays on the small model.
	if r := f.chat(`{"model":"small","messages":[{"role":"user","content":"hi"}]}`, nil); r["binding"] != "a/small-upstream" {
		t.Errorf("short prompt: %v", r)
	}
}

func TestRoute_FallbackChainOnFailure(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	f.fallbackCatalog("sk-up-mock-fault-500")
	f.start()
	resp, out := f.post("/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	r := routeOf(t, resp.Header.Get("X-Relay-Route"))
	if r["fallback"] != "big" || resp.Header.Get("X-Relay-Attempts") != "2" {
		t.Errorf("route %v after %s attempts", r, resp.Header.Get("X-Relay-Attempts"))
	}
	if rec := f.rec.next(t); rec.Model != "big" || rec.Attempts != 2 || !strings.HasPrefix(rec.Route, "binding=b/big-upstream") {
		t.Errorf("record %q %d %q", rec.Model, rec.Attempts, rec.Route)
	}
}

// pricedPair adds "gpt-test" on hosts dear and cheap; dear comes first.
func (f *fixture) pricedPair() {
	dear, cheap := f.host("dear"), f.host("cheap")
	f.key(dear, "d1", "sk-up-dear-secret")
	f.key(cheap, "c1", "sk-up-cheap-secret")
	m := f.model("gpt-test", true)
	f.bind(m, dear, wire.ShapeOpenAI, "dear-upstream").Pricing = snapshot.Pricing{Input: 10_000_000, Output: 30_000_000}
	f.bind(m, cheap, wire.ShapeOpenAI, "cheap-upstream").Pricing = snapshot.Pricing{Input: 1_000_000, Output: 2_000_000}
}

func TestRoute_HintPrecedence(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	f.pricedPair()
	f.start()
	withMeta := func(hint string) string {
		return `{"model":"gpt-test","metadata":{"relay_route":"` + hint + `"},"messages":[{"role":"user","content":"hi"}]}`
	}
	tests := []struct {
		name, body, header, host, hint string
	}{
		{"no hint: catalog order", chatBody, "", "dear", ""},
		{"header", chatBody, "cost=min", "cheap", "cost=min"},
		{"metadata", withMeta("cost=min"), "", "cheap", "cost=min"},
		{"the header beats metadata", withMeta("cost=min"), "quality=max", "dear", "quality=max"},
	}
	for _, tt := range tests {
		h := map[string]string{}
		if tt.header != "" {
			h["X-Relay-Route"] = tt.header
		}
		r := f.chat(tt.body, h)
		if !strings.HasPrefix(r["binding"], tt.host+"/") || r["hint"] != tt.hint {
			t.Errorf("%s: route %v", tt.name, r)
		}
	}
	// A policy that fixes the strategy wins over the hint, and says so.
	f2 := routeFixture(t)
	f2.pricedPair()
	f2.policy.RouteStrategy = snapshot.RoutePriority
	f2.start()
	if r := f2.chat(chatBody, map[string]string{"X-Relay-Route": "cost=min"}); !strings.HasPrefix(r["binding"], "dear/") || r["hint"] != "cost=min (ignored)" {
		t.Errorf("policy-fixed: route %v", r)
	}
}

// budgetLimiter refuses any request routed to the dear model as over
// budget, and admits the rest.
type budgetLimiter struct{ admitted chan string }

func (l *budgetLimiter) Admit(_ context.Context, a *admission.Admission) (func(wire.Usage), error) {
	if a.Model.Name == "dear" {
		return nil, &wire.Error{Kind: wire.ErrBudgetExceeded, Msg: "The daily budget of this project is spent; it renews in 3h."}
	}
	l.admitted <- a.Model.Name
	return func(wire.Usage) {}, nil
}

func TestRoute_BudgetDowngrade(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		f := routeFixture(t)
		h := f.host("h")
		f.key(h, "k", "sk-up-k-secret")
		dear, cheap := f.model("dear", true), f.model("cheap", true)
		dear.Fallbacks = []snapshot.ID{cheap.ID}
		f.bind(dear, h, wire.ShapeOpenAI, "dear-upstream").Pricing = snapshot.Pricing{Input: 10_000_000, Output: 30_000_000}
		f.bind(cheap, h, wire.ShapeOpenAI, "cheap-upstream").Pricing = snapshot.Pricing{Input: 1_000_000, Output: 2_000_000}
		f.policy.BudgetFallback = allow
		l := &budgetLimiter{admitted: make(chan string, 1)}
		f.cfg.Limiter = l
		f.start()
		resp, out := f.post("/v1/chat/completions", `{"model":"dear","messages":[{"role":"user","content":"hi"}]}`, nil)
		if !allow {
			if resp.StatusCode != 429 || decodeError(t, out).Error.Code != "budget_exceeded" {
				t.Errorf("without budget fallback: %d %s", resp.StatusCode, out)
			}
			continue
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		r := routeOf(t, resp.Header.Get("X-Relay-Route"))
		if r["binding"] != "h/cheap-upstream" || r["budget_fallback"] != "cheap" || <-l.admitted != "cheap" {
			t.Errorf("route %v", r)
		}
		if rec := f.rec.next(t); rec.Model != "cheap" || !strings.Contains(string(rec.RouteDetail), `"budget_fallback":"cheap"`) {
			t.Errorf("record %q %s", rec.Model, rec.RouteDetail)
		}
	}
}

func TestRoute_ExplainEqualsTheDecision(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	f.keyPool(4)
	f.policy.RouteStrategy = snapshot.RouteLatency
	f.start()
	body := `{"model":"gpt-test","metadata":{"user_id":"user_1_session_9"},"messages":[{"role":"user","content":"hi"}]}`
	// Some live figures first, so the latency scores are not all zero.
	for range 3 {
		f.chat(chatBody, map[string]string{"X-Relay-Session": "warm-up"})
		f.rec.next(t)
	}
	// The explain, now; then the request itself, with the same figures.
	snap := snapshot.Build(&f.data, 1, f.clock.Now())
	r := routing.Router{Supports: translator.Supports, Breakers: f.h.Breakers(), Stats: f.h.RouteStats()}
	hd := map[string][]string{"X-Relay-Route": {"cost=min"}}
	want, err := r.ExplainBody(snap, f.policy, f.data.RelayKeys[0].ProjectID, "", wire.InboundChat, []byte(body), hd, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	resp, out := f.post("/v1/chat/completions", body, map[string]string{"X-Relay-Route": "cost=min"})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	rec := f.rec.next(t)
	var got routing.Explanation
	if err := json.Unmarshal(rec.RouteDetail, &got); err != nil {
		t.Fatalf("route detail %s: %v", rec.RouteDetail, err)
	}
	if got.Chosen == nil || want.Chosen == nil || *got.Chosen != *want.Chosen {
		t.Fatalf("went to %+v, explain says %+v", got.Chosen, want.Chosen)
	}
	got.Chosen, want.Chosen = nil, nil
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("decision\n%s\nexplain\n%s", gj, wj)
	}
	if got.SessionFrom != "metadata.user_id" || got.StrategyFrom != "policy" || !got.HintIgnored {
		t.Errorf("explanation %+v", got)
	}
}

// TestRoute_PromptCacheAffinity measures a Claude-Code-like workload on
// the mock's per-key prompt cache: 20 sessions × 30 turns over a pool of 4
// keys, each turn resending the session's whole conversation, sessions
// interleaved turn by turn. With affinity each session keeps its key; off,
// the keys take turns (round robin). It prints the cache hit ratio
// (cached / prompt tokens) and the input cost at $3/M uncached and
// $0.30/M cached, and fails unless affinity at least halves the uncached
// input. (The mock's cache never expires, so off, a key still holds what
// it saw of a session a few turns ago: the figures are a floor of the
// saving.)
func TestRoute_PromptCacheAffinity(t *testing.T) {
	t.Parallel()
	type result struct{ prompt, cached int64 }
	run := func(affinity snapshot.Affinity) result {
		f := routeFixture(t)
		f.policy.Affinity = affinity
		f.policy.KeyStrategy = snapshot.StrategyRoundRobin
		f.keyPool(4)
		f.start()
		system := strings.Repeat("You are Claude Code, an agent that edits a repository with care. ", 150) // ~10 KB
		tools := `[{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]`
		convo := make([][]string, 20)
		var res result
		order := rand.New(rand.NewPCG(15, 15)) // the sessions' turns interleave in a fixed, shuffled order
		for turn := range 30 {
			for _, s := range order.Perm(20) {
				convo[s] = append(convo[s], fmt.Sprintf(`{"role":"user","content":"session %d turn %d: %s"}`, s, turn, strings.Repeat("context ", 40)))
				body := `{"model":"gpt-test","max_tokens":64,"tools":` + tools + `,"messages":[{"role":"system","content":"` + system + `"},` + strings.Join(convo[s], ",") + `]}`
				resp, out := f.post("/v1/chat/completions", body, map[string]string{"X-Claude-Code-Session-Id": fmt.Sprintf("cc-%d", s)})
				if resp.StatusCode != 200 {
					t.Fatalf("%d %.200s", resp.StatusCode, out)
				}
				var v struct {
					Usage struct {
						PromptTokens int64 `json:"prompt_tokens"`
						Details      struct {
							Cached int64 `json:"cached_tokens"`
						} `json:"prompt_tokens_details"`
					} `json:"usage"`
				}
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatal(err)
				}
				res.prompt += v.Usage.PromptTokens
				res.cached += v.Usage.Details.Cached
				convo[s] = append(convo[s], `{"role":"assistant","content":"done"}`)
			}
		}
		return res
	}
	on, off := run(""), run(snapshot.AffinityOff)
	cost := func(r result) float64 { return (float64(r.prompt-r.cached)*3 + float64(r.cached)*0.3) / 1e6 }
	ratio := func(r result) float64 { return float64(r.cached) / float64(r.prompt) }
	t.Logf("affinity on:  %d prompt tokens, %d cached, hit ratio %.1f%%, input cost $%.4f", on.prompt, on.cached, 100*ratio(on), cost(on))
	t.Logf("affinity off: %d prompt tokens, %d cached, hit ratio %.1f%%, input cost $%.4f", off.prompt, off.cached, 100*ratio(off), cost(off))
	t.Logf("saved: $%.4f of input (%.1f%%)", cost(off)-cost(on), 100*(cost(off)-cost(on))/cost(off))
	if on.prompt != off.prompt || math.IsNaN(ratio(on)) || 2*(on.prompt-on.cached) > off.prompt-off.cached {
		t.Fatalf("affinity on %+v, off %+v", on, off)
	}
}

func TestRoute_LatencyStrategyFollowsTheLiveFigures(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	f.pricedPair()
	f.policy.RouteStrategy = snapshot.RouteLatency
	live := routing.NewLive(0.5)
	f.cfg.Live = live
	f.start()
	dear, cheap := f.data.Bindings[0].ID, f.data.Bindings[1].ID
	live.Observe(dear, 100*time.Millisecond)
	live.Observe(cheap, 400*time.Millisecond)
	if r := f.chat(chatBody, nil); !strings.HasPrefix(r["binding"], "dear/") {
		t.Fatalf("fast dear: %v", r)
	}
	// dear slows down (the mock answers at once, so its own answers barely
	// move the averages): traffic moves to cheap.
	for range 3 {
		live.Observe(dear, 2*time.Second)
	}
	if r := f.chat(chatBody, nil); !strings.HasPrefix(r["binding"], "cheap/") || r["strategy"] != "latency" {
		t.Fatalf("slow dear: %v", r)
	}
}

// Two tenants sending the same prompt_cache_key land on the shared keys
// independently (before, 6 of 6 on the same key), and X-Relay-Route names
// no slot: each tenant sees its own label for a key.
func TestRoute_AffinityStaysInsideTheTenant(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	keys := f.keyPool(4)
	other := f.tenant("sk-wr-test-tenant2-0123456789abcdef", f.data.Models[0])
	f.data.Policies[len(f.data.Policies)-1].Affinity = "" // affinity on, as the first tenant's
	f.start()
	labels := map[string]string{} // label → the upstream key it stood for
	same := 0
	const sessions = 40
	for i := range sessions {
		body := fmt.Sprintf(`{"model":"gpt-test","prompt_cache_key":"shared-%d","messages":[{"role":"user","content":"hi"}]}`, i)
		var served [2]string
		for j, hd := range []map[string]string{nil, other} {
			before := len(f.requests())
			got := f.chat(body, hd)
			if _, ok := got["slot"]; ok || got["key"] == "" || got["affinity"] != "hit" {
				t.Fatalf("X-Relay-Route %v", got)
			}
			served[j] = f.requests()[before].Header.Get("Authorization")
			if prev, ok := labels[got["key"]]; ok && prev != served[j] {
				t.Fatalf("label %s stood for two keys", got["key"])
			}
			labels[got["key"]] = served[j]
		}
		if served[0] == served[1] {
			same++
		}
	}
	// By chance a quarter of the sessions meet on one of 4 keys (sd ≈ 2.7).
	if same > 20 {
		t.Fatalf("the same session of two tenants met on one key %d of %d times", same, sessions)
	}
	if len(labels) != 2*len(keys) {
		t.Errorf("%d labels for %d keys and two tenants, want each tenant its own", len(labels), len(keys))
	}
}
