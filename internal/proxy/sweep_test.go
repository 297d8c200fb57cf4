package proxy_test

import (
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
)

// The sweep: a batch made through Relay and never looked at again is
// metered anyway, exactly once, with two pods' sweeps sharing Redis.

// sweepPods gives the fixture a Redis index and returns the sweeps of two
// pods that share it (the first is the fixture's own, which it starts).
func sweepPods(t *testing.T, f *fixture) (a, b *proxy.Sweep) {
	t.Helper()
	f.cfg.Objects = objects.NewRedis(redistest.Client(t, redistest.URL(t)), redistest.Prefix(t), objects.Options{Now: f.clock.Now})
	f.start()
	snap := snapshot.Build(&f.data, 1, f.clock.Now())
	cfg := f.cfg
	cfg.Snapshot = func() *snapshot.Snapshot { return snap }
	return f.h.Sweep(0), proxy.New(cfg).Sweep(0)
}

// sweepUntilRecorded ticks both sweeps at once, the clock moved past any
// batch's next look between rounds, until a record arrives; then it ticks
// on and checks that nothing is left to look at and no second record
// comes.
func sweepUntilRecorded(t *testing.T, f *fixture, a, b *proxy.Sweep) event.Record {
	t.Helper()
	ctx := t.Context()
	tick := func() int {
		var wg sync.WaitGroup
		var na, nb int
		var ea, eb error
		wg.Go(func() { na, ea = a.Tick(ctx) })
		wg.Go(func() { nb, eb = b.Tick(ctx) })
		wg.Wait()
		if ea != nil || eb != nil {
			t.Fatalf("tick: %v, %v", ea, eb)
		}
		if na+nb > 1 {
			t.Fatalf("both sweeps looked at the one batch in one round (%d, %d)", na, nb)
		}
		return na + nb
	}
	var rec event.Record
	for round := 0; ; round++ {
		if round == 6 {
			t.Fatal("the sweep never metered the batch")
		}
		if tick() != 1 {
			t.Fatalf("round %d: the batch was not due", round)
		}
		select {
		case rec = <-f.rec.ch:
		default:
			f.clock.Advance(2 * time.Hour)
			continue
		}
		break
	}
	for range 3 {
		f.clock.Advance(2 * time.Hour)
		if n := tick(); n != 0 {
			t.Fatalf("a metered batch is still on the pending list (%d looked at)", n)
		}
	}
	select {
	case rec := <-f.rec.ch:
		t.Fatalf("a second record: %+v", rec)
	default:
	}
	return rec
}

func TestSweep_MetersABatchNobodyRetrieves(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	a, b := sweepPods(t, f.fixture)
	c := f.openai()
	file := upload(t, c, batchLines("gpt-test", 50, 3))
	batch, err := newBatch(c, t, file.ID)
	if err != nil {
		t.Fatal(err)
	}
	if batch.Status != openai.BatchStatusValidating {
		t.Fatalf("created = %+v", batch)
	}
	rec := sweepUntilRecorded(t, f.fixture, a, b)
	if !rec.Batch || rec.RequestID != batch.ID || rec.Inbound != "batch" || rec.ProjectID != f.project || rec.BindingID != f.binding.ID ||
		rec.Model != "gpt-test" || rec.Usage.Input == 0 || rec.Usage.Output == 0 || rec.Usage.CacheRead == 0 {
		t.Fatalf("record = %+v", rec)
	}
	// The caller's retrieve sees it completed and records nothing more.
	got, err := c.Batches.Get(t.Context(), batch.ID)
	if err != nil || got.Status != openai.BatchStatusCompleted || got.Usage.InputTokens != rec.Usage.Input || got.Usage.OutputTokens != rec.Usage.Output {
		t.Fatalf("retrieve = %+v, %v; record %+v", got, err, rec.Usage)
	}
	select {
	case rec := <-f.rec.ch:
		t.Fatalf("a second record: %+v", rec)
	default:
	}
}

func TestSweep_MetersAMessageBatchNobodyRetrieves(t *testing.T) {
	t.Parallel()
	f := newMsgBatchFixture(t)
	a, b := sweepPods(t, f.fixture)
	c := f.anthropic()
	batch, err := c.Messages.Batches.New(t.Context(), anthropic.MessageBatchNewParams{Requests: msgBatchRequests("claude-test", 3)})
	if err != nil {
		t.Fatal(err)
	}
	if batch.ProcessingStatus != anthropic.MessageBatchProcessingStatusInProgress {
		t.Fatalf("created = %+v", batch)
	}
	rec := sweepUntilRecorded(t, f.fixture, a, b)
	if !rec.Batch || rec.RequestID != batch.ID || rec.Inbound != "message_batch" || rec.ProjectID != f.project || rec.BindingID != f.binding.ID ||
		rec.Model != "claude-test" || rec.Usage.Input == 0 || rec.Usage.Output == 0 || rec.Usage.CacheRead == 0 {
		t.Fatalf("record = %+v", rec)
	}
	// The caller's retrieve and results read record nothing more.
	if got, err := c.Messages.Batches.Get(t.Context(), batch.ID, anthropic.MessageBatchGetParams{}); err != nil || got.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded {
		t.Fatalf("retrieve = %+v, %v", got, err)
	}
	s := c.Messages.Batches.ResultsStreaming(t.Context(), batch.ID, anthropic.MessageBatchResultsParams{})
	for s.Next() {
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	select {
	case rec := <-f.rec.ch:
		t.Fatalf("a second record: %+v", rec)
	default:
	}
}
