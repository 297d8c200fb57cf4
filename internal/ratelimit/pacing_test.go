package ratelimit

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// tokenCatalog is a catalog whose policy allows 1000 total tokens a
// minute and lets requests wait maxWait.
func tokenCatalog(seed byte, maxWait time.Duration) (*catalog, *snapshot.RateLimit) {
	c := newSeededCatalog("http://unused", seed)
	rl := c.limit("tpm", snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 1000, Window: time.Minute})
	c.policy.RateLimitID = rl.ID
	c.policy.MaxWait = maxWait
	c.model.MaxOutputTokens = 32000
	return c, rl
}

// TestLimiter_TokenWaiterWokenBySettlement: a request whose token estimate
// does not fit waits, and is admitted as soon as a request in flight
// settles below its estimate — in the same pod, and on another pod through
// Redis — long before the window moves. The polls are turned off (an
// hour), so only the settlement's wake-up can admit it.
func TestLimiter_TokenWaiterWokenBySettlement(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		pods func(t *testing.T) (holder, waiter *Limiter)
	}{
		{"memory one pod", func(t *testing.T) (*Limiter, *Limiter) {
			l := New(Options{TokenPoll: time.Hour})
			t.Cleanup(func() { _ = l.Close() })
			return l, l
		}},
		{"redis one pod", func(t *testing.T) (*Limiter, *Limiter) {
			ls := openRedis(t, redistest.URL(t), 1, Options{TokenPoll: time.Hour})
			return ls[0], ls[0]
		}},
		{"redis two pods", func(t *testing.T) (*Limiter, *Limiter) {
			ls := openRedis(t, redistest.URL(t), 2, Options{TokenPoll: time.Hour})
			return ls[0], ls[1]
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			holder, waiter := tc.pods(t)
			if waiter != holder {
				// The waiter's subscription must be live before the
				// settlement is published.
				eventually(t, "the waiter's pod subscribed", func() bool {
					n, err := holder.opts.Redis.PubSubNumSub(t.Context(), holder.redis.Channel()).Result()
					return err == nil && n[holder.redis.Channel()] >= 2
				})
			}
			const rounds = 20
			var delays []time.Duration
			for i := range rounds {
				c, _ := tokenCatalog(byte(i+1), 10*time.Second)
				snap := c.build()
				// 400 bytes → 100 input tokens; with max_tokens 900 the
				// holder takes the whole 1000.
				held, err := attempt(t.Context(), holder, c.admission(t, snap, 400, 900), c.hostKey, c.binding)
				if err != nil {
					t.Fatal(err)
				}
				before := waiter.Stats().Waiting
				admitted := make(chan time.Time, 1)
				go func() {
					if _, err := attempt(t.Context(), waiter, c.admission(t, snap, 400, 400), c.hostKey, c.binding); err != nil {
						t.Error(err)
					}
					admitted <- time.Now()
				}()
				eventually(t, "the second request waits", func() bool { return waiter.Stats().Waiting == before+1 })
				settled := time.Now()
				held.Done(wire.Usage{Input: 100, Output: 50}) // 850 tokens back
				select {
				case at := <-admitted:
					delays = append(delays, at.Sub(settled))
				case <-time.After(5 * time.Second):
					t.Fatal("the waiter was not admitted after the settlement gave tokens back")
				}
			}
			slices.Sort(delays)
			t.Logf("%s: settlement → admission over %d rounds: p50 %v, p99 %v, max %v", tc.name, rounds,
				delays[rounds/2], delays[rounds*99/100], delays[rounds-1])
			if st := waiter.Stats(); st.Refused != 0 {
				t.Fatalf("refused %d, want 0", st.Refused)
			}
		})
	}
}

