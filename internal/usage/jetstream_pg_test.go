package usage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/natstest"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
)

// dyingSink writes its first batch to the ledger and then "dies" before the
// consumer acknowledges it: it cancels the consumer and fails the call, as a
// process killed between its commit and its acknowledgements would.
type dyingSink struct {
	st   *store.Store
	kill context.CancelFunc
	died atomic.Bool
}

func (s *dyingSink) IngestUsageEvents(ctx context.Context, rows []store.UsageEvent) (int64, error) {
	n, err := s.st.IngestUsageEvents(ctx, rows)
	if err == nil && s.died.CompareAndSwap(false, true) {
		s.kill()
		return n, errors.New("killed after the commit, before the acknowledgements")
	}
	return n, err
}

// TestJetStream_ExactlyOnceThroughFaults sends usage events from three pods
// (Writers publishing to one stream) through two consumers into one ledger,
// while one consumer dies between its commit and its acknowledgements (its
// batch is redelivered to the other) and the NATS server is killed and
// restarted mid-run (the pods spool and replay). Every event is in the
// ledger exactly once and the rollups sum to it.
func TestJetStream_ExactlyOnceThroughFaults(t *testing.T) {
	t.Parallel()
	nats := natstest.Start(t)
	dbURL := pgtest.NewDB(t)
	st, err := store.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	cfg := usage.JetStreamConfig{URL: nats.URL(), Stream: "TEST_USAGE", Subject: "test.usage"}

	// Two consumers; the first dies on its first batch and is started again.
	consume := func(name string, sink usage.Sink, cctx context.Context) (done chan struct{}) {
		done = make(chan struct{})
		c := cfg
		c.Name = name
		js, err := usage.OpenJetStream(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(done)
			defer js.Close()
			_ = js.Consume(cctx, sink, usage.ConsumeConfig{Batch: 200, MaxWait: 50 * time.Millisecond, AckWait: 2 * time.Second}, nil)
		}()
		return done
	}
	consumers, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	dctx, kill := context.WithCancel(consumers)
	dying := &dyingSink{st: st, kill: kill}
	firstDone := consume("consumer-1", dying, dctx)
	secondDone := consume("consumer-2", st, consumers)

	const perPod = 900
	project := uuid.New()
	writers := make([]*usage.Writer, 3)
	for i := range writers {
		c := cfg
		c.Name = fmt.Sprintf("pod-%d", i)
		js, err := usage.OpenJetStream(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		defer js.Close()
		writers[i] = usage.NewWriter(usage.WriterConfig{Sink: js, SpoolDir: t.TempDir(), BatchSize: 100, FlushInterval: 20 * time.Millisecond,
			RetryBackoff: 20 * time.Millisecond, RetryBackoffMax: 200 * time.Millisecond, WriteTimeout: 3 * time.Second})
	}
	record := func(from, to int) {
		var wg sync.WaitGroup
		for p, w := range writers {
			wg.Go(func() {
				for i := from; i < to; i++ {
					w.Record(loadRecord(p*perPod+i, project))
				}
			})
		}
		wg.Wait()
	}
	record(0, perPod/3)
	poll.Until(t, 30*time.Second, "the first consumer to die", dying.died.Load)
	<-firstDone
	firstDone = consume("consumer-1", st, consumers)

	nats.Kill()
	record(perPod/3, 2*perPod/3)
	// NATS stays away until every pod has given up waiting for an
	// acknowledgement and spooled a batch.
	poll.Until(t, time.Minute, "every pod spooling while NATS is away", func() bool {
		for _, w := range writers {
			if w.Stats().Spilled == 0 {
				return false
			}
		}
		return true
	})
	nats.Restart()
	record(2*perPod/3, perPod)

	for _, w := range writers {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := w.Close(cctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if s := w.Stats(); s.Dropped != 0 || s.Lost != 0 {
			t.Errorf("a pod lost events: %+v", s)
		}
	}
	poll.Until(t, time.Minute, "every event in the ledger", func() bool {
		var n int
		_ = st.Pool().QueryRow(ctx, `SELECT count(*) FROM usage_events`).Scan(&n)
		return n >= 3*perPod
	})
	stopConsumers()
	<-firstDone
	<-secondDone
	ledgerCheck(t, dbURL, 3*perPod)
	assertRollupsMatchLedger(t, st)
}
