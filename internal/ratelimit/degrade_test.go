package ratelimit

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// records keeps the proxy's usage records.
type records struct {
	mu   sync.Mutex
	recs []event.Record
}

func (r *records) Record(rec event.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

func (r *records) last(t *testing.T) event.Record {
	t.Helper()
	var rec event.Record
	eventually(t, "the request's record", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.recs) == 0 {
			return false
		}
		rec = r.recs[len(r.recs)-1]
		return true
	})
	return rec
}

// degradeRelay is a relay whose model gpt-test has a cheaper fallback,
// gpt-small, and a per-model rate limit of one request per window: the
// second request within a window must wait for gpt-test, not for
// gpt-small.
func degradeRelay(t *testing.T, window time.Duration, shape func(p *snapshot.Policy)) (*relay, *records) {
	rl := newRelay(t)
	c := rl.cat
	small := &snapshot.Model{ID: c.id(), Name: "gpt-small", Kind: "chat", MaxOutputTokens: 1000}
	c.model.Fallbacks = []snapshot.ID{small.ID}
	c.data.Models = append(c.data.Models, small)
	c.data.Bindings = append(c.data.Bindings, &snapshot.Binding{ID: c.id(), ModelID: small.ID, HostID: c.host.ID,
		Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-small-upstream", Enabled: true,
		Pricing: snapshot.Pricing{Input: 100_000, Output: 200_000}})
	one := c.limit("one-per-window", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1, Window: window})
	c.policy.ModelRateLimits = []snapshot.ModelRateLimit{{ModelID: c.model.ID, RateLimitID: one.ID}}
	c.policy.MaxWait = 10 * time.Second
	c.policy.Priority = 10
	shape(c.policy)
	rec := &records{}
	return rl, rec
}

// TestProxy_DegradesInsteadOfWaiting: with the policy's degrade option, a
// request that would wait for its model longer than degrade_after_ms, or
// whose priority is below degrade_below_priority, is served at once by the
// model's cheaper fallback and says so (X-Relay-Route, the usage record,
// the limiter's count); without it, or within the threshold, it waits for
// the model it asked for.
func TestProxy_DegradesInsteadOfWaiting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		window   time.Duration
		policy   func(p *snapshot.Policy)
		header   map[string]string
		degraded bool
	}{
		{"wait longer than degrade_after", 10 * time.Second, func(p *snapshot.Policy) {
			p.DegradeAfter, p.HasDegradeAfter = 200*time.Millisecond, true
		}, nil, true},
		{"wait within degrade_after", 700 * time.Millisecond, func(p *snapshot.Policy) {
			p.DegradeAfter, p.HasDegradeAfter = 5*time.Second, true
		}, nil, false},
		{"priority below the level", 10 * time.Second, func(p *snapshot.Policy) {
			p.DegradeBelowPriority, p.HasDegradeBelow = 5, true
		}, map[string]string{"X-Relay-Priority": "1"}, true},
		{"priority at the level", 700 * time.Millisecond, func(p *snapshot.Policy) {
			p.DegradeBelowPriority, p.HasDegradeBelow = 5, true
		}, map[string]string{"X-Relay-Priority": "5"}, false},
		{"no degrade option", 700 * time.Millisecond, func(*snapshot.Policy) {}, nil, false},
	}
	for _, be := range backends()[:2] {
		for _, tc := range cases {
			t.Run(be.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				rl, rec := degradeRelay(t, tc.window, tc.policy)
				l := be.open(t, 1, Options{})[0]
				rl.start(t, proxy.Config{Limiter: l, Recorder: rec})

				resp, body := rl.post(t, "/v1/chat/completions", chatBody, nil)
				if resp.StatusCode != 200 || strings.Contains(resp.Header.Get("X-Relay-Route"), "degraded") {
					t.Fatalf("first request: %d %q %s", resp.StatusCode, resp.Header.Get("X-Relay-Route"), body)
				}
				start := time.Now()
				resp, body = rl.post(t, "/v1/chat/completions", chatBody, tc.header)
				took := time.Since(start)
				if resp.StatusCode != 200 {
					t.Fatalf("second request: %d %s", resp.StatusCode, body)
				}
				route := resp.Header.Get("X-Relay-Route")
				r := rec.last(t)
				if !tc.degraded {
					if strings.Contains(route, "degraded") || r.Model != "gpt-test" || took < tc.window/2 || l.Stats().Degraded != 0 {
						t.Fatalf("served after %v by %s, route %q, degraded %d: want it to wait for gpt-test", took, r.Model, route, l.Stats().Degraded)
					}
					return
				}
				if !strings.Contains(route, "binding=mock/gpt-small-upstream") || !strings.HasSuffix(route, "; degraded=gpt-test->gpt-small") {
					t.Fatalf("route %q, want it served by gpt-small and marked degraded", route)
				}
				if took > 2*time.Second {
					t.Fatalf("degraded after %v, want at once (the wait would be 10s)", took)
				}
				if r.Model != "gpt-small" || r.Route != route || !strings.Contains(string(r.RouteDetail), `"degraded":{"from":"gpt-test","to":"gpt-small"}`) {
					t.Fatalf("record: model %s, route %q, detail %s", r.Model, r.Route, r.RouteDetail)
				}
				if st := l.Stats(); st.Degraded != 1 || st.Refused != 0 || st.RefusedWaitTooLong != 0 {
					t.Fatalf("stats: degraded %d, refused %d, wait too long %d; want 1, 0, 0", st.Degraded, st.Refused, st.RefusedWaitTooLong)
				}
			})
		}
	}
}

// TestLimiter_DegradesAfterWaitingForTokens: a request waiting for tokens
// (which a settlement may free at any moment) waits degrade_after_ms on
// its model and is then refused as Degradable — not at once, and not at
// its max wait; a request without Admission.Degrade waits on.
func TestLimiter_DegradesAfterWaitingForTokens(t *testing.T) {
	t.Parallel()
	for _, be := range backends()[:2] {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			l := be.open(t, 1, Options{TokenPoll: 20 * time.Millisecond})[0]
			c, _ := tokenCatalog(1, 10*time.Second)
			c.policy.DegradeAfter, c.policy.HasDegradeAfter = 300*time.Millisecond, true
			snap := c.build()
			held, err := attempt(t.Context(), l, c.admission(t, snap, 400, 900), c.hostKey, c.binding)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Done(wire.Usage{Input: 100, Output: 900})
			a := c.admission(t, snap, 400, 400)
			a.Degrade = true
			start := time.Now()
			_, err = attempt(t.Context(), l, a, c.hostKey, c.binding)
			took := time.Since(start)
			var d admission.Degradable
			if !errors.As(err, &d) || !d.Degradable() {
				t.Fatalf("got %v, want a Degradable refusal", err)
			}
			if took < 250*time.Millisecond || took > 5*time.Second {
				t.Fatalf("degraded after %v, want after its 300ms on the model", took)
			}
			if st := l.Stats(); st.Degraded != 1 || st.RefusedWaitTooLong != 0 {
				t.Fatalf("degraded %d, wait too long %d; want 1, 0", st.Degraded, st.RefusedWaitTooLong)
			}
		})
	}
}