// TestLimiter_TokenRefusals: a request larger than the token rule is
// refused at once, naming the rule; one that waits in vain is refused at
// its deadline with the time it would actually fit as Retry-After.
func TestLimiter_TokenRefusals(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			l := be.open(t, 1, Options{TokenPoll: 20 * time.Millisecond})[0]

			// Larger than the rule: refused without waiting.
			c, _ := tokenCatalog(1, 10*time.Second)
			snap := c.build()
			start := time.Now()
			_, err := attempt(t.Context(), l, c.admission(t, snap, 400, 5000), c.hostKey, c.binding)
			var we *wire.Error
			if !errors.As(err, &we) || we.Kind != wire.ErrRateLimited || we.RetryAfter != 0 || time.Since(start) > time.Second {
				t.Fatalf("never fits: %v after %v, want an immediate rate_limited without Retry-After", err, time.Since(start))
			}
			if want := `The rate limit "tpm" allows 1000 tokens per minute; this request needs about 5100`; !strings.Contains(we.Msg, want) {
				t.Fatalf("message %q, want it to name the rule (%q)", we.Msg, want)
			}

			// Waits in vain: the window is full of settled tokens (a
			// 2 s window, so the fit is near), the wait is 300 ms.
			c = newSeededCatalog("http://unused", 2)
			c.policy.RateLimitID = c.limit("tp2s", snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 1000, Window: 2 * time.Second}).ID
			c.policy.MaxWait = 300 * time.Millisecond
			snap = c.build()
			r, err := attempt(t.Context(), l, c.admission(t, snap, 400, 900), c.hostKey, c.binding)
			if err != nil {
				t.Fatal(err)
			}
			filled := time.Now()
			r.Done(wire.Usage{Input: 100, Output: 900})
			flush(t, l)
			_, err = attempt(t.Context(), l, c.admission(t, snap, 400, 400), c.hostKey, c.binding)
			refused := time.Now()
			if !errors.As(err, &we) || we.Kind != wire.ErrRateLimited {
				t.Fatalf("got %v, want rate_limited", err)
			}
			if waited := refused.Sub(filled); waited < 250*time.Millisecond {
				t.Fatalf("refused after %v, want it to wait its 300ms first", waited)
			}
			fits := filled.Add(2 * time.Second) // when the 1000 tokens expire
			if got, want := refused.Add(we.RetryAfter), fits; got.Sub(want).Abs() > 100*time.Millisecond {
				t.Fatalf("Retry-After %v points %v from when it fits", we.RetryAfter, got.Sub(want))
			}
			var rf *Refusal
			h := http.Header{}
			if !errors.As(err, &rf) {
				t.Fatalf("%T is not a *Refusal", err)
			}
			rf.SetHeaders(h)
			if ms, _ := strconv.ParseInt(h.Get("Retry-After-Ms"), 10, 64); time.Duration(ms)*time.Millisecond != we.RetryAfter.Truncate(time.Millisecond) {
				t.Fatalf("retry-after-ms %q, want %d", h.Get("Retry-After-Ms"), we.RetryAfter.Milliseconds())
			}
		})
	}
}

// TestLimiter_AgentWorkloadServedWithinTheTokenLimit: agent-like callers
// ask for max_tokens 32 000 and use 500 under a token limit that holds
// one such estimate. Every request is served (no 429), the actual tokens
// admitted never exceed the limit in any window, and once the estimate is
// learned the throughput is at least 90 % of what the limit allows. The
// same workload with fixed estimates (max_tokens) is measured, not held.
func TestLimiter_AgentWorkloadServedWithinTheTokenLimit(t *testing.T) {
	t.Parallel()
	const (
		limit    = 40_000 // total tokens per window
		window   = time.Second
		callers  = 50
		run      = 4 * time.Second
		latency  = 100 * time.Millisecond // the upstream's answer time
		perReq   = 100 + 500              // 400 bytes → 100 input tokens; 500 output
		maxToken = 32_000
	)
	cases := []struct {
		name  string
		pods  func(t *testing.T, o Options) []*Limiter
		fixed bool
	}{
		{"memory", func(t *testing.T, o Options) []*Limiter { return backends()[0].open(t, 1, o) }, false},
		{"redis three pods", func(t *testing.T, o Options) []*Limiter { return openRedis(t, redistest.URL(t), 3, o) }, false},
		{"redis three pods fixed estimates", func(t *testing.T, o Options) []*Limiter { return openRedis(t, redistest.URL(t), 3, o) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCatalog("http://unused")
			c.policy.RateLimitID = c.limit("agents", snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: limit, Window: window}).ID
			c.policy.MaxWait = 30 * time.Second
			c.model.MaxOutputTokens = maxToken
			snap := c.build()
			// Learned from 4 answers (of each pod: learning is per
			// process), so that the run is mostly past the warm-up.
			pods := tc.pods(t, Options{FixedEstimates: tc.fixed, EstimateMinSamples: 4})
			type admission struct {
				at   int64 // the store's clock, ms
				wait time.Duration
			}
			var mu sync.Mutex
			var got []admission
			var refusals tally
			stop := time.Now().Add(run)
			var wg sync.WaitGroup
			for i := range callers {
				l := pods[i%len(pods)]
				wg.Go(func() {
					for time.Now().Before(stop) {
						start := time.Now()
						r, err := attempt(t.Context(), l, c.admission(t, snap, 400, maxToken), c.hostKey, c.binding)
						if err != nil {
							refusals.add(code(err))
							return
						}
						mu.Lock()
						got = append(got, admission{at: r.(*reservation).pol.at, wait: time.Since(start)})
						mu.Unlock()
						tm := time.NewTimer(latency) // the upstream answering
						<-tm.C
						r.Done(wire.Usage{Input: 100, Output: 500})
					}
				})
			}
			wg.Wait()
			if len(refusals.codes) != 0 {
				t.Fatalf("refused: %v, want every request served", refusals.codes)
			}
			slices.SortFunc(got, func(a, b admission) int { return int(a.at - b.at) })
			// Never more than the limit in any window: the admissions in
			// (at − window, at], each at its actual count.
			w := window.Milliseconds()
			for i, j := 0, 0; i < len(got); i++ {
				for got[j].at <= got[i].at-w {
					j++
				}
				if n := (i - j + 1) * perReq; n > limit {
					t.Fatalf("%d tokens admitted within %dms (%d requests), over the limit %d", n, w, i-j+1, limit)
				}
			}
			// Throughput once learned: the last two seconds of demand.
			from, to := got[0].at+int64(run/time.Millisecond)-2000, got[0].at+int64(run/time.Millisecond)
			var tokens int
			for _, a := range got {
				if a.at >= from && a.at < to {
					tokens += perReq
				}
			}
			share := float64(tokens) / (2 * limit)
			waits := make([]time.Duration, len(got))
			for i, a := range got {
				waits[i] = a.wait
			}
			slices.Sort(waits)
			t.Logf("%s: %d requests served, 0 refused; throughput %.0f%% of the limit; wait p50 %v p99 %v",
				tc.name, len(got), 100*share, waits[len(waits)/2].Round(time.Millisecond), waits[len(waits)*99/100].Round(time.Millisecond))
			if !tc.fixed && share < 0.9 {
				t.Fatalf("throughput %.0f%% of the limit, want at least 90%%", 100*share)
			}
		})
	}
}

