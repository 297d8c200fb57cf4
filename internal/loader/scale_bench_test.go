package loader

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/snapshot"
)

// BenchmarkLoaderAtScale is the snapshot loader of 3 pods on one Postgres
// holding 100,000 relay keys and 10,000 bindings (1,000 models on 10 of 100
// hosts): the 3 loaders run in this one process, each on its own connection
// pool and LISTEN connection, as 3 pods would. It reports the initial load
// time of each when all three start at once, the heap one snapshot holds,
// and the propagation of a probe model (insert → every loader has it) while
// a bulk apply of 5,000 objects (1,000 hosts, 2,000 models, 2,000 bindings,
// one transaction each, 4 at a time, like `relay apply --parallel 4`)
// commits. The debounce is RELAY_LOADER_SCALE_DEBOUNCE (default 1s, the
// production default). Run it once:
//
//	go test -run '^$' -bench LoaderAtScale -benchtime 1x -timeout 30m ./internal/loader/
func BenchmarkLoaderAtScale(b *testing.B) {
	debounce := time.Second
	if v := os.Getenv("RELAY_LOADER_SCALE_DEBOUNCE"); v != "" {
		var err error
		if debounce, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	url := pgtest.NewDB(b)
	st := openStoreB(b, url)
	box, err := newBoxKey()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	seed := time.Now()
	for _, q := range []string{
		`INSERT INTO teams (slug) VALUES ('scale')`,
		`INSERT INTO projects (team_id, slug) SELECT t.id, 'p' || i FROM teams t, generate_series(1, 100) i`,
		`INSERT INTO service_accounts (project_id, slug) SELECT id, 'sa' FROM projects`,
		`INSERT INTO relay_keys (key_hash, display_prefix, project_id, service_account_id)
		 SELECT decode(md5(i::text) || md5((-i)::text), 'hex'), 'sk-wr-' || i, sa.project_id, sa.id
		 FROM generate_series(1, 100000) i
		 JOIN (SELECT row_number() OVER () - 1 AS n, id, project_id FROM service_accounts) sa ON sa.n = i % 100`,
		`INSERT INTO hosts (slug, provider, base_url) SELECT 'h' || i, 'openai', 'http://h' || i || '.example' FROM generate_series(1, 100) i`,
		`INSERT INTO models (name) SELECT 'm' || i FROM generate_series(1, 1000) i`,
		`INSERT INTO bindings (model_id, host_id, shape, upstream_model, position)
		 SELECT m.id, h.id, 'openai', m.name, k
		 FROM generate_series(1, 1000) i CROSS JOIN generate_series(0, 9) k
		 JOIN models m ON m.name = 'm' || i JOIN hosts h ON h.slug = 'h' || ((i + k * 10) % 100 + 1)`,
	} {
		if _, err := st.Pool().Exec(ctx, q); err != nil {
			b.Fatalf("seed: %v\n%s", err, q)
		}
	}
	var keys, bindings int
	_ = st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM relay_keys), (SELECT count(*) FROM bindings)`).Scan(&keys, &bindings)
	b.Logf("seeded %d relay keys, %d bindings in %s", keys, bindings, time.Since(seed).Round(time.Millisecond))

	// probes[name] is when the probe committed; seen[i][name] when loader i
	// first published a snapshot with it.
	var mu sync.Mutex
	probes := map[string]time.Time{}
	const pods = 3
	seen := make([]map[string]time.Time, pods)
	first := make([]chan time.Duration, pods)
	runCtx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	defer func() { cancel(); running.Wait() }()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	loaders := make([]*Loader, pods)
	for i := range pods {
		seen[i] = map[string]time.Time{}
		first[i] = make(chan time.Duration, 1)
		loaders[i] = New(openStoreB(b, url), box, quiet(), Options{
			Debounce: debounce,
			OnSwap: func(s *snapshot.Snapshot) {
				now := time.Now()
				select {
				case first[i] <- now.Sub(start):
				default:
				}
				mu.Lock()
				defer mu.Unlock()
				for name := range probes {
					if _, ok := seen[i][name]; !ok && s.ModelByName(name) != nil {
						seen[i][name] = now
					}
				}
			},
		})
		running.Go(func() { loaders[i].Run(runCtx) })
	}
	var loads []time.Duration
	for i := range pods {
		select {
		case d := <-first[i]:
			loads = append(loads, d)
		case <-time.After(5 * time.Minute):
			b.Fatal("no first load within 5 minutes")
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perPod := float64(after.HeapAlloc-before.HeapAlloc) / pods
	slices.Sort(loads)
	b.Logf("initial load, 3 loaders at once: %v; heap per snapshot %.0f MiB", loads, perPod/(1<<20))
	b.ReportMetric(loads[len(loads)-1].Seconds(), "initial-load-s")
	b.ReportMetric(perPod/(1<<20), "heap-MiB/pod")

	// The bulk apply, and a probe model every 200 ms while it runs.
	bulkDone := make(chan struct{})
	probing := make(chan struct{})
	go func() {
		defer close(probing)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-bulkDone:
				return
			case <-tick.C:
			}
			name := fmt.Sprintf("probe-%d", n)
			if _, err := st.Pool().Exec(ctx, `INSERT INTO models (name) VALUES ($1)`, name); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			probes[name] = time.Now()
			mu.Unlock()
		}
	}()
	bulk := time.Now()
	stage := func(n int, q func(i int) (string, []any)) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range 4 {
			wg.Go(func() {
				for i := range next {
					sql, args := q(i)
					if _, err := st.Pool().Exec(ctx, sql, args...); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	stage(1000, func(i int) (string, []any) {
		return `INSERT INTO hosts (slug, provider, base_url) VALUES ($1, 'openai', 'http://bulk.example')`, []any{fmt.Sprintf("bulk-h%d", i)}
	})
	stage(2000, func(i int) (string, []any) {
		return `INSERT INTO models (name) VALUES ($1)`, []any{fmt.Sprintf("bulk-m%d", i)}
	})
	stage(2000, func(i int) (string, []any) {
		return `INSERT INTO bindings (model_id, host_id, shape, upstream_model)
			SELECT m.id, h.id, 'openai', 'x' FROM models m, hosts h WHERE m.name = $1 AND h.slug = $2`,
			[]any{fmt.Sprintf("bulk-m%d", i), fmt.Sprintf("bulk-h%d", i%1000)}
	})
	bulkTook := time.Since(bulk)
	close(bulkDone)
	<-probing

	// Every probe reaches every loader; its propagation is the slowest.
	deadline := time.Now().Add(2 * time.Minute)
	var lat []time.Duration
	for {
		mu.Lock()
		lat = lat[:0]
		for name, at := range probes {
			last := time.Time{}
			for i := range pods {
				if t, ok := seen[i][name]; ok && t.After(last) {
					last = t
				} else if !ok {
					last = time.Time{}
					break
				}
			}
			if !last.IsZero() {
				lat = append(lat, last.Sub(at))
			}
		}
		all := len(lat) == len(probes)
		mu.Unlock()
		if all {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d probes propagated within 2 minutes of the bulk's end", len(lat), len(probes))
		}
		time.Sleep(50 * time.Millisecond)
	}
	slices.Sort(lat)
	p := func(q int) time.Duration { return lat[(len(lat)-1)*q/100] }
	b.Logf("bulk of 5,000 objects committed in %s; %d probes during it, debounce %s: propagation to all 3 p50 %s, p99 %s, max %s",
		bulkTook.Round(time.Millisecond), len(lat), debounce, p(50), p(99), p(100))
	b.ReportMetric(bulkTook.Seconds(), "bulk-s")
	b.ReportMetric(float64(p(50).Milliseconds()), "propagation-p50-ms")
	b.ReportMetric(float64(p(99).Milliseconds()), "propagation-p99-ms")
}
