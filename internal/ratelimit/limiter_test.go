package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

func TestLimiter_ExactlyTheLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	cases := []struct {
		backend backend
		pods    int
	}{
		{backends()[0], 1},
		{backends()[1], 1},
		{backends()[1], 2},
		{backends()[2], 3},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d pods", tc.backend.name, tc.pods), func(t *testing.T) {
			t.Parallel()
			c := newCatalog("http://unused")
			c.policy.RateLimitID = c.limit("fifty", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 50, Window: time.Minute}).ID
			snap := c.build()
			ls := tc.backend.open(t, tc.pods, Options{})
			var wg sync.WaitGroup
			var got tally
			for i := range 200 {
				wg.Go(func() {
					_, err := attempt(t.Context(), ls[i%len(ls)], c.admission(t, snap, 100, 10), c.hostKey, c.binding)
					got.add(code(err))
					if err != nil {
						var we *wire.Error
						if asWire(err, &we) && we.RetryAfter <= 0 {
							t.Errorf("refusal without Retry-After: %v", err)
						}
					}
				})
			}
			wg.Wait()
			if got.codes[""] != 50 || got.codes["rate_limited"] != 150 {
				t.Fatalf("outcomes %v, want exactly 50 admitted and 150 rate_limited", got.codes)
			}
			rl := snap.RateLimit(c.policy.RateLimitID)
			if n, err := ls[0].Level(t.Context(), c.policy, rl, rl.Rules[0], snapshot.ID{}); err != nil || n != 50 {
				t.Fatalf("level %d %v, want 50", n, err)
			}
		})
	}
}

// TestLimiter_ExactAcrossOwners holds a limit exactly when a request's
// counters belong to several owners — the policy, the host key's tier, a
// budget — which on a Redis Cluster are three scripts on their own slots:
// whichever owner binds, exactly its limit is admitted, and what the others
// took for a refused request is given back.
func TestLimiter_ExactAcrossOwners(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		for _, binding := range []string{"policy", "tier"} {
			t.Run(be.name+"/"+binding+" binds", func(t *testing.T) {
				t.Parallel()
				c := newCatalog("http://unused")
				policyN, tierN := int64(1000), int64(1000)
				if binding == "policy" {
					policyN = 50
				} else {
					tierN = 50
				}
				pol := c.limit("policy", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: policyN, Window: time.Minute})
				tier := c.limit("tier", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: tierN, Window: time.Minute})
				c.policy.RateLimitID, c.hostKey.TierRateLimitID = pol.ID, tier.ID
				budget := c.budget(snapshot.Budget{ProjectID: c.project.ID, Period: "month", Amount: 1 << 40})
				est := pricing.EstimateMicros(&c.binding.Pricing, (100+3)/4, 10) // a request's estimate: 100 bytes, max_tokens 10
				snap := c.build()
				pods := 1
				if be.redis {
					pods = 3
				}
				ls := be.open(t, pods, Options{})
				var wg sync.WaitGroup
				var got tally
				for i := range 200 {
					wg.Go(func() {
						_, err := attempt(t.Context(), ls[i%len(ls)], c.admission(t, snap, 100, 10), c.hostKey, c.binding)
						got.add(code(err))
					})
				}
				wg.Wait()
				if got.codes[""] != 50 || got.codes["rate_limited"] != 150 {
					t.Fatalf("outcomes %v, want exactly 50 admitted and 150 rate_limited", got.codes)
				}
				l := ls[0]
				if n, err := l.Level(t.Context(), c.policy, pol, pol.Rules[0], snapshot.ID{}); err != nil || n != 50 {
					t.Errorf("policy level %d %v, want 50", n, err)
				}
				tierLevel, err := l.primary.Peek(t.Context(), []Counter{ruleCounter(tierKey(c.hostKey.ID, tier.ID), tier.Rules[0], snapshot.ID{}, 0, "", time.Minute)}, time.Now())
				if err != nil || tierLevel.Used[0] != 50 {
					t.Errorf("tier level %v %v, want 50", tierLevel.Used, err)
				}
				if spent, err := l.Spent(t.Context(), budget); err != nil || spent != 50*est {
					t.Errorf("budget spent %d %v, want 50 requests' estimates (%d)", spent, err, 50*est)
				}
			})
		}
	}
}

