package ratelimit

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// benchCatalog limits everything, generously: the policy (requests, tokens,
// concurrency), the host key's tier and a budget, so that a reservation
// carries every kind of counter and is never refused.
func benchCatalog(baseURL string) *catalog { return seededBenchCatalog(baseURL, 0) }

// seededBenchCatalog is benchCatalog with IDs of its own (newSeededCatalog).
func seededBenchCatalog(baseURL string, seed byte) *catalog {
	c := newSeededCatalog(baseURL, seed)
	c.policy.RateLimitID = c.limit("policy",
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1 << 40, Window: time.Minute},
		snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 1 << 50, Window: time.Minute},
		snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 1 << 20}).ID
	c.hostKey.TierRateLimitID = c.limit("tier",
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1 << 40, Window: time.Minute},
		snapshot.Rule{Meter: snapshot.MeterInputTokens, Amount: 1 << 50, Window: time.Minute}).ID
	c.budget(snapshot.Budget{ProjectID: c.project.ID, Period: "month", Amount: 1 << 60})
	return c
}

func benchLimiter(b *testing.B, redis bool) *Limiter {
	opts := Options{}
	if redis {
		opts.Redis, opts.Prefix = client(b, redistest.URL(b)), redistest.Prefix(b)
	}
	l := New(opts)
	b.Cleanup(func() { _ = l.Close() })
	return l
}

// BenchmarkReserve is one request's reservation (first attempt: policy,
// tier, budget) and settlement, from 64 concurrent callers. It reports the
// latency percentiles of the reservation.
func BenchmarkReserve(b *testing.B) {
	for _, backend := range []string{"memory", "redis"} {
		b.Run(backend, func(b *testing.B) {
			c := benchCatalog("http://unused")
			snap := c.build()
			l := benchLimiter(b, backend == "redis")
			var mu sync.Mutex
			var all []time.Duration
			b.SetParallelism(max(1, 64/runtimeProcs()))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				lat := make([]time.Duration, 0, 1024)
				for pb.Next() {
					a := c.admission(b, snap, 2000, 256)
					start := time.Now()
					r, err := attempt(b.Context(), l, a, c.hostKey, c.binding)
					lat = append(lat, time.Since(start))
					if err != nil {
						b.Error(err)
						return
					}
					r.Done(wire.Usage{Input: 400, Output: 100})
				}
				mu.Lock()
				all = append(all, lat...)
				mu.Unlock()
			})
			b.StopTimer()
			slices.Sort(all)
			if n := len(all); n > 0 {
				b.ReportMetric(float64(all[n/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(all[n*99/100].Microseconds()), "p99-µs")
			}
			reportStats(b, l)
		})
	}
}

// BenchmarkReserveLatency is the reservation latency seen by 64 (and 8)
// concurrent callers that each spend 20 ms upstream between reserving and
// settling — an offered load, unlike BenchmarkReserve's closed loop.
func BenchmarkReserveLatency(b *testing.B) {
	for _, bc := range []struct {
		backend string
		callers int
	}{{"memory", 64}, {"redis", 64}, {"redis", 8}} {
		b.Run(fmt.Sprintf("%s/callers=%d", bc.backend, bc.callers), func(b *testing.B) {
			backend := bc.backend
			c := benchCatalog("http://unused")
			snap := c.build()
			l := benchLimiter(b, backend == "redis")
			lat := make([]time.Duration, b.N)
			var next sync.WaitGroup
			jobs := make(chan int)
			b.ResetTimer()
			for range bc.callers {
				next.Go(func() {
					for i := range jobs {
						a := c.admission(b, snap, 2000, 256)
						start := time.Now()
						r, err := attempt(b.Context(), l, a, c.hostKey, c.binding)
						lat[i] = time.Since(start)
						if err != nil {
							b.Error(err)
							return
						}
						time.Sleep(20 * time.Millisecond)
						r.Done(wire.Usage{Input: 400, Output: 100})
					}
				})
			}
			for i := range b.N {
				jobs <- i
			}
			close(jobs)
			next.Wait()
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[b.N/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[b.N*99/100].Microseconds()), "p99-µs")
			reportStats(b, l)
		})
	}
}

// BenchmarkProxyLimiter sends whole requests through the proxy to an
// in-process mock upstream, without a limiter and with one in memory or in
// Redis, over loopback HTTP on both sides.
func BenchmarkProxyLimiter(b *testing.B) {
	mock := mockupstream.New(mockupstream.Options{Record: -1})
	up := httptest.NewServer(mock)
	defer up.Close()
	for _, mode := range []string{"off", "memory", "redis"} {
		b.Run(mode, func(b *testing.B) {
			c := benchCatalog(up.URL)
			snap := c.build()
			cfg := proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }}
			if mode != "off" {
				cfg.Limiter = benchLimiter(b, mode == "redis")
			}
			relay := httptest.NewServer(proxy.New(cfg))
			defer relay.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, relay.URL+"/v1/chat/completions", strings.NewReader(chatBody))
				req.Header.Set("Authorization", "Bearer "+testRelayKey)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(resp.Status)
				}
			}
		})
	}
}

// reportStats reports the reservations that fell back to the local share,
// the settlements dropped (whole or in part) on the way to the store and
// the lease releases among them, after waiting for those handed over to be
// applied.
func reportStats(b *testing.B, l *Limiter) {
	if err := l.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
	st := l.Stats()
	b.ReportMetric(float64(st.FailOpen), "fallbacks")
	b.ReportMetric(float64(st.SettleDropped), "settle-dropped")
	b.ReportMetric(float64(st.LeasesDropped), "leases-dropped")
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
