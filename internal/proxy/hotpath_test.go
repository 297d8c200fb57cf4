package proxy

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

const benchKey = "sk-wr-bench-0123456789abcdef0123456789abcdef"

// hotPathHandler is a handler over a catalog of realistic size: 50 models
// with two bindings each on 10 hosts of 4 keys, 1000 relay keys.
func hotPathHandler(strategy snapshot.KeyStrategy) (*Handler, *snapshot.Snapshot) {
	n := uint32(0)
	id := func() uuid.UUID { n++; return uuid.UUID{0xbe, byte(n >> 16), byte(n >> 8), byte(n)} }
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := &snapshot.Data{}
	project := &snapshot.Project{ID: id()}
	d.Projects = append(d.Projects, project)
	policy := &snapshot.Policy{ID: id(), Models: map[snapshot.ID]struct{}{}, HostKeys: map[snapshot.ID]struct{}{}, KeyStrategy: strategy, MaxAttempts: 3}
	d.Policies = append(d.Policies, policy)
	sa := &snapshot.ServiceAccount{ID: id(), ProjectID: project.ID, PolicyID: policy.ID}
	d.ServiceAccounts = append(d.ServiceAccounts, sa)
	for i := range 1000 {
		k := &snapshot.RelayKey{ID: id(), ProjectID: project.ID, ServiceAccountID: sa.ID, Hash: sha256.Sum256([]byte{byte(i), byte(i >> 8)})}
		if i == 500 {
			k.Hash = sha256.Sum256([]byte(benchKey))
		}
		d.RelayKeys = append(d.RelayKeys, k)
	}
	for i := range 10 {
		h := &snapshot.Host{ID: id(), Slug: "host-" + string(rune('a'+i)), BaseURL: "http://x", Enabled: true}
		d.Hosts = append(d.Hosts, h)
		for j := range 4 {
			k := &snapshot.HostKey{ID: id(), HostID: h.ID, Slug: "k" + string(rune('0'+j)), Secret: snapshot.NewSecret("s"), SecretVersion: 1, Position: j, Enabled: true, Usable: true}
			d.HostKeys = append(d.HostKeys, k)
			policy.HostKeys[k.ID] = struct{}{}
		}
	}
	for i := range 50 {
		m := &snapshot.Model{ID: id(), Name: "model-" + string(rune('a'+i%26)) + string(rune('a'+i/26))}
		d.Models = append(d.Models, m)
		policy.Models[m.ID] = struct{}{}
		for j := range 2 {
			d.Bindings = append(d.Bindings, &snapshot.Binding{ID: id(), ModelID: m.ID, HostID: d.Hosts[(i+j)%10].ID, Shape: snapshot.ShapeOpenAI, UpstreamModel: "up", Position: j, Enabled: true})
		}
	}
	snap := snapshot.Build(d, 1, now)
	h := New(Config{Snapshot: func() *snapshot.Snapshot { return snap }, Now: func() time.Time { return now }})
	return h, snap
}

// hotPath is what ServeHTTP does between reading the body and calling
// upstream: authenticate, resolve the policy, route, pick a key.
func hotPath(h *Handler, snap *snapshot.Snapshot, plan *routing.Plan, tried []snapshot.ID) *snapshot.HostKey {
	now := h.now()
	caller, res := snap.Authenticate(hashKey(benchKey), now)
	if res != snapshot.AuthOK {
		panic(res.String())
	}
	if err := h.router.Route(snap, caller.Policy, "model-ca", wire.InboundChat, now, plan); err != nil {
		panic(err)
	}
	for i := range plan.Bindings {
		c := &plan.Bindings[i]
		if c.Skip != routing.Kept {
			continue
		}
		if k, t, ok := h.pool.Pick(caller.Policy.KeyStrategy, c.Keys, tried, now); ok {
			h.breakers.Report(t, keypool.Result{Outcome: keypool.OutcomeSuccess}, now)
			return k
		}
	}
	panic("no key")
}

func TestHotPath_DoesNotAllocate(t *testing.T) {
	for _, s := range []snapshot.KeyStrategy{snapshot.StrategyPrioritized, snapshot.StrategyRoundRobin, snapshot.StrategyLeastRecentlyUsed} {
		h, snap := hotPathHandler(s)
		var plan routing.Plan
		tried := make([]snapshot.ID, 0, maxTried)
		hotPath(h, snap, &plan, tried) // warm the plan and the selection state
		if allocs := testing.AllocsPerRun(200, func() { hotPath(h, snap, &plan, tried) }); allocs != 0 {
			t.Errorf("%s: %v allocations per request", s, allocs)
		}
	}
}

func BenchmarkHotPath(b *testing.B) {
	for _, s := range []snapshot.KeyStrategy{snapshot.StrategyPrioritized, snapshot.StrategyRoundRobin, snapshot.StrategyLeastRecentlyUsed} {
		b.Run(string(s), func(b *testing.B) {
			h, snap := hotPathHandler(s)
			var plan routing.Plan
			tried := make([]snapshot.ID, 0, maxTried)
			b.ReportAllocs()
			for b.Loop() {
				hotPath(h, snap, &plan, tried)
			}
		})
	}
}