func TestLimiter_TokensSettleToTheActualCounts(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			c := newCatalog("http://unused")
			rl := c.limit("tokens",
				snapshot.Rule{Meter: snapshot.MeterInputTokens, Amount: 1_000_000, Window: time.Minute},
				snapshot.Rule{Meter: snapshot.MeterOutputTokens, Amount: 1_000_000, Window: time.Minute},
				snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 1_000_000, Window: time.Hour},
				snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 100},
			)
			c.policy.RateLimitID = rl.ID
			snap := c.build()
			l := be.open(t, 1, Options{})[0]
			var in, out int64
			var wg sync.WaitGroup
			for i := range 40 {
				u := wire.Usage{Input: int64(50 + i), Output: int64(7 * i)}
				in, out = in+u.Input, out+u.Output
				wg.Go(func() {
					// Estimates: 1000 bytes → 250 input tokens; 500 output.
					r, err := attempt(t.Context(), l, c.admission(t, snap, 1000, 500), c.hostKey, c.binding)
					if err != nil {
						t.Error(err)
						return
					}
					r.Done(u)
				})
			}
			wg.Wait()
			flush(t, l)
			want := []int64{in, out, in + out, 0}
			for i, rule := range rl.Rules {
				if n, err := l.Level(t.Context(), c.policy, rl, rule, snapshot.ID{}); err != nil || n != want[i] {
					t.Errorf("%s: level %d (%v), want %d", rule.Meter, n, err, want[i])
				}
			}
		})
	}
}

func TestLimiter_BudgetNeverOverspent(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			c := newCatalog("http://unused")
			// 400 bytes ≈ 100 input tokens at 1 µ each, 100 output tokens at
			// 2 µ each: 300 µ a request. The budget holds 30 of them.
			b := c.budget(snapshot.Budget{ProjectID: c.project.ID, Period: "day", Amount: 30 * 300})
			snap := c.build()
			l := be.open(t, 1, Options{})[0]
			var wg sync.WaitGroup
			var got tally
			for range 100 {
				wg.Go(func() {
					r, err := attempt(t.Context(), l, c.admission(t, snap, 400, 100), c.hostKey, c.binding)
					got.add(code(err))
					if err == nil {
						r.Done(wire.Usage{Input: 100, Output: 100})
					}
				})
			}
			wg.Wait()
			flush(t, l)
			if got.codes[""] != 30 || got.codes["budget_exceeded"] != 70 {
				t.Fatalf("outcomes %v, want 30 admitted and 70 budget_exceeded", got.codes)
			}
			spent, err := l.Spent(t.Context(), b)
			if err != nil || spent != b.Amount {
				t.Fatalf("spent %d (%v), want exactly the budget %d", spent, err, b.Amount)
			}
			// Cheaper actual usage gives the difference back.
			_, err = attempt(t.Context(), l, c.admission(t, snap, 400, 100), c.hostKey, c.binding)
			if code(err) != "budget_exceeded" {
				t.Fatalf("a spent budget admitted: %v", err)
			}
		})
	}
}

func TestLimiter_BudgetRefundsTheEstimate(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	b := c.budget(snapshot.Budget{RelayKeyID: c.key.ID, Period: "month", Amount: 1000})
	snap := c.build()
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	r, err := attempt(t.Context(), l, c.admission(t, snap, 400, 100), c.hostKey, c.binding)
	if err != nil {
		t.Fatal(err)
	}
	if spent, _ := l.Spent(t.Context(), b); spent != 300 {
		t.Fatalf("reserved %d, want the estimate 300", spent)
	}
	r.Done(wire.Usage{Input: 100, Output: 10}) // 100 + 20
	flush(t, l)
	if spent, _ := l.Spent(t.Context(), b); spent != 120 {
		t.Fatalf("spent %d after settling, want 120", spent)
	}
}

