package routing

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// pool builds one model on one host with n keys, and a policy over all.
func pool(n int, affinity snapshot.Affinity) (*snapshot.Snapshot, *catalog, []*snapshot.HostKey) {
	c := &catalog{}
	h := c.host("openai", true)
	var keys []*snapshot.HostKey
	for i := range n {
		keys = append(keys, c.key(h, "k"+strconv.Itoa(i), i, nil))
	}
	m := c.model("gpt")
	c.bind(m, h, wire.ShapeOpenAI, 0, true)
	c.policy = &snapshot.Policy{ID: c.id(), Slug: "p", AllModels: true, AllHostKeys: true, Affinity: affinity}
	return snapshot.Build(&c.data, 1, now), c, keys
}

func session(i int) uint64 { return SessionHash("header", []byte("session-"+strconv.Itoa(i))) }

// firstKey routes one request of a session and returns the key it would try first.
func firstKey(t testing.TB, r *Router, snap *snapshot.Snapshot, policy *snapshot.Policy, s uint64) string {
	t.Helper()
	var p Plan
	if err := r.RouteRequest(snap, policy, &Request{Model: "gpt", Inbound: wire.InboundChat, Session: s, SessionFrom: "header"}, now, &p); err != nil {
		t.Fatal(err)
	}
	ch := p.FirstChoice(snap)
	return ch.Key.Slug
}

func TestAffinity_OneSessionStaysOnOneKey(t *testing.T) {
	t.Parallel()
	snap, c, _ := pool(4, "")
	var r Router
	s := session(7)
	want := firstKey(t, &r, snap, c.policy, s)
	for i := range 100 {
		if got := firstKey(t, &r, snap, c.policy, s); got != want {
			t.Fatalf("request %d went to %s, the session's key is %s", i, got, want)
		}
	}
}

func TestAffinity_SessionsSpreadOverAllKeys(t *testing.T) {
	t.Parallel()
	snap, c, _ := pool(4, "")
	var r Router
	count := map[string]int{}
	for i := range 100 {
		count[firstKey(t, &r, snap, c.policy, session(i))]++
	}
	// 100 sessions over 4 keys: 25 each, binomial sd ≈ 4.3; allow 4.5 sd.
	for _, k := range []string{"k0", "k1", "k2", "k3"} {
		if n := count[k]; n < 6 || n > 44 {
			t.Errorf("key %s holds %d of 100 sessions: %v", k, n, count)
		}
	}
}

func TestAffinity_KeyDownMovesOnlyItsSessions(t *testing.T) {
	t.Parallel()
	snap, c, keys := pool(4, "")
	breakers := keypool.NewMemory(keypool.BreakerConfig{})
	r := Router{Breakers: breakers}
	before := map[int]string{}
	for i := range 200 {
		before[i] = firstKey(t, &r, snap, c.policy, session(i))
	}
	// k2 goes down.
	tk, _ := breakers.Acquire(keypool.Ref(keys[2]), "", now)
	breakers.Report(tk, keypool.Result{Outcome: keypool.OutcomeFailure}, now)
	moved := 0
	for i := range 200 {
		got := firstKey(t, &r, snap, c.policy, session(i))
		switch {
		case before[i] == "k2" && got == "k2":
			t.Fatalf("session %d still on the held key", i)
		case before[i] == "k2":
			moved++
		case got != before[i]:
			t.Fatalf("session %d moved from %s to %s though its key is healthy", i, before[i], got)
		}
	}
	if moved == 0 {
		t.Fatal("no session was on k2: the test proves nothing")
	}
}

func TestAffinity_OffKeepsPositionOrder(t *testing.T) {
	t.Parallel()
	snap, c, _ := pool(4, snapshot.AffinityOff)
	var r Router
	for i := range 20 {
		if got := firstKey(t, &r, snap, c.policy, session(i)); got != "k0" {
			t.Fatalf("affinity off: session %d first on %s, want k0", i, got)
		}
	}
}

