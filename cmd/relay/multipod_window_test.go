package main

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// windowRecorder reads, while a test runs, the buckets of the pods' policy
// window counters in Redis (docs/rate-limits.md, "Windows: exact, in
// buckets"): each bucket is named by its expiry, the end of the bucket in
// which its amounts were admitted plus the window, by Redis's clock. The
// last amount seen of each bucket (settled to the actual counts) is the
// limiter's own record of when it admitted what.
type windowRecorder struct {
	rdb    *redis.Client
	prefix string

	mu      sync.Mutex
	buckets map[int64]int64 // expiry in Unix ms → amount
	stop    chan struct{}
	done    chan struct{}
}

// recordWindows starts reading the window counters of every policy under
// the cluster's Redis prefix, every every.
func recordWindows(t *testing.T, c *cluster, every time.Duration) *windowRecorder {
	t.Helper()
	opt, err := redis.ParseURL(envValue(c.env, "RELAY_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	w := &windowRecorder{rdb: redis.NewClient(opt), prefix: envValue(c.env, "RELAY_REDIS_PREFIX"),
		buckets: map[int64]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() { _ = w.rdb.Close() })
	go func() {
		defer close(w.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			w.read(t.Context())
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// read takes one look at every window counter: the newest bucket from the
// 32-byte key, the older ones from its hash.
func (w *windowRecorder) read(ctx context.Context) {
	keys, err := w.rdb.Keys(ctx, w.prefix+"{pol:*:w").Result()
	if err != nil {
		return
	}
	for _, k := range keys {
		raw, err := w.rdb.Get(ctx, k).Bytes()
		older, herr := w.rdb.HGetAll(ctx, k+"b").Result()
		w.mu.Lock()
		if err == nil && len(raw) == 32 {
			tail, amount := int64(binary.BigEndian.Uint64(raw[16:])), int64(binary.BigEndian.Uint64(raw[24:]))
			if tail > 0 {
				w.buckets[tail] = amount
			}
		}
		if herr == nil {
			for f, v := range older {
				e, err1 := strconv.ParseInt(f, 10, 64)
				n, err2 := strconv.ParseInt(v, 10, 64)
				if err1 == nil && err2 == nil {
					w.buckets[e] = n
				}
			}
		}
		w.mu.Unlock()
	}
}

// close stops the recorder.
func (w *windowRecorder) close() {
	close(w.stop)
	<-w.done
}

// admissions takes one more look and returns, for amounts of per each,
// the moments they were admitted (the end of their bucket, by Redis's
// clock), in order.
func (w *windowRecorder) admissions(window time.Duration, per int64) []time.Time {
	w.read(context.Background())
	w.mu.Lock()
	defer w.mu.Unlock()
	var at []time.Time
	for e, n := range w.buckets {
		admitted := time.UnixMilli(e).Add(-window)
		for range n / per {
			at = append(at, admitted)
		}
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	return at
}

// mostWithin is the most of ts within any span (sorted ts).
func mostWithin(ts []time.Time, span time.Duration) int {
	best := 0
	for i, j := 0, 0; i < len(ts); i++ {
		for ts[i].Sub(ts[j]) >= span {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// lags pairs the k-th admission with the k-th arrival (both sorted) and
// returns arrival − admission for each pair.
func lags(admitted, arrived []time.Time) []time.Duration {
	n := min(len(admitted), len(arrived))
	d := make([]time.Duration, n)
	for k := range n {
		d[k] = arrived[k].Sub(admitted[k])
	}
	return d
}
