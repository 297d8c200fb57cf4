package ratelimit

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// TestLimiter_SettlesEverythingOnASaturatedCPU runs many concurrent
// reservations and settlements, with the default settle queue, while spinning
// goroutines keep every processor busy: the settle goroutine must keep up —
// no settlement dropped, every lease (the policy's and the host key's tier's)
// released, and the token windows holding the actual counts, not the
// estimates. (With a settle goroutine that takes a fixed number of requests
// per turn, most settlements were dropped here.)
//
// It is not parallel: it sets GOMAXPROCS and saturates the CPU itself.
func TestLimiter_SettlesEverythingOnASaturatedCPU(t *testing.T) {
	for _, be := range backends()[:2] { // memory, redis
		t.Run(be.name, func(t *testing.T) {
			n := 20000
			if be.redis {
				n = 8000
			}
			if raceDetector {
				n /= 10
			}
			c := newCatalog("http://unused")
			pol := c.limit("policy",
				snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1 << 40, Window: time.Hour},
				snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 1 << 50, Window: time.Hour},
				snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 1 << 20})
			tier := c.limit("tier",
				snapshot.Rule{Meter: snapshot.MeterInputTokens, Amount: 1 << 50, Window: time.Hour},
				snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 1 << 20})
			c.policy.RateLimitID, c.hostKey.TierRateLimitID = pol.ID, tier.ID
			snap := c.build()
			// One instant: every reservation and settlement in one window
			// bucket, so the levels are exact whatever the run's length.
			clock := &fakeClock{t: time.Now()}
			// Settlement under load, not a slow Redis: the spinning
			// goroutines (and, on CI, the other packages' tests) can keep a
			// Redis reply past the 100 ms request-path bound, which would
			// fall back to the local share and count as a failure here.
			l := be.open(t, 1, Options{Now: clock.Now, Timeout: 5 * time.Second})[0]

			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			var stop atomic.Bool
			var spin sync.WaitGroup
			for range runtime.GOMAXPROCS(0) {
				spin.Go(func() {
					for x := 0; !stop.Load(); x++ {
						_ = x
					}
				})
			}
			// Estimates: 2000 bytes → 500 input tokens, 256 output; actual 40 + 10.
			u := wire.Usage{Input: 40, Output: 10}
			var next atomic.Int64
			var callers sync.WaitGroup
			for range 64 {
				callers.Go(func() {
					for next.Add(1) <= int64(n) {
						r, err := attempt(t.Context(), l, c.admission(t, snap, 2000, 256), c.hostKey, c.binding)
						if err != nil {
							t.Error(err)
							return
						}
						r.Done(u)
					}
				})
			}
			callers.Wait()
			stop.Store(true)
			spin.Wait()
			flush(t, l)

			st := l.Stats()
			if st.SettleDropped != 0 || st.LeasesDropped != 0 || st.SettleErrors != 0 || st.FailOpen != 0 {
				t.Errorf("%d requests: %d settlements dropped (%d lease releases), %d settle errors, %d fallbacks; want none",
					n, st.SettleDropped, st.LeasesDropped, st.SettleErrors, st.FailOpen)
			}
			want := []int64{int64(n), int64(n) * (u.Input + u.Output), 0}
			for i, rule := range pol.Rules {
				if got, err := l.Level(t.Context(), c.policy, pol, rule, snapshot.ID{}); err != nil || got != want[i] {
					t.Errorf("policy %s: level %d (%v), want %d", rule.Meter, got, err, want[i])
				}
			}
			want = []int64{int64(n) * u.Input, 0}
			for i, rule := range tier.Rules {
				if got := tierLevel(t, l, c.hostKey, tier, rule); got != want[i] {
					t.Errorf("tier %s: level %d, want %d", rule.Meter, got, want[i])
				}
			}
		})
	}
}

// tierLevel is Level for a host key's tier rule.
func tierLevel(t *testing.T, l *Limiter, key *snapshot.HostKey, rl *snapshot.RateLimit, rule *snapshot.Rule) int64 {
	t.Helper()
	c := ruleCounter(tierKey(key.ID, rl.ID), rule, uuid.Nil, 0, "", l.opts.LeaseTTL)
	c.Amount = 0
	if c.Kind == KindLease {
		c.Limit = 1 << 40
	}
	v, err := l.primary.Peek(t.Context(), []Counter{c}, l.now())
	if err != nil {
		t.Fatal(err)
	}
	return v.Used[0]
}

