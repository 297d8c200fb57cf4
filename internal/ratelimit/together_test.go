package ratelimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
)

// gate holds the first reserving script call at the door until open is
// closed, and counts the reserving calls and the round trips that carry
// them.
type gate struct {
	scriptCounter
	held    atomic.Bool
	entered chan struct{}
	open    chan struct{}
}

func newGate() *gate {
	return &gate{scriptCounter: scriptCounter{mode: "r"}, entered: make(chan struct{}), open: make(chan struct{})}
}

func (g *gate) hold() {
	if g.held.CompareAndSwap(false, true) {
		close(g.entered)
		<-g.open
	}
}

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		before := g.calls.Load()
		g.count(cmd)
		if g.calls.Load() > before {
			g.hold()
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		before := g.calls.Load()
		g.count(cmds...)
		if g.calls.Load() > before {
			g.hold()
		}
		return next(ctx, cmds)
	}
}

// queued is how many reservations wait for the batch in flight.
func queued(s *Redis) int {
	s.together.mu.Lock()
	defer s.together.mu.Unlock()
	return len(s.together.queue)
}

// TestRedis_ReservationsGoTogether: the reservations made while one is on
// its way to Redis go together in the next round trip, one script call
// each, and the limit stays exact: of 21 requests under a limit of 15,
// exactly 15 are admitted. A queued reservation whose caller goes away
// leaves at once, and the others still go.
func TestRedis_ReservationsGoTogether(t *testing.T) {
	t.Parallel()
	c := newCatalog("http://unused")
	pol := c.limit("fifteen",
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 15, Window: time.Hour},
		snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 100})
	c.policy.RateLimitID = pol.ID
	snap := c.build()
	g := newGate()
	rc := client(t, redistest.URL(t))
	rc.AddHook(g)
	l := New(Options{Redis: rc, Prefix: redistest.Prefix(t), Timeout: 5 * time.Second})
	t.Cleanup(func() { _ = l.Close() })

	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	one := func(ctx context.Context) error {
		_, err := attempt(ctx, l, c.admission(t, snap, 100, 10), nil, c.binding)
		switch {
		case err == nil:
			admitted.Add(1)
		case code(err) == "rate_limited":
			refused.Add(1)
		default:
			return err
		}
		return nil
	}
	wg.Go(func() {
		if err := one(t.Context()); err != nil {
			t.Error(err)
		}
	})
	<-g.entered // the first is on its way; the next ones queue
	const n = 20
	for range n {
		wg.Go(func() {
			if err := one(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	eventually(t, "20 reservations queued", func() bool { return queued(l.redis) == n })

	ctx, cancel := context.WithCancel(t.Context())
	left := make(chan error, 1)
	go func() { left <- one(ctx) }()
	eventually(t, "one more queued", func() bool { return queued(l.redis) == n+1 })
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Errorf("a queued reservation whose caller went away: %v, want context.Canceled", err)
	}
	if q := queued(l.redis); q != n {
		t.Errorf("%d queued after one left, want %d", q, n)
	}

	close(g.open)
	wg.Wait()
	if a, r := admitted.Load(), refused.Load(); a != 15 || r != n+1-15 {
		t.Errorf("admitted %d, refused %d; want 15 and %d", a, r, n+1-15)
	}
	if calls, trips := g.calls.Load(), g.trips.Load(); calls != n+1 || trips != 2 {
		t.Errorf("%d reserving script calls in %d round trips, want %d in 2", calls, trips, n+1)
	}
	if got, err := l.Level(t.Context(), c.policy, pol, pol.Rules[0], snapshot.ID{}); err != nil || got != 15 {
		t.Errorf("requests level %d (%v), want 15", got, err)
	}
}