// TestLimiter_FairTurnsAcrossProjects: project A queues 500 requests
// behind a one-request-at-a-time rule; project B's single request, under
// the same policy, goes after at most a couple of A's, not after all 500.
func TestLimiter_FairTurnsAcrossProjects(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	c.policy.RateLimitID = c.limit("one", snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 1}).ID
	c.policy.MaxWait = time.Minute
	projB := &snapshot.Project{ID: c.id(), TeamID: c.team.ID, Slug: "proj-b"}
	saB := &snapshot.ServiceAccount{ID: c.id(), ProjectID: projB.ID, Slug: "app-b", PolicyID: c.policy.ID}
	keyB := &snapshot.RelayKey{ID: c.id(), Hash: sha256.Sum256([]byte(testRelayKey + "-b")), ProjectID: projB.ID, ServiceAccountID: saB.ID}
	c.data.Projects = append(c.data.Projects, projB)
	c.data.ServiceAccounts = append(c.data.ServiceAccounts, saB)
	c.data.RelayKeys = append(c.data.RelayKeys, keyB)
	snap := c.build()
	callerB, res := snap.Authenticate(keyB.Hash, time.Now())
	if res != snapshot.AuthOK {
		t.Fatalf("authenticate B: %v", res)
	}
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })

	// The one slot is held while the queues fill; then each admitted
	// request gives it back at once, so the order is the queue's.
	held, err := attempt(t.Context(), l, c.admission(t, snap, 10, 1), nil, c.binding)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	serve := func(who string, a *admission.Admission) {
		r, err := attempt(t.Context(), l, a, nil, c.binding)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		order = append(order, who)
		mu.Unlock()
		r.Done(wire.Usage{})
	}
	const queuedA = 500
	var wg sync.WaitGroup
	for range queuedA {
		wg.Go(func() { serve("A", c.admission(t, snap, 10, 1)) })
	}
	eventually(t, "A's requests queue", func() bool { return l.Stats().Waiting == queuedA })
	a := c.admission(t, snap, 10, 1)
	a.Caller = &callerB
	wg.Go(func() { serve("B", a) })
	eventually(t, "B's request queues", func() bool { return l.Stats().Waiting == queuedA+1 })
	held.Done(wire.Usage{})
	wg.Wait()
	ahead := slices.Index(order, "B")
	t.Logf("B was served after %d of A's %d queued requests", ahead, queuedA)
	if ahead < 0 || ahead > 3 {
		t.Fatalf("B waited for %d of A's requests, want at most 3", ahead)
	}
}

// TestProxy_OwnRateLimitHeaders: a response carries the caller's own
// remaining budget from its policy's rate limit, in place of the shared
// host key's x-ratelimit-* headers the upstream sent.
func TestProxy_OwnRateLimitHeaders(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			rl := newRelay(t)
			c := rl.cat
			c.policy.RateLimitID = c.limit("team",
				snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 100, Window: time.Minute},
				snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 100_000, Window: time.Minute}).ID
			l := be.open(t, 1, Options{})[0]
			rl.start(t, proxy.Config{Limiter: l})
			// The body's estimate: len/4 input tokens, and the model's max
			// output (1000) for a request without max_tokens.
			est := int64(len(chatBody)+3)/4 + 1000
			for i := range int64(2) {
				resp, body := rl.post(t, "/v1/chat/completions", chatBody, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				if i == 1 {
					flush(t, l) // the first request's settlement
				}
				want := map[string]string{
					"X-Ratelimit-Limit-Requests":     "100",
					"X-Ratelimit-Remaining-Requests": strconv.FormatInt(99-i, 10),
					"X-Ratelimit-Limit-Tokens":       "100000",
					"X-Ratelimit-Reset-Requests":     "1m0s",
				}
				for k, v := range want {
					if got := resp.Header.Get(k); got != v {
						t.Errorf("request %d: %s = %q, want %q", i+1, k, got, v)
					}
				}
				rem, err := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Remaining-Tokens"), 10, 64)
				if err != nil || rem > 100_000-est || rem < 100_000-2*est {
					t.Errorf("request %d: remaining tokens %q, want at most %d", i+1, resp.Header.Get("X-Ratelimit-Remaining-Tokens"), 100_000-est)
				}
			}
		})
	}
}
