package proxy

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

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
			d.Bindings = append(d.Bindings, &snapshot.Binding{ID: id(), ModelID: m.ID, HostID: d.Hosts[(i+j)%10].ID, Shape: wire.ShapeOpenAI, UpstreamModel: "up", Position: j, Enabled: true})
		}
	}
	snap := snapshot.Build(d, 1, now)
	h := New(Config{Snapshot: func() *snapshot.Snapshot { return snap }, Now: func() time.Time { return now }})
	return h, snap
}

// hotPath is what ServeHTTP does between reading the body and calling
// upstream: authenticate, resolve the policy, route, pick a key, with the
// tracing hooks it runs around each step (no-ops when tracing is off).
func hotPath(h *Handler, snap *snapshot.Snapshot, rq *request, tried []snapshot.ID) *snapshot.HostKey {
	if h.tracer != nil {
		rq.startTrace()
	}
	now := h.now()
	as := rq.child(spanAuth)
	caller, res := snap.Authenticate(hashKey(benchKey), now)
	if res != snapshot.AuthOK {
		panic(res.String())
	}
	if as != nil {
		rq.caller = caller
		rq.endAuth(as, true)
	}
	rs := rq.child(spanRoute)
	err := h.router.Route(snap, caller.Policy, "model-ca", wire.InboundChat, now, &rq.plan)
	if rs != nil {
		rq.endRoute(rs, err)
	}
	if err != nil {
		panic(err)
	}
	plan := &rq.plan
	for i := range plan.Bindings {
		c := &plan.Bindings[i]
		if c.Skip != routing.Kept {
			continue
		}
		if k, t, ok := h.pool.Pick(caller.Policy.KeyStrategy, c.Keys, c.Binding.UpstreamModel, tried, now); ok {
			rq.startAttempt(c, k)
			h.breakers.Report(t, keypool.Result{Outcome: keypool.OutcomeSuccess}, now)
			rq.endAttempt(&failure{}, true)
			if rq.span != nil {
				rq.endTrace()
			}
			return k
		}
	}
	panic("no key")
}

// hotPathRequest is the request state hotPath works in.
func hotPathRequest(h *Handler) *request {
	return &request{h: h, r: httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil), id: "req_bench", in: wire.InboundChat, status: 200}
}

func TestHotPath_DoesNotAllocate(t *testing.T) {
	for _, s := range []snapshot.KeyStrategy{snapshot.StrategyPrioritized, snapshot.StrategyRoundRobin, snapshot.StrategyLeastRecentlyUsed} {
		h, snap := hotPathHandler(s)
		rq := hotPathRequest(h)
		tried := make([]snapshot.ID, 0, maxTried)
		hotPath(h, snap, rq, tried) // warm the plan and the selection state
		if allocs := testing.AllocsPerRun(200, func() { hotPath(h, snap, rq, tried) }); allocs != 0 {
			t.Errorf("%s: %v allocations per request", s, allocs)
		}
	}
}

// BenchmarkHotPath measures the hot path without tracing (one sub-benchmark
// per key strategy) and, for the prioritized strategy, with tracing on: an
// SDK tracer provider batching into the in-memory exporter.
func BenchmarkHotPath(b *testing.B) {
	for _, s := range []snapshot.KeyStrategy{snapshot.StrategyPrioritized, snapshot.StrategyRoundRobin, snapshot.StrategyLeastRecentlyUsed} {
		b.Run(string(s), func(b *testing.B) {
			h, snap := hotPathHandler(s)
			rq := hotPathRequest(h)
			tried := make([]snapshot.ID, 0, maxTried)
			b.ReportAllocs()
			for b.Loop() {
				hotPath(h, snap, rq, tried)
			}
		})
	}
	b.Run("prioritized/traced", func(b *testing.B) {
		h, snap := hotPathHandler(snapshot.StrategyPrioritized)
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		defer tp.Shutdown(context.Background())
		h.tracer = tp.Tracer(tracerName)
		rq := hotPathRequest(h)
		tried := make([]snapshot.ID, 0, maxTried)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			hotPath(h, snap, rq, tried)
			if n++; n%4096 == 0 {
				exp.Reset() // keep the exporter from growing without bound
			}
		}
	})
}
