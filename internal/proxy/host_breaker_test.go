package proxy_test

import (
	"testing"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// A host's own breaker thresholds (hosts.breaker_server_failures,
// breaker_network_failures) decide for its keys: a host at 1 holds the
// model after one failure, while a host on the process default (5) keeps
// counting; in process and with Redis breakers.
func TestBreakers_HostThresholdsDecideForTheirKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault string // the mock's fault in the upstream model name
		set   func(*snapshot.Host)
	}{
		{"server error", "500", func(h *snapshot.Host) { h.BreakerServerFailures = 1 }},
		{"network failure", "reset-0", func(h *snapshot.Host) { h.BreakerNetworkFailures = 1 }},
	}
	for _, breakers := range []string{"memory", "redis"} {
		for _, tt := range tests {
			t.Run(breakers+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t)
				if breakers == "redis" {
					rb := keypool.NewRedisBreakers(redistest.Client(t, redistest.URL(t)), keypool.BreakerConfig{},
						keypool.RedisBreakerOptions{Prefix: redistest.Prefix(t)})
					t.Cleanup(func() { _ = rb.Close() })
					f.cfg.Breakers = rb
				}
				strict := f.host("strict", tt.set)
				strictKey := f.key(strict, "strict-1", "sk-up-strict-key")
				f.bind(f.model("strict-model", true), strict, wire.ShapeOpenAI, "s-fault-"+tt.fault)
				lenient := f.host("lenient")
				lenientKey := f.key(lenient, "lenient-1", "sk-up-lenient-key")
				f.bind(f.model("lenient-model", true), lenient, wire.ShapeOpenAI, "l-fault-"+tt.fault)
				f.start()

				for _, m := range []string{"strict-model", "lenient-model"} {
					if resp, body := f.post("/v1/chat/completions", chatFor(m), nil); resp.StatusCode < 500 {
						t.Fatalf("%s: %d %s, want the upstream's failure", m, resp.StatusCode, body)
					}
				}
				holds := f.holdsOf(strictKey)
				if len(holds) != 1 || holds[0].Scope != keypool.ScopeModel || holds[0].Model != "s-fault-"+tt.fault || holds[0].State != keypool.StateOpen {
					t.Fatalf("strict host's key holds %+v, want its model open after one failure", holds)
				}
				if holds := f.holdsOf(lenientKey); len(holds) != 0 {
					t.Fatalf("lenient host's key holds %+v after one failure, want none (the default is 5)", holds)
				}
				if !f.h.Breakers().Ready(keypool.Ref(lenientKey), "l-fault-"+tt.fault, f.clock.Now()) {
					t.Fatal("the lenient host's model is held after one failure")
				}
			})
		}
	}
}
