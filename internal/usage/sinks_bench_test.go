package usage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-llm/relay/internal/natstest"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
)

// committedSink passes batches to the ledger and notes, for every event of
// a batch that committed, how long after its answer (the event's
// CreatedAt) the row was committed.
type committedSink struct {
	sink   usage.Sink
	mu     sync.Mutex
	delays []time.Duration
	events int
}

func (s *committedSink) IngestUsageEvents(ctx context.Context, rows []store.UsageEvent) (int64, error) {
	n, err := s.sink.IngestUsageEvents(ctx, rows)
	if err != nil {
		return n, err
	}
	now := time.Now()
	s.mu.Lock()
	for _, r := range rows {
		s.delays = append(s.delays, now.Sub(r.CreatedAt))
	}
	s.events += len(rows)
	s.mu.Unlock()
	return n, nil
}

func (s *committedSink) committed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events
}

// percentiles returns the p50 and p99 of the delays noted so far.
func (s *committedSink) percentiles() (p50, p99 time.Duration) {
	s.mu.Lock()
	d := slices.Clone(s.delays)
	s.mu.Unlock()
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100]
}

// backendCPU is the CPU time Postgres's backends serving application name
// app have used, read from /proc (Postgres on this machine); ok is false
// when a backend's /proc entry cannot be read (Postgres elsewhere).
func backendCPU(ctx context.Context, pool *pgxpool.Pool, app string) (cpu time.Duration, ok bool) {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		return 0, false
	}
	defer rows.Close()
	ok = true
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return 0, false
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		// Fields after the command's closing parenthesis: utime and stime
		// are the 12th and 13th, in clock ticks (100 a second on Linux).
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			return 0, false
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		cpu += time.Duration(u+s) * 10 * time.Millisecond
	}
	return cpu, ok && rows.Err() == nil
}

// withApp adds application_name to a Postgres URL, so the backends a store
// opens can be told apart from the others.
func withApp(dbURL, app string) string {
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	return dbURL + sep + "application_name=" + app
}

// BenchmarkLedgerSinks sends realistic routed events (routedRecord, route
// details trimmed as `relay serve` does) through each usage sink into a
// fresh ledger, with `relay serve`'s writer settings (a spool, default batch
// and flush interval) and `relay usage-consume`'s consumer defaults. It
// reports events/s (20 000 events recorded at once, until every one is
// committed in the ledger; for jetstream the pod publishing and one consumer
// loading at once), pod-events/s (until the pod's sink has taken every one),
// pg-cpu-ms/1k-events (the CPU of the Postgres backends that wrote them,
// from /proc; left out when Postgres is not on this machine), and
// delay-p50-ms and delay-p99-ms (from an event's answer to its ledger row's
// commit, for 5 000 events offered at 1 000 a second). Run it with:
//
//	RELAY_TEST_DATABASE_URL=… go test ./internal/usage -run '^$' -bench LedgerSinks -benchtime 1x
func BenchmarkLedgerSinks(b *testing.B) {
	for _, sink := range []string{"postgres", "jetstream"} {
		b.Run("sink="+sink, func(b *testing.B) {
			for range b.N {
				ledgerSinkRun(b, sink)
			}
		})
	}
}

func ledgerSinkRun(b *testing.B, sinkKind string) {
	ctx := context.Background()
	const app = "relay_ledger_bench"
	st, err := store.Open(ctx, withApp(pgtest.NewDB(b), app))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Pool().Ping(ctx); err != nil {
		b.Fatal(err)
	}
	ledger := &committedSink{sink: st}
	var podSink usage.Sink = ledger
	if sinkKind == "jetstream" {
		nats := natstest.Start(b)
		cfg := usage.JetStreamConfig{URL: nats.URL(), Stream: "BENCH_USAGE", Subject: "bench.usage", Name: "pod"}
		pod, err := usage.OpenJetStream(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer pod.Close()
		podSink = pod
		cfg.Name = "consumer"
		consumer, err := usage.OpenJetStream(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer consumer.Close()
		cctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = consumer.Consume(cctx, ledger, usage.ConsumeConfig{}, nil)
		}()
		defer func() { stop(); <-done }()
	}
	newWriter := func() *usage.Writer {
		return usage.NewWriter(usage.WriterConfig{Sink: podSink, SpoolDir: filepath.Join(b.TempDir(), "spool", "usage"),
			TrimRouteDetail: true, RouteDetailSample: 0.01})
	}
	projects := []uuid.UUID{uuid.New(), uuid.New()}

	// The rate, and Postgres's CPU for it.
	const burst = 20000
	cpu0, cpuOK := backendCPU(ctx, st.Pool(), app)
	w := newWriter()
	b.ResetTimer()
	start := time.Now()
	for i := range burst {
		w.Record(sharedRecord(i, projects))
	}
	poll.Until(b, 5*time.Minute, "every event taken by the pod's sink", func() bool { return w.Stats().Written >= burst })
	podTook := time.Since(start)
	poll.Until(b, 5*time.Minute, "every event committed in the ledger", func() bool { return ledger.committed() >= burst })
	took := time.Since(start)
	b.StopTimer()
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	cpu1, ok := backendCPU(ctx, st.Pool(), app)
	b.ReportMetric(burst/took.Seconds(), "events/s")
	b.ReportMetric(burst/podTook.Seconds(), "pod-events/s")
	if cpuOK && ok {
		b.ReportMetric(float64((cpu1-cpu0).Milliseconds())*1000/burst, "pg-cpu-ms/1k-events")
	}

	// The delay from answer to row, at a steady rate below capacity.
	ledger.mu.Lock()
	ledger.delays, ledger.events = nil, 0
	ledger.mu.Unlock()
	const steady, perSecond = 5000, 1000
	w = newWriter()
	tick := time.NewTicker(time.Second / 100)
	defer tick.Stop()
	for i := 0; i < steady; {
		<-tick.C
		for range perSecond / 100 {
			w.Record(sharedRecord(burst+i, projects))
			i++
		}
	}
	poll.Until(b, 5*time.Minute, "every steady event committed", func() bool { return ledger.committed() >= steady })
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	p50, p99 := ledger.percentiles()
	b.ReportMetric(float64(p50.Microseconds())/1000, "delay-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "delay-p99-ms")
	b.ReportMetric(0, "ns/op")
}
