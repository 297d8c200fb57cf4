package ratelimit

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/wire"
)

// BenchmarkReserveTopology measures reservations per second (each the full
// one of BenchmarkReserve: policy requests, tokens and concurrency, a tier
// limit, a budget, then its settlement) from 64 concurrent callers spread
// over 8 policies, on one redis-server and on a 3-master Redis Cluster, with
// today's single hash tag ({rl}: every key in one slot, so one node) and
// with a throwaway tag per policy (each group's prefix carries its own
// "{gN}", which Redis hashes before Relay's "{rl}", so the 8 policies spread
// over the masters). Besides ns/op it reports the Redis CPU time of one
// reservation script (INFO commandstats, summed over the nodes) and the
// ceiling that gives one Redis core: 1e6 / µs-per-reservation per node
// that holds keys.
//
//	go test -run '^$' -bench ReserveTopology -benchtime 20000x ./internal/ratelimit/
func BenchmarkReserveTopology(b *testing.B) {
	redistest.SkipWithoutRedisServer(b)
	const groups = 8
	for _, topo := range []string{"one-node", "cluster"} {
		for _, tags := range []string{"one-tag", "tag-per-policy"} {
			b.Run(topo+"/"+tags, func(b *testing.B) {
				var url string
				var addrs []string
				if topo == "cluster" {
					cl := redistest.StartCluster(b)
					url, addrs = cl.URL(), cl.Addrs()
				} else {
					s := redistest.Start(b)
					url, addrs = s.URL(), []string{s.Addr()}
				}
				type group struct {
					c *catalog
					l *Limiter
				}
				var gs []group
				for g := range groups {
					prefix := "bench-g" + strconv.Itoa(g) + ":"
					if tags == "tag-per-policy" {
						prefix = "bench{g" + strconv.Itoa(g) + "}:"
					}
					// Throughput, not a slow Redis: never fall back to memory.
					l := New(Options{Redis: client(b, url), Prefix: prefix, Timeout: 5 * time.Second})
					b.Cleanup(func() { _ = l.Close() })
					gs = append(gs, group{benchCatalog("http://unused"), l})
				}
				resetStats(b, addrs)
				var next atomic.Int64
				b.SetParallelism(max(1, 64/runtimeProcs()))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					g := gs[int(next.Add(1))%groups]
					snap := g.c.build()
					for pb.Next() {
						r, err := attempt(b.Context(), g.l, g.c.admission(b, snap, 2000, 256), g.c.hostKey, g.c.binding)
						if err != nil {
							b.Error(err)
							return
						}
						r.Done(wire.Usage{Input: 400, Output: 100})
					}
				})
				b.StopTimer()
				for _, g := range gs {
					if err := g.l.Flush(b.Context()); err != nil {
						b.Fatal(err)
					}
				}
				var fallbacks int64
				for _, g := range gs {
					fallbacks += int64(g.l.Stats().FailOpen)
				}
				if fallbacks > 0 {
					b.Fatalf("%d reservations fell back to memory", fallbacks)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reservations/s")
				calls, usec, busy := scriptStats(b, addrs)
				if calls > 0 {
					// Reserve and settle are one call each: a reservation's
					// Redis time is both.
					per := usec / float64(b.N)
					b.ReportMetric(per, "redis-µs/reservation")
					b.ReportMetric(float64(busy)*1e6/per, "ceiling-reservations/s")
					b.ReportMetric(float64(busy), "nodes-with-keys")
				}
			})
		}
	}
}

func resetStats(b *testing.B, addrs []string) {
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		if err := c.ConfigResetStat(b.Context()).Err(); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// scriptStats sums script calls (EVALSHA, and EVAL after a NOSCRIPT) and
// their CPU µs over the nodes, and counts the nodes that ran them.
func scriptStats(b *testing.B, addrs []string) (calls, usec float64, busy int) {
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		info, err := c.Info(b.Context(), "commandstats").Result()
		_ = c.Close()
		if err != nil {
			b.Fatal(err)
		}
		var nodeCalls float64
		for _, line := range strings.Split(info, "\r\n") {
			_, rest, ok := strings.Cut(line, ":")
			if !ok || !strings.HasPrefix(line, "cmdstat_eval") {
				continue
			}
			for _, f := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(f, "=")
				n, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "calls":
					nodeCalls += n
				case "usec":
					usec += n
				}
			}
		}
		calls += nodeCalls
		if nodeCalls > float64(b.N)/100 {
			busy++
		}
	}
	return calls, usec, busy
}
