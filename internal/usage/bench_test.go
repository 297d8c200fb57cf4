package usage_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/metrics"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/internal/wire"
)

type discardSink struct{}

func (discardSink) IngestUsageEvents(_ context.Context, rows []store.UsageEvent) (int64, error) {
	return int64(len(rows)), nil
}

// BenchmarkWriterRecord is what Record costs the request path: the snapshot
// lookup of the binding, the cost arithmetic, the metrics (with an observer)
// and the channel send. The queue has its default size; dropped/op shows how
// often the loop outran the writer goroutine (a drop is the cheaper path).
func BenchmarkWriterRecord(b *testing.B) {
	binding := uuid.New()
	snap := snapshot.Build(&snapshot.Data{Bindings: []*snapshot.Binding{{ID: binding, Enabled: true, Pricing: snapshot.Pricing{
		Input: 2_500_000, CachedInput: 1_250_000, Output: 10_000_000, Reasoning: 10_000_000,
		Tiers: []snapshot.PriceTier{{AboveInputTokens: 200_000, InputPrice: 5_000_000, OutputPrice: 15_000_000}},
	}}}}, 1, time.Now())
	rec := event.Record{
		RequestID: "req_0123456789abcdef0123456789abcdef", At: time.Now(), CredentialKind: snapshot.CredentialRelayKey,
		CredentialID: uuid.New(), ProjectID: uuid.New(), TeamID: uuid.New(), ServiceAccountID: uuid.New(), PolicyID: uuid.New(),
		Model: "gpt", ModelID: uuid.New(), BindingID: binding, HostID: uuid.New(), HostSlug: "openai", HostKeyID: uuid.New(),
		Inbound: "openai_chat", Upstream: wire.ShapeOpenAI, Stream: true, Status: 200, Attempts: 1,
		Usage:           wire.Usage{Input: 1200, Output: 300, CacheRead: 600, Reasoning: 100},
		TimeToFirstByte: 80 * time.Millisecond, Total: 900 * time.Millisecond, Overhead: 35 * time.Microsecond,
	}
	for _, tc := range []struct {
		name     string
		observer bool
		queue    int
		journal  bool // with a spool: every event journaled first, as relay serve runs it
	}{{"queued", false, 0, false}, {"queued+metrics", true, 0, false}, {"full-queue-drops", false, 1, false},
		{"journaled+metrics", true, 0, true}, {"journaled-full-queue-spills", false, 1, true}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := usage.WriterConfig{Sink: discardSink{}, Snapshot: func() *snapshot.Snapshot { return snap }, QueueSize: tc.queue}
			if tc.journal {
				cfg.SpoolDir = b.TempDir()
			}
			if tc.observer {
				cfg.Observer = metrics.New(metrics.Options{})
			}
			w := usage.NewWriter(cfg)
			b.ReportAllocs()
			for b.Loop() {
				w.Record(rec)
			}
			b.StopTimer()
			st := w.Stats()
			b.ReportMetric(float64(st.Dropped)/float64(b.N), "dropped/op")
			b.ReportMetric(float64(st.Spilled)/float64(b.N), "spilled/op")
			_ = w.Close(context.Background())
		})
	}
}