// spread builds one model on n hosts of one key each, bound in order.
func spread(n int, mod func(i int, b *snapshot.Binding)) (*snapshot.Snapshot, *catalog) {
	c := &catalog{}
	m := c.model("gpt")
	for i := range n {
		h := c.host("h"+strconv.Itoa(i), true)
		c.key(h, "k"+strconv.Itoa(i), 0, nil)
		b := c.bind(m, h, wire.ShapeOpenAI, i, true)
		if mod != nil {
			mod(i, b)
		}
	}
	c.policy = &snapshot.Policy{ID: c.id(), Slug: "p", AllModels: true, AllHostKeys: true}
	return snapshot.Build(&c.data, 1, now), c
}

func firstHost(t testing.TB, r *Router, snap *snapshot.Snapshot, policy *snapshot.Policy, req Request) string {
	t.Helper()
	var p Plan
	if err := r.RouteRequest(snap, policy, &req, now, &p); err != nil {
		t.Fatal(err)
	}
	return p.First().Host.Slug
}

func seeded(seed uint64) func() uint64 {
	src := rand.New(rand.NewPCG(seed, seed+1))
	return src.Uint64
}

func TestStrategy_WeightedSplit(t *testing.T) {
	t.Parallel()
	_, c := spread(3, func(i int, b *snapshot.Binding) { b.Weight = []int{1, 3, 0}[i] }) // 0 counts as 1
	c.data.Models[0].Strategy = snapshot.RouteWeighted
	snap := snapshot.Build(&c.data, 2, now)
	r := Router{Rand: seeded(1)}
	count := map[string]int{}
	const n = 2000
	for range n {
		count[firstHost(t, &r, snap, c.policy, Request{Model: "gpt", Inbound: wire.InboundChat})]++
	}
	for host, share := range map[string]float64{"h0": 0.2, "h1": 0.6, "h2": 0.2} {
		sd := math.Sqrt(n * share * (1 - share))
		if got := float64(count[host]); math.Abs(got-n*share) > 4.5*sd {
			t.Errorf("%s served %v of %d, want %v ± %.0f: %v", host, got, n, n*share, 4.5*sd, count)
		}
	}
}

func TestStrategy_LatencyShiftsWhenABindingSlows(t *testing.T) {
	t.Parallel()
	_, c := spread(2, nil)
	c.data.Models[0].Strategy = snapshot.RouteLatency
	snap := snapshot.Build(&c.data, 2, now)
	live := NewLive(0.5)
	r := Router{Stats: live}
	b0, b1 := c.data.Bindings[0].ID, c.data.Bindings[1].ID
	req := Request{Model: "gpt", Inbound: wire.InboundChat}
	for range 5 {
		live.Observe(b0, 100*time.Millisecond)
		live.Observe(b1, 300*time.Millisecond)
	}
	if got := firstHost(t, &r, snap, c.policy, req); got != "h0" {
		t.Fatalf("fast h0 and slow h1: first %s", got)
	}
	// h0 slows down: its average climbs past h1's within a few observations.
	shifted := false
	for i := range 10 {
		live.Observe(b0, 2*time.Second)
		if firstHost(t, &r, snap, c.policy, req) == "h1" {
			shifted = true
			if i > 2 {
				t.Errorf("took %d slow answers to shift", i+1)
			}
			break
		}
	}
	if !shifted {
		t.Fatal("traffic stayed on the slowed binding")
	}
}

func TestStrategy_LeastBusyAndCost(t *testing.T) {
	t.Parallel()
	snap, c := spread(3, func(i int, b *snapshot.Binding) {
		b.Pricing = snapshot.Pricing{Input: []int64{3_000_000, 1_000_000, 2_000_000}[i], Output: 4_000_000}
	})
	live := NewLive(0)
	r := Router{Stats: live}
	req := Request{Model: "gpt", Inbound: wire.InboundChat, Needs: Needs{PromptTokens: 1000, MaxOutput: 100}}
	c.policy.RouteStrategy = snapshot.RouteCost
	if got := firstHost(t, &r, snap, c.policy, req); got != "h1" {
		t.Errorf("cost: first %s, want the cheapest h1", got)
	}
	c.policy.RouteStrategy = snapshot.RouteLeastBusy
	live.Begin(c.data.Bindings[0].ID)
	live.Begin(c.data.Bindings[1].ID)
	if got := firstHost(t, &r, snap, c.policy, req); got != "h2" {
		t.Errorf("least busy: first %s, want the idle h2", got)
	}
}