func TestLimiter_PacesInsteadOfRefusing(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			c := newCatalog("http://unused")
			c.policy.RateLimitID = c.limit("five", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 5, Window: 500 * time.Millisecond}).ID
			c.policy.MaxWait = 10 * time.Second
			snap := c.build()
			l := be.open(t, 1, Options{})[0]
			var wg sync.WaitGroup
			var mu sync.Mutex
			var ats []int64
			for range 15 {
				wg.Go(func() {
					r, err := attempt(t.Context(), l, c.admission(t, snap, 100, 10), c.hostKey, c.binding)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					ats = append(ats, r.(*reservation).pol.at)
					mu.Unlock()
				})
			}
			wg.Wait()
			if st := l.Stats(); st.Paced == 0 || st.Refused != 0 || st.Admitted != 15 {
				t.Fatalf("stats %+v, want 15 admitted, some paced, none refused", st)
			}
			// At the store's clock, never more than 5 in any 500 ms.
			sort.Slice(ats, func(i, j int) bool { return ats[i] < ats[j] })
			for i := 5; i < len(ats); i++ {
				if ats[i]-ats[i-5] < 500 {
					t.Fatalf("admissions %v: 6 within 500ms", ats)
				}
			}
		})
	}
}

func TestLimiter_PriorityGoesFirst(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	c.policy.RateLimitID = c.limit("one", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1, Window: 200 * time.Millisecond}).ID
	c.policy.MaxWait = 5 * time.Second
	c.policy.Priority = 5
	snap := c.build()
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	if _, err := attempt(t.Context(), l, c.admission(t, snap, 10, 1), nil, c.binding); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	run := func(name, prio string) {
		a := c.admission(t, snap, 10, 1)
		if prio != "" {
			a.Header.Set("X-Relay-Priority", prio)
		}
		if _, err := attempt(t.Context(), l, a, nil, c.binding); err != nil {
			t.Error(err)
		}
		order <- name
	}
	go run("low", "1") // a caller may lower its priority
	eventually(t, "the low-priority request waits", func() bool { return l.Stats().Waiting == 1 })
	go run("high", "9") // … but not raise it above its policy's 5
	eventually(t, "both wait", func() bool { return l.Stats().Waiting == 2 })
	if first, second := <-order, <-order; first != "high" || second != "low" {
		t.Fatalf("served %s then %s, want high then low", first, second)
	}
}

func TestLimiter_RefusalExplainsItself(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	rl := c.limit("tiny",
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1, Window: time.Minute},
		snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 5000, Window: time.Minute})
	c.policy.RateLimitID = rl.ID
	c.model.MaxOutputTokens = 10000 // the output estimate's ceiling
	snap := c.build()
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	if _, err := attempt(t.Context(), l, c.admission(t, snap, 400, 100), nil, c.binding); err != nil {
		t.Fatal(err)
	}
	_, err := attempt(t.Context(), l, c.admission(t, snap, 400, 100), nil, c.binding)
	ref, ok := err.(*Refusal)
	if !ok || code(err) != "rate_limited" || ref.Err.RetryAfter < 59*time.Second {
		t.Fatalf("err %v (%T)", err, err)
	}
	h := http.Header{}
	ref.SetHeaders(h)
	want := map[string]string{
		"X-Ratelimit-Limit-Requests": "1", "X-Ratelimit-Remaining-Requests": "0",
		"X-Ratelimit-Limit-Tokens": "5000", "X-Ratelimit-Remaining-Tokens": "4800",
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	if h.Get("X-Ratelimit-Reset-Requests") == "" {
		t.Error("no reset header")
	}
	// A request larger than the whole window can never fit.
	_, err = attempt(t.Context(), l, c.admission(t, snap, 400, 6000), nil, c.binding)
	if ref, ok := err.(*Refusal); !ok || ref.Err.RetryAfter != 0 {
		t.Fatalf("err %v, want a refusal without Retry-After", err)
	}
}

func TestLimiter_NothingToReserveCostsNothing(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	snap := c.build()
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	r, err := attempt(t.Context(), l, c.admission(t, snap, 400, 100), c.hostKey, c.binding)
	if err != nil {
		t.Fatal(err)
	}
	r.Done(wire.Usage{Input: 1})
	if st := l.Stats(); st.Admitted != 0 {
		t.Fatalf("stats %+v: a request with no limits went to the store", st)
	}
}

