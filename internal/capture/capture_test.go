package capture_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/capture"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/store"
)

func openStore(t *testing.T) *store.Store {
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func payload(id string, at time.Time, project uuid.UUID) event.Payload {
	return event.Payload{
		RequestID: id, ClientRequestID: "client-" + id, At: at, ProjectID: project, RelayKeyID: uuid.New(), Model: "m", Status: 200,
		Request: []byte(`{"q":"` + id + `"}`), Response: []byte(`{"a":"` + id + `"}`),
	}
}

// TestWriter_WritesBatchesAndExpires writes captures through the writer and
// reads them back; retention deletes the old ones, redaction the rest.
func TestWriter_WritesBatchesAndExpires(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	project := uuid.New()
	// An old capture, straight into the table, for the retention sweep.
	if _, err := st.InsertPayloadCaptures(ctx, []store.PayloadCapture{{
		RequestID: "req-old", CreatedAt: now.Add(-30 * 24 * time.Hour), ProjectID: project,
		RequestBody: []byte("{}"), ResponseBody: []byte("{}"),
	}}); err != nil {
		t.Fatal(err)
	}
	w := capture.NewWriter(capture.Config{Sink: st, BatchSize: 2, Retention: 7 * 24 * time.Hour})
	for _, id := range []string{"req-a", "req-b", "req-c"} {
		w.Capture(payload(id, now, project))
	}
	closeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Written != 3 || s.Dropped != 0 || s.Lost != 0 || s.Expired != 1 {
		t.Fatalf("stats %+v", s)
	}
	caps, err := st.PayloadCaptures(ctx, "req-b")
	if err != nil || len(caps) != 1 {
		t.Fatalf("req-b: %d captures, %v", len(caps), err)
	}
	got := caps[0]
	if got.ClientRequestID == nil || *got.ClientRequestID != "client-req-b" || string(got.RequestBody) != `{"q":"req-b"}` || string(got.ResponseBody) != `{"a":"req-b"}` || got.ProjectID != project || !got.CreatedAt.Equal(now) {
		t.Fatalf("req-b: %+v %v", got, err)
	}
	if caps, err := st.PayloadCaptures(ctx, "req-old"); len(caps) != 0 || err != nil {
		t.Errorf("the expired capture is still there: %d %v", len(caps), err)
	}
	if n, err := st.DeletePayloadCapture(ctx, "test", store.PayloadCapture{RequestID: "req-a", ProjectID: project}); n != 1 || err != nil {
		t.Errorf("delete req-a: %d %v", n, err)
	}
	if n, err := st.DeleteProjectPayloadCaptures(ctx, "test", project); n != 2 || err != nil {
		t.Errorf("delete the project's: %d %v", n, err)
	}
}

// TestWriter_DropsWhenFull holds the table locked so the writer's COPY
// waits: Capture keeps returning at once and counts what does not fit.
func TestWriter_DropsWhenFull(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE payload_captures IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	w := capture.NewWriter(capture.Config{Sink: st, QueueSize: 4, BatchSize: 1, Retention: -1})
	now := time.Now()
	start := time.Now()
	for i := range 20 {
		w.Capture(payload("req-"+string(rune('a'+i)), now, uuid.New()))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Capture blocked: 20 calls took %s", d)
	}
	// The queue holds 4; the writer may have taken one into its COPY,
	// which waits for the lock.
	dropped := w.Stats().Dropped
	if dropped != 16 && dropped != 15 {
		t.Errorf("dropped %d of 20 with a queue of 4", dropped)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	closeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Written != 20-dropped || s.Dropped != dropped {
		t.Errorf("after the lock: %+v", s)
	}
}

// flakySink fails its first failures inserts.
type flakySink struct {
	mu       sync.Mutex
	failures int
	calls    int
}

func (s *flakySink) InsertPayloadCaptures(_ context.Context, cs []store.PayloadCapture) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls <= s.failures {
		return 0, errors.New("postgres is away")
	}
	return int64(len(cs)), nil
}

func (s *flakySink) DeletePayloadCapturesBefore(context.Context, time.Time, int32) (int64, error) {
	return 0, nil
}

// TestWriter_RetriesThenCountsLost: a batch is tried three times; Close cuts
// the waits between tries short, not the tries.
func TestWriter_RetriesThenCountsLost(t *testing.T) {
	for _, c := range []struct {
		failures      int
		written, lost uint64
	}{{2, 2, 0}, {3, 0, 2}} {
		sink := &flakySink{failures: c.failures}
		w := capture.NewWriter(capture.Config{Sink: sink, BatchSize: 10, FlushInterval: time.Hour, Retention: -1})
		w.Capture(payload("req-a", time.Now(), uuid.New()))
		w.Capture(payload("req-b", time.Now(), uuid.New()))
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if s := w.Stats(); s.Written != c.written || s.Lost != c.lost || sink.calls != 3 {
			t.Errorf("%d failures: %+v after %d calls", c.failures, s, sink.calls)
		}
	}
}
