package ratelimit

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// BenchmarkRedisReserve is what a Redis-enforced limit costs per request,
// on a redis-server of its own and on a 3-master Redis Cluster, from 64
// concurrent callers spread over 8 catalogs (8 policies, 8 host keys, 8
// budgets). Each request is a first attempt and its settlement, in one of
// two shapes: "full" (the policy's requests, total tokens and concurrency
// rules; the host key's tier requests and input tokens; a project budget —
// three owners) and "policy" (the policy's rules alone — one owner). "off"
// runs the same callers without a limiter: the harness's own CPU, to take
// from relay-cpu-µs/op; "one-node/floor" runs, instead of a reservation, a
// script that returns at once, with as many keys and arguments as a full
// one: what any one-call design pays for the network and EVALSHA itself.
// It reports, per request:
//
//   - redis-cpu-µs/op: the redis-server processes' CPU (INFO cpu,
//     used_cpu_user + used_cpu_sys), summed over the nodes — the scripts,
//     the protocol and the event loop;
//   - script-µs/op: the scripts' time (INFO commandstats, EVALSHA and EVAL;
//     wall time, so it counts a descheduled server too);
//   - max-node-share: the busiest node's part of that CPU (1 on one node;
//     1/3 when a cluster spreads the load evenly);
//   - ceiling-reservations/s: what the Redis side could admit with each
//     node on one core of its own: 1e6 / the busiest node's µs per request;
//   - relay-cpu-µs/op: this process's CPU — the limiter, go-redis and the
//     callers.
//
// RELAY_BENCH_COMMANDSTATS=1 logs which commands the scripts ran.
//
//	go test -run '^$' -bench RedisReserve -benchtime 20000x ./internal/ratelimit/
func BenchmarkRedisReserve(b *testing.B) {
	redistest.SkipWithoutRedisServer(b)
	for _, topo := range []string{"off", "one-node", "cluster"} {
		for _, shape := range []string{"full", "policy", "floor"} {
			if (topo == "off" && shape != "full") || (topo == "cluster" && shape == "floor") {
				continue
			}
			b.Run(topo+"/"+shape, func(b *testing.B) { benchRedisReserve(b, topo, shape) })
		}
	}
}

func benchRedisReserve(b *testing.B, topo, shape string) {
	const groups = 8
	var url string
	var addrs []string
	switch topo {
	case "cluster":
		cl := redistest.StartCluster(b)
		url, addrs = cl.URL(), cl.Addrs()
	case "one-node":
		s := redistest.Start(b)
		url, addrs = s.URL(), []string{s.Addr()}
	}
	var l *Limiter
	if url != "" {
		// One limiter (one pod) with the default settle queue; never fall
		// back to memory (this measures Redis, not a timeout). Every
		// settlement is part of the bill (the timer runs until they are
		// applied); dropped ones are reported as settle-dropped.
		l = New(Options{Redis: client(b, url), Prefix: "bench:", Timeout: 5 * time.Second})
		b.Cleanup(func() { _ = l.Close() })
	}
	cats := make([]*catalog, groups)
	for g := range cats {
		c := seededBenchCatalog("http://unused", byte(g+1))
		if shape == "policy" {
			c.hostKey.TierRateLimitID = uuid.Nil
			c.data.Budgets = nil
		}
		cats[g] = c
	}
	noop := redis.NewScript("return {1, 0, -1, 0}")
	noopKeys := make([]string, 10)
	noopArgs := []any{"r", 0, 6}
	for i := range noopKeys {
		noopKeys[i] = "bench:{pol:" + uuid.NewString() + "}:" + uuid.NewString() + ":" + uuid.NewString() + ":60:w"
	}
	for range 6 {
		noopArgs = append(noopArgs, "w", int64(1)<<40, 60000, 756, "")
	}
	one := func(c *catalog, snap *snapshot.Snapshot) error {
		a := c.admission(b, snap, 2000, 256)
		if l == nil {
			return nil
		}
		if shape == "floor" {
			return noop.Run(b.Context(), l.opts.Redis, noopKeys, noopArgs...).Err()
		}
		r, err := attempt(b.Context(), l, a, c.hostKey, c.binding)
		if err != nil {
			return err
		}
		r.Done(wire.Usage{Input: 400, Output: 100})
		return nil
	}
	// Warm up: load the script on every node and create the keys.
	for _, c := range cats {
		if err := one(c, c.build()); err != nil {
			b.Fatal(err)
		}
	}
	flush := func() {
		if l != nil {
			if err := l.Flush(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	}
	flush()
	before := nodeStats(b, addrs)
	cpu0 := selfCPU()
	var next atomic.Int64
	b.SetParallelism(max(1, 64/runtimeProcs()))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := cats[int(next.Add(1))%groups]
		snap := c.build()
		for pb.Next() {
			if err := one(c, snap); err != nil {
				b.Error(err)
				return
			}
		}
	})
	flush()
	b.StopTimer()
	relayCPU := selfCPU() - cpu0
	after := nodeStats(b, addrs)
	n := float64(b.N)
	b.ReportMetric(relayCPU.Seconds()*1e6/n, "relay-cpu-µs/op")
	b.ReportMetric(n/b.Elapsed().Seconds(), "reservations/s")
	if l == nil {
		return
	}
	st := l.Stats()
	if st.FailOpen > 0 || st.SettleErrors > 0 {
		b.Fatalf("stats %+v: the benchmark must measure Redis, not the fallback", st)
	}
	b.ReportMetric(float64(st.SettleDropped), "settle-dropped")
	b.ReportMetric(float64(st.LeasesDropped), "leases-dropped")
	if os.Getenv("RELAY_BENCH_COMMANDSTATS") != "" {
		for _, a := range addrs {
			c := redis.NewClient(&redis.Options{Addr: a})
			info, _ := c.Info(b.Context(), "commandstats").Result()
			_ = c.Close()
			b.Log(info)
		}
	}
	var cpu, script, busiest float64
	for i := range addrs {
		d := after[i].cpu - before[i].cpu
		cpu += d
		script += after[i].scriptUsec - before[i].scriptUsec
		busiest = max(busiest, d)
	}
	b.ReportMetric(cpu*1e6/n, "redis-cpu-µs/op")
	b.ReportMetric(script/n, "script-µs/op")
	b.ReportMetric(busiest/cpu, "max-node-share")
	b.ReportMetric(n/busiest, "ceiling-reservations/s")
}

// nodeStat is one redis-server's CPU seconds and script µs so far.
type nodeStat struct{ cpu, scriptUsec float64 }

func nodeStats(b *testing.B, addrs []string) []nodeStat {
	out := make([]nodeStat, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		info, err := c.Info(b.Context(), "cpu", "commandstats").Result()
		_ = c.Close()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch {
			case k == "used_cpu_user" || k == "used_cpu_sys":
				f, _ := strconv.ParseFloat(v, 64)
				out[i].cpu += f
			case strings.HasPrefix(k, "cmdstat_eval"):
				for _, f := range strings.Split(v, ",") {
					if name, val, _ := strings.Cut(f, "="); name == "usec" {
						n, _ := strconv.ParseFloat(val, 64)
						out[i].scriptUsec += n
					}
				}
			}
		}
	}
	return out
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
