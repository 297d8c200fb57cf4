package usage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/wire"
)

// fakeSink stores batches in memory; fail decides, per call, whether a
// write fails, and gate (if set) holds every write until it is closed or the
// write's context ends.
type fakeSink struct {
	mu      sync.Mutex
	rows    []store.UsageEvent
	calls   int
	fail    func(call int) error
	gate    chan struct{}
	entered chan struct{} // gets a value as each write starts
}

func (s *fakeSink) IngestUsageEvents(ctx context.Context, rows []store.UsageEvent) (int64, error) {
	s.mu.Lock()
	s.calls++
	call := s.calls
	s.mu.Unlock()
	if s.entered != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if s.fail != nil {
		if err := s.fail(call); err != nil {
			return 0, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, r := range rows {
		r = copyRow(r) // the writer reuses its rows
		dup := false
		for _, have := range s.rows {
			dup = dup || have.RequestID == r.RequestID && have.CreatedAt.Equal(r.CreatedAt)
		}
		if !dup {
			s.rows = append(s.rows, r)
			n++
		}
	}
	return n, nil
}

func copyRow(r store.UsageEvent) store.UsageEvent {
	for _, p := range []**uuid.UUID{&r.RelayKeyID, &r.InferenceTokenID, &r.ServiceAccountID, &r.UserID, &r.ProjectID,
		&r.TeamID, &r.PolicyID, &r.BindingID, &r.HostID, &r.HostKeyID} {
		if *p != nil {
			v := **p
			*p = &v
		}
	}
	return r
}

func (s *fakeSink) stored() []store.UsageEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.UsageEvent(nil), s.rows...)
}

func record(i int) event.Record {
	return event.Record{
		RequestID: fmt.Sprintf("req-%d", i), At: time.Date(2026, 3, 1, 12, 0, 0, i*1000, time.UTC),
		CredentialKind: snapshot.CredentialRelayKey, CredentialID: uuid.New(), ProjectID: uuid.New(),
		Model: "gpt-test", Inbound: "openai", Upstream: wire.ShapeOpenAI, Status: 200, Attempts: 1,
		Usage: wire.Usage{Input: 10, Output: 5},
	}
}

