package usage_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/usage"
)

// TestWriter_SpoolFullCountsLoss: with Postgres away, the spool takes
// batches up to its cap; past it a batch is counted as lost, never held in
// memory or written past the cap, and Close does not wait for Postgres.
func TestWriter_SpoolFullCountsLoss(t *testing.T) {
	t.Parallel()
	const capBytes = 16 << 10
	w := usage.NewWriter(usage.WriterConfig{Sink: failingSink{}, SpoolDir: filepath.Join(t.TempDir(), "usage"), SpoolMaxBytes: capBytes,
		BatchSize: 100, FlushInterval: 5 * time.Millisecond, RetryBackoff: time.Hour, RetryBackoffMax: time.Hour})
	project := uuid.New()
	const n = 3000
	for i := range n {
		w.Record(loadRecord(i, project))
	}
	poll.Until(t, 30*time.Second, "every event spilled or lost", func() bool { s := w.Stats(); return s.Spilled+s.Lost == n })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s := w.Stats()
	if s.Spilled == 0 || s.Lost == 0 || s.Dropped != 0 || s.SpoolBytes > capBytes || s.SpoolEvents != int64(s.Spilled) || s.LostBatch == 0 {
		t.Errorf("stats %+v: want the spool filled to its cap of %d bytes and the rest counted lost", s, capBytes)
	}
	t.Logf("%d events in %d bytes: %d bytes an event", s.SpoolEvents, s.SpoolBytes, s.SpoolBytes/max(s.SpoolEvents, 1))
}
