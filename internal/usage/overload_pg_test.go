package usage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
)

// throttledSink is a Postgres of a known capacity: a write takes at least
// perEvent for each of its events (the real store, then a wait for the
// rest), so that "twice the writer's capacity" means the same on any
// machine that can do at least that much.
type throttledSink struct {
	st       *store.Store
	perEvent time.Duration
}

func (s throttledSink) IngestUsageEvents(ctx context.Context, rows []store.UsageEvent) (int64, error) {
	start := time.Now()
	n, err := s.st.IngestUsageEvents(ctx, rows)
	if d := time.Duration(len(rows))*s.perEvent - time.Since(start); d > 0 && err == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return n, err
}

// routedRecord is loadRecord with the routing decision a routed request
// carries: three candidates on two hosts, the X-Relay-Route summary and the
// detail in full (about 1 kB, as internal/routing writes it).
func routedRecord(i int, project uuid.UUID) event.Record {
	rec := loadRecord(i, project)
	rec.BindingID, rec.HostID, rec.HostKeyID = uuid.NewSHA1(project, []byte("b")), uuid.NewSHA1(project, []byte("h")), uuid.NewSHA1(project, []byte("k"))
	rec.Inbound, rec.Upstream = "openai_chat", "openai"
	rec.Route = "binding=mock/gpt-4o-mini slot=2 strategy=ordered affinity=miss"
	rec.RouteDetail = fmt.Appendf(nil, `{"model":"m","strategy":"ordered","strategy_from":"default","affinity":"prompt_cache_key","session_from":"prompt_cache_key","needs":{"prompt_tokens":%d,"max_output":1024},"candidates":[`+
		`{"binding_id":"%s","host":"mock","model":"m","upstream_model":"gpt-4o-mini","shape":"openai","position":0,"score":1,"keys":["good","spare","third"],"affinity":true},`+
		`{"binding_id":"%s","host":"other","model":"m","upstream_model":"gpt-4o-mini-2024-07-18","shape":"openai","position":1,"score":0.5,"keys":["one","two"]},`+
		`{"binding_id":"%s","host":"other","model":"m-small","upstream_model":"gpt-4o-mini","fallback":1,"shape":"openai","position":2,"score":0.25,"keys":["one"]}],`+
		`"chosen":{"binding_id":"%s","host":"mock","model":"m","host_key":"good","slot":2,"affinity":"miss"}}`,
		i%4000, rec.BindingID, uuid.New(), uuid.New(), rec.BindingID)
	return rec
}

// TestWriter_OverloadLosesNothing offers twice the writer's capacity for a
// few seconds, with a queue that fills within the first second: every event
// reaches the ledger once (a full queue spills to the spool, it does not
// drop), and the rollups agree with the ledger. Before the journal, the
// spool path re-encoded every batch (gzip JSON, an fsync each) and the
// queue overflowed: events were dropped.
func TestWriter_OverloadLosesNothing(t *testing.T) {
	t.Parallel()
	const (
		capacity = 4000 // events/s the sink takes
		offered  = 2 * capacity
	)
	// 3 s on CI; RELAY_TEST_OVERLOAD=60s runs the full minute by hand.
	offer := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv("RELAY_TEST_OVERLOAD")); err == nil && d > 0 {
		offer = d
	}
	dbURL := pgtest.NewDB(t)
	st, err := store.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := usage.NewWriter(usage.WriterConfig{Sink: throttledSink{st: st, perEvent: time.Second / capacity},
		SpoolDir: filepath.Join(t.TempDir(), "spool", "usage"), QueueSize: 2048, BatchSize: 500,
		FlushInterval: 50 * time.Millisecond, Logger: testLogger(t)})

	// The offer: as many events as the rate says are due, every millisecond.
	project := uuid.New()
	start := time.Now()
	n := 0
	tick := time.NewTicker(time.Millisecond)
	for now := range tick.C {
		due := int(now.Sub(start).Seconds() * offered)
		if now.Sub(start) >= offer {
			break
		}
		for ; n < due; n++ {
			w.Record(routedRecord(n, project))
		}
	}
	tick.Stop()
	offerTook := time.Since(start)
	during := w.Stats()

	closeStart := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute+2*offer)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s := w.Stats()
	t.Logf("offered %d events in %v (%.0f/s, sink capacity %d/s): %d written meanwhile (%.0f/s), %d spilled; Close replayed the rest in %v; %d written, %d replayed, %d dropped, %d lost",
		n, offerTook.Round(time.Millisecond), float64(n)/offerTook.Seconds(), capacity, during.Written, float64(during.Written)/offerTook.Seconds(),
		s.Spilled, time.Since(closeStart).Round(time.Millisecond), s.Written, s.Replayed, s.Dropped, s.Lost)
	if s.Dropped != 0 || s.Lost != 0 || s.Written != uint64(n) || s.Spilled == 0 || s.SpoolEvents != 0 {
		t.Errorf("stats %+v: want all %d offered events written, some through the spool, none dropped or lost", s, n)
	}
	ledgerCheck(t, dbURL, n)
}