func closeWriter(t *testing.T, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestWriter_FullQueueDropsAndCounts(t *testing.T) {
	t.Parallel()
	sink := &fakeSink{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	w := NewWriter(WriterConfig{Sink: sink, QueueSize: 4, BatchSize: 1, Transactions: 1}) // one write in flight: it holds event 0
	w.Record(record(0))
	<-sink.entered // the writer holds event 0 in a write that cannot finish

	for i := 1; i <= 100; i++ {
		w.Record(record(i)) // returns at once: the test would hang otherwise
	}
	// Event 0 is in the write; the queue holds 4, and the batcher may have
	// taken one more into the next batch, waiting for the write to finish.
	st := w.Stats()
	if st.Capacity != 4 || st.Dropped < 95 || st.Dropped > 96 || st.Queued < 3 || st.Queued > 4 {
		t.Errorf("stats %+v, want 4 queued (3 and one in the next batch) and 95 or 96 dropped", st)
	}
	close(sink.gate)
	closeWriter(t, w)
	kept := 100 - int(st.Dropped) + 1 // event 0 too
	if st := w.Stats(); int(st.Written) != kept || st.Lost != 0 || st.Queued != 0 {
		t.Errorf("after close: %+v, want %d written", st, kept)
	}
	if n := len(sink.stored()); n != kept {
		t.Errorf("%d stored, want %d", n, kept)
	}
}

func TestWriter_RetriesThenCountsTheBatchLost(t *testing.T) {
	t.Parallel()
	down := errors.New("connection refused")
	sink := &fakeSink{fail: func(int) error { return down }}
	w := NewWriter(WriterConfig{Sink: sink, BatchSize: 3, Attempts: 4, RetryBackoff: time.Millisecond, RetryBackoffMax: 2 * time.Millisecond})
	for i := range 7 {
		w.Record(record(i))
	}
	closeWriter(t, w)
	st := w.Stats()
	// Batches of 3, 3 and 1, each tried 4 times.
	if st.Lost != 7 || st.LostBatch != 3 || st.Retries != 9 || st.Written != 0 || st.Dropped != 0 {
		t.Errorf("stats %+v", st)
	}
	if sink.calls != 12 {
		t.Errorf("%d writes, want 12", sink.calls)
	}
}

func TestWriter_RetrySucceedsWithoutDuplicates(t *testing.T) {
	t.Parallel()
	// The first write commits but reports failure (a lost acknowledgement),
	// the second fails outright, the third finds the batch already stored.
	sink := &fakeSink{}
	flaky := &flakySink{inner: sink, commitThenFail: 1, failOnly: 2}
	w := NewWriter(WriterConfig{Sink: flaky, BatchSize: 5, Attempts: 5, RetryBackoff: time.Millisecond})
	for i := range 5 {
		w.Record(record(i))
	}
	closeWriter(t, w)
	st := w.Stats()
	if st.Written != 5 || st.Duplicates != 5 || st.Retries != 2 || st.Lost != 0 {
		t.Errorf("stats %+v", st)
	}
	if n := len(sink.stored()); n != 5 {
		t.Errorf("%d stored, want 5", n)
	}
}

// flakySink commits a write and then reports an error on call
// commitThenFail, and fails without writing on call failOnly.
type flakySink struct {
	mu                       sync.Mutex
	inner                    Sink
	calls                    int
	commitThenFail, failOnly int
}

func (f *flakySink) IngestUsageEvents(ctx context.Context, rows []store.UsageEvent) (int64, error) {
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.mu.Unlock()
	switch call {
	case f.failOnly:
		return 0, errors.New("connection reset")
	case f.commitThenFail:
		_, _ = f.inner.IngestUsageEvents(ctx, rows)
		return 0, errors.New("commit acknowledgement lost")
	}
	return f.inner.IngestUsageEvents(ctx, rows)
}

func TestWriter_CloseFlushesAndLaterRecordsDrop(t *testing.T) {
	t.Parallel()
	sink := &fakeSink{}
	w := NewWriter(WriterConfig{Sink: sink, BatchSize: 1000, FlushInterval: time.Hour})
	for i := range 10 {
		w.Record(record(i))
	}
	closeWriter(t, w)
	rows := sink.stored()
	if len(rows) != 10 {
		t.Fatalf("Close flushed %d events, want 10", len(rows))
	}
	if rows[3].RequestID != "req-3" || rows[3].InputTokens != 10 || rows[3].RelayKeyID == nil || rows[3].HostID != nil {
		t.Errorf("row %+v", rows[3])
	}
	w.Record(record(11))
	if st := w.Stats(); st.Dropped != 1 {
		t.Errorf("a record after Close: %+v", st)
	}
	closeWriter(t, w) // a second Close is harmless
}

func TestWriter_FlushesOnInterval(t *testing.T) {
	t.Parallel()
	sink := &fakeSink{entered: make(chan struct{}, 1)}
	w := NewWriter(WriterConfig{Sink: sink, BatchSize: 1000, FlushInterval: 5 * time.Millisecond})
	defer closeWriter(t, w)
	w.Record(record(1))
	select {
	case <-sink.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("a partial batch was not flushed on the interval")
	}
}

func TestWriter_CloseGivesUpWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	sink := &fakeSink{gate: make(chan struct{}), entered: make(chan struct{}, 1)} // never opens
	w := NewWriter(WriterConfig{Sink: sink, BatchSize: 2, Attempts: 100, RetryBackoff: time.Millisecond})
	for i := range 5 {
		w.Record(record(i))
	}
	<-sink.entered
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := w.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	if st := w.Stats(); st.Lost != 5 || st.Written != 0 {
		t.Errorf("stats %+v, want all 5 lost", st)
	}
}

func TestWriter_PricingChangesApplyToLaterRequests(t *testing.T) {
	t.Parallel()
	binding := uuid.New()
	snapWith := func(price int64) *snapshot.Snapshot {
		return snapshot.Build(&snapshot.Data{Bindings: []*snapshot.Binding{{ID: binding, Enabled: true,
			Pricing: snapshot.Pricing{Input: price, Output: price, Reasoning: price}}}}, 1, time.Now())
	}
	var mu sync.Mutex
	current := snapWith(1_000_000)
	sink := &fakeSink{}
	w := NewWriter(WriterConfig{Sink: sink, Snapshot: func() *snapshot.Snapshot { mu.Lock(); defer mu.Unlock(); return current }})
	rec := record(1)
	rec.BindingID = binding
	w.Record(rec) // 15 tokens at $1/M = 15_000 nano
	mu.Lock()
	current = snapWith(2_000_000)
	mu.Unlock()
	rec = record(2)
	rec.BindingID = binding
	w.Record(rec)
	rec = record(3)
	rec.BindingID = uuid.New() // deleted meanwhile
	w.Record(rec)
	closeWriter(t, w)
	rows := sink.stored()
	if len(rows) != 3 || rows[0].Cost != 15_000 || rows[1].Cost != 30_000 || rows[2].Cost != 0 {
		t.Errorf("costs %d, %d, %d", rows[0].Cost, rows[1].Cost, rows[2].Cost)
	}
	if st := w.Stats(); st.Unpriced != 1 {
		t.Errorf("unpriced %d, want 1", st.Unpriced)
	}
}

// The queue's events are reused once their batch is written, spilled or
// dropped: every stored row must still be the one its request recorded,
// through many batches, with and without a spool (whose ingester writes on
// another goroutine), while some records are dropped on a full queue.
func TestWriter_ReusedEventsKeepTheirRows(t *testing.T) {
	t.Parallel()
	for _, spool := range []bool{false, true} {
		t.Run(fmt.Sprintf("spool=%v", spool), func(t *testing.T) {
			t.Parallel()
			sink := &fakeSink{}
			cfg := WriterConfig{Sink: sink, QueueSize: 64, BatchSize: 7, FlushInterval: time.Millisecond}
			if spool {
				cfg.SpoolDir = t.TempDir()
			}
			w := NewWriter(cfg)
			const callers, each = 4, 200
			want := make([]map[string]uuid.UUID, callers)
			var wg sync.WaitGroup
			for c := range callers {
				want[c] = make(map[string]uuid.UUID, each)
				recs := make([]event.Record, each)
				for i := range recs {
					recs[i] = record(c*each + i)
					want[c][recs[i].RequestID] = recs[i].ProjectID
				}
				wg.Go(func() {
					for _, r := range recs {
						w.Record(r)
					}
				})
			}
			wg.Wait()
			closeWriter(t, w)
			rows := sink.stored()
			st := w.Stats()
			if uint64(len(rows))+st.Dropped != callers*each || st.Lost != 0 {
				t.Fatalf("%d stored, stats %+v; want %d stored or dropped, none lost", len(rows), st, callers*each)
			}
			seen := make(map[string]bool, len(rows))
			for _, r := range rows {
				var c int
				if _, err := fmt.Sscanf(r.RequestID, "req-%d", &c); err != nil {
					t.Fatalf("request id %q: %v", r.RequestID, err)
				}
				c /= each
				if seen[r.RequestID] || r.ProjectID == nil || *r.ProjectID != want[c][r.RequestID] {
					t.Errorf("row %s: project %v, want %v (seen before: %v)", r.RequestID, r.ProjectID, want[c][r.RequestID], seen[r.RequestID])
				}
				seen[r.RequestID] = true
			}
		})
	}
}
