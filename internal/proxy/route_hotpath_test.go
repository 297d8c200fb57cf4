package proxy

import (
	"net/http"
	"testing"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// routeBody is a Claude-Code-like request: a session in metadata, a system
// prompt, a tool.
var routeBody = []byte(`{"model":"model-ca","max_tokens":1024,"metadata":{"user_id":"user_1_account_2_session_3"},` +
	`"system":"You are an agent.","tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}],` +
	`"messages":[{"role":"user","content":"fix the bug"}]}`)

// routedHotPath is hotPath with what routing reads of the request beyond
// ScanRequest (whose model string is the request's one allocation, as
// before): its route facts, the session and hint, then the plan with key
// affinity, and the first key picked.
func routedHotPath(h *Handler, snap *snapshot.Snapshot, rq *request, header http.Header, tried []snapshot.ID) *snapshot.HostKey {
	now := h.now()
	caller, res := snap.Authenticate(hashKey(benchKey), now)
	if res != snapshot.AuthOK {
		panic(res.String())
	}
	scan := &rq.scan
	facts, err := wire.ScanRoute(routeBody)
	if err != nil {
		panic(err)
	}
	rq.route = routing.NewRequest(scan, wire.InboundChat, &facts, header)
	if err := h.router.RouteRequest(snap, caller.Policy, &rq.route, now, &rq.plan); err != nil {
		panic(err)
	}
	c := rq.plan.First()
	k, t, ok := h.pool.Pick(snapshot.StrategyPrioritized, c.Keys, c.Binding.UpstreamModel, tried, now)
	if !ok {
		panic("no key")
	}
	t.Thresholds = breakerThresholds(c.Host) // as forward does
	h.breakers.Report(t, keypool.Result{Outcome: keypool.OutcomeSuccess}, now)
	return k
}

func TestRoutedHotPath_DoesNotAllocate(t *testing.T) {
	h, snap := hotPathHandler(snapshot.StrategyPrioritized)
	rq := routedRequest(h)
	tried := make([]snapshot.ID, 0, maxTried)
	for _, header := range []http.Header{{}, {"X-Relay-Session": {"session-42"}, "X-Relay-Route": {"cost=min"}}} {
		first := routedHotPath(h, snap, rq, header, tried)
		if !rq.plan.First().Affinity {
			t.Fatal("no key affinity: the test proves nothing")
		}
		if allocs := testing.AllocsPerRun(200, func() {
			if k := routedHotPath(h, snap, rq, header, tried); k != first {
				t.Fatalf("the session moved from %s to %s", first.Slug, k.Slug)
			}
		}); allocs != 0 {
			t.Errorf("%v: %v allocations per request", header, allocs)
		}
	}
}

// BenchmarkRoutedHotPath is BenchmarkHotPath's prioritized case with the
// routing reads: route facts, session, affinity.
func BenchmarkRoutedHotPath(b *testing.B) {
	h, snap := hotPathHandler(snapshot.StrategyPrioritized)
	rq := routedRequest(h)
	tried := make([]snapshot.ID, 0, maxTried)
	header := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		routedHotPath(h, snap, rq, header, tried)
	}
}

// routedRequest is hotPathRequest with routeBody scanned.
func routedRequest(h *Handler) *request {
	rq := hotPathRequest(h)
	scan, err := wire.ScanRequest(routeBody)
	if err != nil {
		panic(err)
	}
	rq.scan = scan
	return rq
}