func TestHints_Precedence(t *testing.T) {
	t.Parallel()
	snap, c := spread(2, func(i int, b *snapshot.Binding) {
		b.Pricing = snapshot.Pricing{Input: []int64{5_000_000, 1_000_000}[i]}
	})
	live := NewLive(0)
	live.Observe(c.data.Bindings[0].ID, 50*time.Millisecond)
	live.Observe(c.data.Bindings[1].ID, 500*time.Millisecond)
	r := Router{Stats: live}
	model := c.data.Models[0]
	tests := []struct {
		name        string
		model       snapshot.RouteStrategy
		policy      snapshot.RouteStrategy
		hint        Hint
		want        string
		from        string
		hintIgnored bool
	}{
		{"default is priority", "", "", HintNone, "h0", "default", false},
		{"model strategy", snapshot.RouteCost, "", HintNone, "h1", "model", false},
		{"hint beats the model", snapshot.RouteCost, "", HintLatency, "h0", "hint", false},
		{"quality=max is the catalog order", snapshot.RouteCost, "", HintQuality, "h0", "hint", false},
		{"the policy beats the hint", "", snapshot.RouteCost, HintLatency, "h1", "policy", true},
	}
	for _, tt := range tests {
		model.Strategy = tt.model
		c.policy.RouteStrategy = tt.policy
		var p Plan
		if err := r.RouteRequest(snap, c.policy, &Request{Model: "gpt", Inbound: wire.InboundChat, Hint: tt.hint, Needs: Needs{PromptTokens: 10}}, now, &p); err != nil {
			t.Fatal(err)
		}
		if got := p.First().Host.Slug; got != tt.want || p.StrategyFrom != tt.from || p.HintIgnored != tt.hintIgnored {
			t.Errorf("%s: first %s from %s (hint ignored %v), want %s from %s", tt.name, got, p.StrategyFrom, p.HintIgnored, tt.want, tt.from)
		}
	}
	model.Strategy, c.policy.RouteStrategy = "", ""
	for in, want := range map[string]Hint{"cost=min": HintCost, " Latency = min ": HintLatency, "x, quality=max": HintQuality, "fast": HintNone} {
		if got := ParseHint(in); got != want {
			t.Errorf("ParseHint(%q) = %v, want %v", in, got, want)
		}
	}
}

// fallbacks builds "small" (16k context) on host a, falling back to "big"
// (200k) on host b and to "ungranted".
func fallbacks() (*snapshot.Snapshot, *catalog) {
	c := &catalog{}
	a, b := c.host("a", true), c.host("b", true)
	c.key(a, "a1", 0, nil)
	c.key(b, "b1", 0, nil)
	small, big, no := c.model("small"), c.model("big"), c.model("ungranted")
	small.ContextWindow, small.Kind, small.SupportsTools = 16_000, "chat", true
	big.ContextWindow, big.Kind, big.SupportsTools, big.SupportsVision = 200_000, "chat", true, true
	small.Fallbacks = []snapshot.ID{big.ID, no.ID}
	c.bind(small, a, wire.ShapeOpenAI, 0, true)
	c.bind(big, b, wire.ShapeOpenAI, 0, true)
	c.bind(no, b, wire.ShapeOpenAI, 0, true)
	c.policy = &snapshot.Policy{ID: c.id(), Slug: "p", AllHostKeys: true, Models: map[snapshot.ID]struct{}{small.ID: {}, big.ID: {}}}
	return snapshot.Build(&c.data, 1, now), c
}