// BenchmarkIngest measures the batch write into Postgres: COPY into the
// session's batch table, the deduplicating insert into the partitioned
// ledger and the rollup upserts, in one transaction per batch of 1000.
// "typical" is a second of traffic from 2000 relay keys of skewed activity
// (a few hundred rollup groups per batch); "worst" gives every event its own
// rollup group.
func BenchmarkIngest(b *testing.B) {
	for _, tc := range []struct {
		name  string
		worst bool
	}{{"typical", false}, {"worst", true}} {
		b.Run(tc.name, func(b *testing.B) {
			st, err := store.Open(context.Background(), pgtest.NewDB(b))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			now := time.Now()
			if _, err := st.EnsureUsagePartitions(context.Background(), now.Add(-48*time.Hour), now.Add(48*time.Hour)); err != nil {
				b.Fatal(err)
			}
			gen := newTraffic(now, tc.worst)
			const batch = 1000
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				rows := gen.batch(batch)
				b.StartTimer()
				if _, err := st.IngestUsageEvents(context.Background(), rows); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// traffic generates usage events: 200 projects of 10 relay keys each, key
// activity Zipf-distributed, each key on one or two of 20 models, 95% of
// requests answered 200. In worst mode every event of a batch falls in its
// own rollup group.
type traffic struct {
	rng      *rand.Rand
	zipf     *rand.Zipf
	keys     []uuid.UUID
	projects []uuid.UUID
	teams    []uuid.UUID
	hosts    []uuid.UUID
	at       time.Time
	seq      int
	worst    bool
}

func newTraffic(at time.Time, worst bool) *traffic {
	rng := rand.New(rand.NewPCG(7, 11))
	t := &traffic{rng: rng, zipf: rand.NewZipf(rng, 1.2, 1, 1999), at: at, worst: worst}
	for range 2000 {
		t.keys = append(t.keys, uuid.New())
	}
	for range 200 {
		t.projects = append(t.projects, uuid.New())
	}
	for range 20 {
		t.teams = append(t.teams, uuid.New())
	}
	for range 5 {
		t.hosts = append(t.hosts, uuid.New())
	}
	return t
}

func (t *traffic) batch(n int) []store.UsageEvent {
	rows := make([]store.UsageEvent, n)
	for i := range rows {
		t.seq++
		k := int(t.zipf.Uint64())
		model := k%20 + t.rng.IntN(2)
		at := t.at.Add(time.Duration(t.seq) * 100 * time.Microsecond) // 10k requests/s
		if t.worst {
			k, model = t.seq%2000, t.seq%20
			at = t.at.Add(-time.Duration(t.seq%3600) * time.Second)
		}
		p := k / 10
		status := int32(200)
		if r := t.rng.IntN(100); r >= 95 {
			status = []int32{400, 429, 429, 500, 499}[r-95]
		}
		rows[i] = store.UsageEvent{
			RequestID: "req_" + strconv.Itoa(t.seq), CreatedAt: at,
			RelayKeyID: &t.keys[k], ProjectID: &t.projects[p], TeamID: &t.teams[p/10], HostID: &t.hosts[model%5],
			Model: "model-" + strconv.Itoa(model), InboundShape: "openai_chat", UpstreamShape: "openai",
			Status: status, Attempts: 1, InputTokens: 1200, OutputTokens: 300, CachedReadTokens: 600, Cost: 123456,
		}
	}
	return rows
}

// BenchmarkIngestRate drives the Writer itself as fast as Postgres takes it and
// reports events/s. Run it with -bench IngestRate (it takes a while).
func BenchmarkIngestRate(b *testing.B) {
	t := testing.TB(b)
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if _, err := st.EnsureUsagePartitions(t.Context(), now.Add(-48*time.Hour), now.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	const n = 500_000
	w := usage.NewWriter(usage.WriterConfig{Sink: st, QueueSize: n})
	projects := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	rec := event.Record{CredentialKind: snapshot.CredentialRelayKey, CredentialID: uuid.New(), Model: "gpt", ModelID: uuid.New(),
		Status: 200, Attempts: 1, Usage: wire.Usage{Input: 100, Output: 20}}
	start := time.Now()
	for i := range n {
		rec.RequestID = "req_" + strconv.Itoa(i)
		rec.At = now.Add(-time.Duration(i%7200) * time.Second)
		rec.ProjectID = projects[i%3]
		w.Record(rec)
	}
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	st2 := w.Stats()
	t.Logf("writer: %d events in %s = %.0f events/s (dropped %d, lost %d)", st2.Written, d.Round(time.Millisecond), float64(st2.Written)/d.Seconds(), st2.Dropped, st2.Lost)
	if st2.Written != uint64(n) {
		t.Fatalf("wrote %d of %d events", st2.Written, n)
	}
	b.ReportMetric(float64(st2.Written)/d.Seconds(), "events/s")
}
