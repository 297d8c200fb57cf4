package usage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/internal/usage/usagetest"
)

// overlapSink counts the writes in Postgres at once, and holds each one
// until another has started (or 250 ms have passed: on a loaded machine the
// next batch may take that long to form), so that a writer that can have
// two in flight shows it on any machine.
type overlapSink struct {
	st             *store.Store
	inflight, most atomic.Int32
	started        chan struct{}
}

func (s *overlapSink) IngestUsageEvents(ctx context.Context, rows []store.UsageEvent) (int64, error) {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	select {
	case s.started <- struct{}{}:
	default:
	}
	t := time.NewTimer(250 * time.Millisecond)
	select {
	case <-s.started: // another write began meanwhile
	case <-t.C:
	}
	t.Stop()
	return s.st.IngestUsageEvents(ctx, rows)
}

// sharedRecord is a routed event of one of a few projects, models and keys,
// so that concurrent batches add to the same rollup rows.
func sharedRecord(i int, projects []uuid.UUID) event.Record {
	rec := routedRecord(i, projects[i%len(projects)])
	rec.Model = []string{"m", "m-small", "m-large"}[i/3%3]
	return rec
}

// TestWriter_TransactionsInFlightKeepRollupsExact writes batches from
// several transactions at once, every batch adding to the same rollup rows:
// more than one write is in Postgres at a time, none fails (no deadlock,
// which would show as a retry), and the rollups equal the ledger. With and
// without the spool. One transaction at a time (the code before) fails the
// in-flight check (at most Transactions, and one spool replay beside them).
func TestWriter_TransactionsInFlightKeepRollupsExact(t *testing.T) {
	t.Parallel()
	for _, spooled := range []bool{false, true} {
		t.Run(fmt.Sprintf("spool=%v", spooled), func(t *testing.T) {
			t.Parallel()
			const events, recorders = 12000, 4
			dbURL := pgtest.NewDB(t)
			st, err := store.Open(t.Context(), dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			sink := &overlapSink{st: st, started: make(chan struct{})}
			cfg := usage.WriterConfig{Sink: sink, QueueSize: events, BatchSize: 200, FlushInterval: 10 * time.Millisecond,
				Transactions: 4, Logger: testLogger(t)}
			if spooled {
				cfg.SpoolDir = filepath.Join(t.TempDir(), "spool", "usage")
			}
			w := usage.NewWriter(cfg)
			projects := []uuid.UUID{uuid.New(), uuid.New()}
			var wg sync.WaitGroup
			for r := range recorders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := r; i < events; i += recorders {
						w.Record(sharedRecord(i, projects))
					}
				}()
			}
			wg.Wait()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			s := w.Stats()
			if s.Written != events || s.Dropped != 0 || s.Lost != 0 || s.Retries != 0 {
				t.Errorf("stats %+v: want %d written, none dropped, lost or retried", s, events)
			}
			// With the spool, a replay may run beside the four.
			if m, most := sink.most.Load(), int32(4+btoi(spooled)); m < 2 || m > most {
				t.Errorf("at most %d writes in Postgres at once, want 2 to %d", m, most)
			}
			ledgerCheck(t, dbURL, events)
			usagetest.RollupsMatchLedger(t, dbURL)
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
