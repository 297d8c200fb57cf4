package ratelimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/wire"
)

// commandCounter counts the commands a Redis client sends (a pipeline's
// each), and the round trips.
type commandCounter struct{ cmds, trips atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.cmds.Add(1)
		c.trips.Add(1)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.cmds.Add(int64(len(cmds)))
		c.trips.Add(1)
		return next(ctx, cmds)
	}
}

// startSignal tells when a request starts waiting.
type startSignal struct{ c chan struct{} }

func (s startSignal) PacingStarted() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}
func (s startSignal) PacingEnded(time.Duration, string) {}

// BenchmarkReservationWaits is the cost of one reservation that fits at
// once against one that waits for tokens and is admitted when a request
// in flight settles below its estimate (on one Redis; the settlement's
// wake-up goes through pub/sub). It reports this process's CPU and the
// Redis commands and round trips per reservation, settlements included.
// Run once with a bounded -benchtime, e.g. -benchtime 2000x.
func BenchmarkReservationWaits(b *testing.B) {
	for _, mode := range []string{"fits", "waits"} {
		b.Run(mode, func(b *testing.B) {
			cnt := &commandCounter{}
			rc := client(b, redistest.URL(b))
			rc.AddHook(cnt)
			l := New(Options{Redis: rc, Prefix: redistest.Prefix(b), Timeout: 5 * time.Second, TokenPoll: time.Hour, FixedEstimates: true})
			b.Cleanup(func() { _ = l.Close() })
			c, _ := tokenCatalog(1, 10*time.Second)
			snap := c.build()
			ctx := b.Context()
			big := c.admission(b, snap, 400, 900)   // 1000: the whole rule
			small := c.admission(b, snap, 400, 400) // 500
			done := make(chan struct{})
			started := startSignal{make(chan struct{}, 1)}
			l.ObservePacing(started)
			if err := l.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			cmds0, trips0, cpu0 := cnt.cmds.Load(), cnt.trips.Load(), selfCPU()
			b.ResetTimer()
			for range b.N {
				if mode == "fits" {
					r, err := attempt(ctx, l, small, c.hostKey, c.binding)
					if err != nil {
						b.Fatal(err)
					}
					r.Done(wire.Usage{}) // gives every token back
					continue
				}
				// The last waiter's settlement applied, so the holder
				// fits at once.
				if err := l.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				held, err := attempt(ctx, l, big, c.hostKey, c.binding)
				if err != nil {
					b.Fatal(err)
				}
				go func() {
					r, err := attempt(ctx, l, small, c.hostKey, c.binding)
					if err != nil {
						b.Error(err)
					} else {
						r.Done(wire.Usage{})
					}
					done <- struct{}{}
				}()
				<-started.c
				held.Done(wire.Usage{})
				<-done
			}
			b.StopTimer()
			if err := l.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			if mode == "waits" {
				n *= 2 // the holder's reservation and the waiter's
			}
			b.ReportMetric((selfCPU()-cpu0).Seconds()*1e6/n, "relay-cpu-µs/reservation")
			b.ReportMetric(float64(cnt.cmds.Load()-cmds0)/n, "redis-cmds/reservation")
			b.ReportMetric(float64(cnt.trips.Load()-trips0)/n, "round-trips/reservation")
		})
	}
}