// TestLimiter_FullSettleQueueKeepsLeaseReleases fills the settle queue while
// every settle goroutine is held inside a store: past the queue's capacity a
// settlement keeps only its lease releases (its token adjustments are
// dropped and counted); past twice the capacity it is dropped whole.
func TestLimiter_FullSettleQueueKeepsLeaseReleases(t *testing.T) {
	t.Parallel()
	l := New(Options{SettleQueue: 2})
	t.Cleanup(func() { _ = l.Close() })
	st := &heldStore{Memory: NewMemory(), entered: make(chan struct{}, 64), release: make(chan struct{})}
	job := func(i int) []Adjust {
		return []Adjust{
			{Counter: Counter{Kind: KindWindow, Key: "w", Window: time.Minute}, Delta: -1},
			{Counter: Counter{Kind: KindLease, Key: "l", Lease: fmt.Sprint(i)}},
		}
	}
	// Each settle goroutine (the first, and the helpers a backlog wakes)
	// takes one job and is held inside Settle.
	held := 1 + settleHelpers
	for i := range held {
		l.settle(st, job(i))
		<-st.entered
	}
	for i := held; i < held+5; i++ {
		l.settle(st, job(i))
	}
	close(st.release)
	flush(t, l)
	s := l.Stats()
	// Of the next five, two are queued whole, two their lease release
	// only, one is dropped whole.
	if s.SettleDropped != 3 || s.LeasesDropped != 1 {
		t.Errorf("dropped %d settlements, %d lease releases; want 3 and 1", s.SettleDropped, s.LeasesDropped)
	}
	var want []string
	for i := range held + 4 {
		want = append(want, fmt.Sprint(i))
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	slices.Sort(st.leases)
	if !slices.Equal(st.leases, want) || st.windows != held+2 {
		t.Errorf("settled leases %v and %d window adjustments; want %v and %d", st.leases, st.windows, want, held+2)
	}
}

// heldStore is a memory store whose Settle waits for release, and which
// records what it settles.
type heldStore struct {
	*Memory
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	leases  []string
	windows int
}

func (s *heldStore) Settle(ctx context.Context, adj []Adjust, now time.Time) error {
	s.entered <- struct{}{}
	<-s.release
	s.mu.Lock()
	for _, a := range adj {
		switch a.Kind {
		case KindLease:
			s.leases = append(s.leases, a.Lease)
		case KindWindow:
			s.windows++
		}
	}
	s.mu.Unlock()
	return s.Memory.Settle(ctx, adj, now)
}

// scriptCounter counts the limiter script's calls in one mode ("r", "s"
// …), in pipelines too, and the round trips that carry them.
type scriptCounter struct {
	mode         string
	calls, trips atomic.Int64
}

func (c *scriptCounter) count(cmds ...redis.Cmder) {
	n := 0
	for _, cmd := range cmds {
		a := cmd.Args()
		if len(a) > 3 && (a[0] == "evalsha" || a[0] == "eval") {
			if k, ok := a[2].(int); ok && len(a) > 3+k && a[3+k] == c.mode {
				n++
			}
		}
	}
	if n > 0 {
		c.calls.Add(int64(n))
		c.trips.Add(1)
	}
}

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(cmds...)
		return next(ctx, cmds)
	}
}

// TestLimiter_SettlementsGoTogether: on Redis, the settlements that come
// within SettleEvery of the last round trip wait and go together in one,
// while the first after a quiet spell goes at once — and nothing is lost
// on the way (the levels are the actual counts).
func TestLimiter_SettlementsGoTogether(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	pol := c.limit("policy",
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1000, Window: time.Hour},
		snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 1 << 40, Window: time.Hour},
		snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 1000})
	c.policy.RateLimitID = pol.ID
	snap := c.build()
	settles := &scriptCounter{mode: "s"}
	rc := client(t, redistest.URL(t))
	rc.AddHook(settles)
	l := New(Options{Redis: rc, Prefix: redistest.Prefix(t), Timeout: 5 * time.Second, SettleEvery: time.Hour})
	t.Cleanup(func() { _ = l.Close() })
	u := wire.Usage{Input: 40, Output: 10}
	one := func() {
		r, err := attempt(t.Context(), l, c.admission(t, snap, 2000, 256), nil, c.binding)
		if err != nil {
			t.Fatal(err)
		}
		r.Done(u)
	}
	lease := pol.Rules[2]
	one()
	eventually(t, "the first settlement, sent at once", func() bool {
		n, err := l.Level(t.Context(), c.policy, pol, lease, snapshot.ID{})
		return err == nil && n == 0
	})
	const n = 20
	for range n {
		one()
	}
	if got, err := l.Level(t.Context(), c.policy, pol, lease, snapshot.ID{}); err != nil || got != n {
		t.Errorf("before the flush: %d leases held (%v), want %d: their settlements wait for the next turn", got, err, n)
	}
	flush(t, l)
	if got := settles.trips.Load(); got != 2 {
		t.Errorf("%d settling round trips for %d requests, want 2", got, n+1)
	}
	want := []int64{n + 1, (n + 1) * (u.Input + u.Output), 0}
	for i, rule := range pol.Rules {
		if got, err := l.Level(t.Context(), c.policy, pol, rule, snapshot.ID{}); err != nil || got != want[i] {
			t.Errorf("%s: level %d (%v), want %d", rule.Meter, got, err, want[i])
		}
	}
}

// TestLimiter_WaiterIsNotHeldBySettleEvery: a request waiting for a
// concurrency slot is admitted when the request holding it ends, however
// long SettleEvery is: the release that frees its slot goes at once.
func TestLimiter_WaiterIsNotHeldBySettleEvery(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	c.policy.RateLimitID = c.limit("one", snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 1}).ID
	c.policy.MaxWait = 30 * time.Second
	snap := c.build()
	waiting := startSignal{c: make(chan struct{}, 1)}
	l := openRedis(t, redistest.URL(t), 1, Options{SettleEvery: time.Hour, LeasePoll: time.Hour})[0]
	l.ObservePacing(waiting)
	// A first request, settled: the next settlement falls within SettleEvery.
	r, err := attempt(t.Context(), l, c.admission(t, snap, 100, 10), nil, c.binding)
	if err != nil {
		t.Fatal(err)
	}
	r.Done(wire.Usage{})
	flush(t, l)
	holder, err := attempt(t.Context(), l, c.admission(t, snap, 100, 10), nil, c.binding)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		r, err := attempt(ctx, l, c.admission(t, snap, 100, 10), nil, c.binding)
		if err == nil {
			r.Done(wire.Usage{})
		}
		got <- err
	}()
	<-waiting.c
	holder.Done(wire.Usage{})
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v, want admitted once the holder ended", err)
	}
}