func TestCapabilities_LongPromptNeverReachesSmallModel(t *testing.T) {
	t.Parallel()
	snap, c := fallbacks()
	var r Router
	var p Plan
	req := Request{Model: "small", Inbound: wire.InboundChat, Needs: Needs{PromptTokens: 100_000}}
	if err := r.RouteRequest(snap, c.policy, &req, now, &p); err != nil {
		t.Fatal(err)
	}
	for _, cand := range p.Bindings {
		if cand.Model.Name == "small" && cand.Skip != ContextTooSmall {
			t.Fatalf("the 16k model's binding: %v", cand.Skip)
		}
	}
	if f := p.First(); f == nil || f.Model.Name != "big" || f.Fallback != 1 {
		t.Fatalf("first %+v, want the fallback big", f)
	}
	if len(p.Dropped) != 1 || p.Dropped[0].Why != "not granted" {
		t.Errorf("dropped %+v", p.Dropped)
	}
	// With images, which the small model cannot read, and no fallback able
	// to: the request is refused, naming why.
	c.data.Models[0].Fallbacks = nil
	snap = snapshot.Build(&c.data, 2, now)
	for _, tt := range []struct {
		needs Needs
		in    wire.Inbound
		skip  Skip
	}{
		{Needs{PromptTokens: 100_000}, wire.InboundChat, ContextTooSmall},
		{Needs{PromptTokens: 10_000, MaxOutput: 8_000}, wire.InboundChat, ContextTooSmall},
		{Needs{PromptTokens: 10, Images: true}, wire.InboundChat, NoVision},
		{Needs{PromptTokens: 10}, wire.InboundEmbeddings, WrongKind},
	} {
		req := Request{Model: "small", Inbound: tt.in, Needs: tt.needs}
		err := r.RouteRequest(snap, c.policy, &req, now, &p)
		if !errors.Is(err, wire.ErrUnsupportedFeature) || p.Bindings[0].Skip != tt.skip {
			t.Errorf("%+v: err %v, skip %v, want unsupported (%v)", tt.needs, err, p.Bindings[0].Skip, tt.skip)
		}
	}
	// Counting tokens generates nothing: a long prompt may be counted.
	if err := r.RouteRequest(snap, c.policy, &Request{Model: "small", Inbound: wire.InboundCountTokens, Needs: Needs{PromptTokens: 100_000}}, now, &p); errors.Is(err, wire.ErrUnsupportedFeature) {
		t.Errorf("count tokens of a long prompt: %v", err)
	}
	// A model the catalog does not describe (no context window) is never
	// dropped for its capabilities.
	c.data.Models[1].ContextWindow = 0
	snap = snapshot.Build(&c.data, 3, now)
	if err := r.RouteRequest(snap, c.policy, &Request{Model: "big", Inbound: wire.InboundChat, Needs: Needs{PromptTokens: 10, Structured: true}}, now, &p); err != nil {
		t.Fatalf("structured output on big (SupportsJSON false): %v", err)
	}
}

func TestFallback_ChainFollowsTheModel(t *testing.T) {
	t.Parallel()
	snap, c := fallbacks()
	var r Router
	var p Plan
	if err := r.RouteRequest(snap, c.policy, &Request{Model: "small", Inbound: wire.InboundChat, Needs: Needs{PromptTokens: 10}}, now, &p); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, cand := range p.Bindings {
		order = append(order, fmt.Sprintf("%s/%s#%d", cand.Model.Name, cand.Host.Slug, cand.Fallback))
	}
	if fmt.Sprint(order) != "[small/a#0 big/b#1]" {
		t.Fatalf("plan %v", order)
	}
}

func TestExplain_DetailEqualsExplanation(t *testing.T) {
	t.Parallel()
	snap, c := fallbacks()
	c.policy.Affinity = snapshot.AffinityBinding
	var r Router
	var p Plan
	req := Request{Model: "small", Inbound: wire.InboundChat, Needs: Needs{PromptTokens: 100_000, Tools: true}, Session: session(1), SessionFrom: "prompt_cache_key", Hint: HintCost}
	if err := r.RouteRequest(snap, c.policy, &req, now, &p); err != nil {
		t.Fatal(err)
	}
	ch := p.FirstChoice(snap)
	var got Explanation
	if err := json.Unmarshal(p.AppendDetail(nil, ch), &got); err != nil {
		t.Fatalf("detail is not JSON: %v\n%s", err, p.AppendDetail(nil, ch))
	}
	if want := p.Explain(ch); !reflect.DeepEqual(got, want) {
		t.Fatalf("detail\n%+v\nexplanation\n%+v", got, want)
	}
	if got.Chosen == nil || got.Chosen.Model != "big" || got.Strategy != "cost" || got.StrategyFrom != "hint" {
		t.Errorf("explanation %+v", got)
	}
	if s := string(p.AppendSummary(nil, ch)); s != "binding=b/up-big; key="+KeyLabel(snapshot.ID{}, ch.Key.ID)+"; strategy=cost; affinity=off; fallback=big; hint=cost=min" {
		t.Errorf("summary %q", s)
	}
}