func TestLimiter_PerPrincipalSubLimits(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	c.policy.RateLimitID = c.limit("per-key",
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 2, Window: time.Minute, PerPrincipal: true},
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 3, Window: time.Minute}).ID
	other := *c.key
	other.ID, other.Hash = c.id(), [32]byte{1}
	c.data.RelayKeys = append(c.data.RelayKeys, &other)
	snap := c.build()
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	for i := range 2 {
		if _, err := attempt(t.Context(), l, c.admission(t, snap, 10, 1), nil, c.binding); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if _, err := attempt(t.Context(), l, c.admission(t, snap, 10, 1), nil, c.binding); code(err) != "rate_limited" {
		t.Fatalf("third request of one key: %v", err)
	}
	a := c.admission(t, snap, 10, 1)
	cl, _ := snap.Authenticate(other.Hash, time.Now())
	a.Caller = &cl
	if _, err := attempt(t.Context(), l, a, nil, c.binding); err != nil {
		t.Fatalf("another key has its own share: %v", err)
	}
	if _, err := attempt(t.Context(), l, a, nil, c.binding); code(err) != "rate_limited" {
		t.Fatalf("the shared cap of 3 let a fourth through: %v", err)
	}
}

func TestLimiter_PerModelLimitAppliesOnTopOfThePolicys(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	c.policy.RateLimitID = c.limit("policy", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 3, Window: time.Minute}).ID
	perModel := c.limit("model", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1, Window: time.Minute})
	c.policy.ModelRateLimits = []snapshot.ModelRateLimit{{ModelID: c.model.ID, RateLimitID: perModel.ID}}
	snap := c.build()
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	if _, err := attempt(t.Context(), l, c.admission(t, snap, 10, 1), nil, c.binding); err != nil {
		t.Fatal(err)
	}
	_, err := attempt(t.Context(), l, c.admission(t, snap, 10, 1), nil, c.binding)
	if code(err) != "rate_limited" {
		t.Fatalf("the per-model limit of 1 let a second through: %v", err)
	}
	pol := snap.RateLimit(c.policy.RateLimitID)
	if n, _ := l.Level(t.Context(), c.policy, pol, pol.Rules[0], snapshot.ID{}); n != 1 {
		t.Fatalf("the policy's own limit counted %d, want 1", n)
	}
}

func TestLimiter_LeaseOfADeadPodExpires(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		if !be.redis {
			continue
		}
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			c := newCatalog("http://unused")
			c.policy.RateLimitID = c.limit("one-at-a-time", snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 1}).ID
			snap := c.build()
			clk := &fakeClock{t: storeEpoch}
			ls := be.open(t, 2, Options{Now: clk.Now, LeaseTTL: time.Minute})
			a, b := ls[0], ls[1]
			if _, err := attempt(t.Context(), a, c.admission(t, snap, 10, 1), nil, c.binding); err != nil {
				t.Fatal(err)
			}
			clk.Advance(50 * time.Second)
			a.renew() // alive: its lease now lasts until +110s
			clk.Advance(50 * time.Second)
			if _, err := attempt(t.Context(), b, c.admission(t, snap, 10, 1), nil, c.binding); code(err) != "rate_limited" {
				t.Fatalf("B took the slot A holds: %v", err)
			}
			_ = a.Close() // A dies holding the lease: no release, no renewal
			clk.Advance(11 * time.Second)
			if _, err := attempt(t.Context(), b, c.admission(t, snap, 10, 1), nil, c.binding); err != nil {
				t.Fatalf("the dead pod's lease did not expire: %v", err)
			}
		})
	}
}

func TestLimiter_ConcurrencyReleasedOnDone(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			c := newCatalog("http://unused")
			c.policy.RateLimitID = c.limit("two", snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 2}).ID
			c.policy.MaxWait = 10 * time.Second
			snap := c.build()
			l := be.open(t, 1, Options{})[0]
			var wg sync.WaitGroup
			inflight, peak := 0, 0
			var mu sync.Mutex
			for range 8 {
				wg.Go(func() {
					r, err := attempt(t.Context(), l, c.admission(t, snap, 10, 1), nil, c.binding)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					inflight++
					peak = max(peak, inflight)
					mu.Unlock()
					time.Sleep(20 * time.Millisecond) // the upstream call
					mu.Lock()
					inflight--
					mu.Unlock()
					r.Done(wire.Usage{})
				})
			}
			wg.Wait()
			if peak > 2 {
				t.Fatalf("%d at once under a concurrency limit of 2", peak)
			}
		})
	}
}

// fakeClock is an injected clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func asWire(err error, we **wire.Error) bool {
	r, ok := err.(*Refusal)
	if ok {
		*we = r.Err
	}
	return ok
}

var _ = context.Background
var _ admission.Reservation = (*reservation)(nil)