func TestRouteRequest_DoesNotAllocate(t *testing.T) {
	snap, c := bench()
	r := Router{Breakers: keypool.NewMemory(keypool.BreakerConfig{}), Stats: NewLive(0)}
	var p Plan
	req := Request{Model: "m-7", Inbound: wire.InboundChat, Needs: Needs{PromptTokens: 5000, Tools: true}, Session: session(3), SessionFrom: "header"}
	allocs := testing.AllocsPerRun(100, func() {
		if err := r.RouteRequest(snap, c.policy, &req, now, &p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("RouteRequest allocates %v times per call", allocs)
	}
}

// bench builds 50 models, each granted by an explicit rule of the policy,
// and "m-7" with 20 bindings on 20 hosts of 4 keys each, cost-ordered with
// key affinity and two fallbacks.
func bench() (*snapshot.Snapshot, *catalog) {
	c := &catalog{}
	c.policy = &snapshot.Policy{ID: c.id(), Slug: "p", AllHostKeys: true, Models: map[snapshot.ID]struct{}{}, RouteStrategy: snapshot.RouteCost}
	var models []*snapshot.Model
	for i := range 50 {
		m := c.model("m-" + strconv.Itoa(i))
		m.ContextWindow, m.Kind, m.SupportsTools, m.MaxOutputTokens = 128_000, "chat", true, 4096
		c.policy.Models[m.ID] = struct{}{}
		models = append(models, m)
	}
	models[7].Fallbacks = []snapshot.ID{models[8].ID, models[9].ID}
	for i := range 20 {
		h := c.host("h"+strconv.Itoa(i), true)
		for j := range 4 {
			c.key(h, fmt.Sprintf("k%d-%d", i, j), j, nil)
		}
		b := c.bind(models[7], h, wire.ShapeOpenAI, i, true)
		b.Pricing = snapshot.Pricing{Input: int64(1_000_000 + (i*7919)%20*100_000), Output: 4_000_000}
	}
	for _, m := range models[8:10] {
		c.bind(m, c.data.Hosts[0], wire.ShapeOpenAI, 0, true)
	}
	return snapshot.Build(&c.data, 1, now), c
}

// BenchmarkRouteRequest is one routing decision among 20 candidates of 4
// keys each under a policy of 50 model rules: cost strategy, key affinity.
func BenchmarkRouteRequest(b *testing.B) {
	snap, c := bench()
	r := Router{Breakers: keypool.NewMemory(keypool.BreakerConfig{}), Stats: NewLive(0)}
	var p Plan
	req := Request{Model: "m-7", Inbound: wire.InboundChat, Needs: Needs{PromptTokens: 5000, Tools: true}, Session: session(3), SessionFrom: "header"}
	b.ReportAllocs()
	for b.Loop() {
		if err := r.RouteRequest(snap, c.policy, &req, now, &p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAffinity_BindingAmongEquals(t *testing.T) {
	t.Parallel()
	_, c := spread(2, func(i int, b *snapshot.Binding) { b.Weight = []int{1, 3}[i] })
	c.data.Models[0].Strategy = snapshot.RouteWeighted
	c.policy.Affinity = snapshot.AffinityBinding
	snap := snapshot.Build(&c.data, 2, now)
	r := Router{Rand: seeded(2)}
	host := func(s uint64) string {
		return firstHost(t, &r, snap, c.policy, Request{Model: "gpt", Inbound: wire.InboundChat, Session: s, SessionFrom: "header"})
	}
	first := host(session(5))
	for range 50 {
		if got := host(session(5)); got != first {
			t.Fatalf("a session moved from %s to %s", first, got)
		}
	}
	count := map[string]int{}
	const n = 400
	for i := range n {
		count[host(session(1000+i))]++
	}
	// Sessions split as the weights say: a quarter on h0.
	sd := math.Sqrt(n * 0.25 * 0.75)
	if got := float64(count["h0"]); math.Abs(got-n*0.25) > 4.5*sd {
		t.Errorf("h0 holds %v of %d sessions, want %v ± %.0f", got, n, n*0.25, 4.5*sd)
	}
}
