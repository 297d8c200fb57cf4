// Package capture stores the bodies of requests whose policy turns payload
// capture on (docs/observability.md). The proxy hands each captured
// request's bodies, already capped, to Writer.Capture, which never blocks:
// a bounded queue takes it, or it is dropped and counted. A goroutine
// writes the queue to payload_captures in batches with COPY (batching, as
// the usage writer does), and another deletes captures older than the
// retention period once an hour. Nothing here is on the request path but
// the non-blocking send.
package capture

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/backoff"
	"github.com/relay-llm/relay/internal/batching"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/store"
)

// Defaults for zero Config fields.
const (
	DefaultQueueSize     = 1024
	DefaultBatchSize     = 64
	DefaultFlushInterval = time.Second
	DefaultRetention     = 7 * 24 * time.Hour
	DefaultSweepInterval = time.Hour
	DefaultWriteTimeout  = 30 * time.Second
	writeAttempts        = 3
	writeRetryBase       = 250 * time.Millisecond // 250ms, then 500ms
	sweepBatch           = 10000
)

// Sink stores captures; *store.Store is one.
type Sink interface {
	InsertPayloadCaptures(ctx context.Context, cs []store.PayloadCapture) (int64, error)
	DeletePayloadCapturesBefore(ctx context.Context, t time.Time, batch int32) (int64, error)
}

// Config wires a Writer. Sink is required.
type Config struct {
	Sink   Sink
	Logger *slog.Logger
	// QueueSize is how many captures may wait; beyond it Capture drops.
	QueueSize int
	// BatchSize is the most captures one COPY carries.
	BatchSize int
	// FlushInterval is the longest a capture waits in a partial batch.
	FlushInterval time.Duration
	// Retention is how long captures are kept; negative keeps them forever.
	Retention time.Duration
	// SweepInterval is how often old captures are deleted.
	SweepInterval time.Duration
	// Now is the retention clock; nil: time.Now.
	Now func() time.Time
}

// Stats are a Writer's counters since it started.
type Stats struct {
	Queued   int
	Dropped  uint64 // refused: the queue was full or the writer closed
	Written  uint64
	Lost     uint64 // in batches that failed every attempt
	Expired  uint64 // deleted by retention
	Capacity int
}

// Writer queues captures and writes them in batches.
type Writer struct {
	sink      Sink
	log       *slog.Logger
	ch        chan event.Payload
	batch     int
	interval  time.Duration
	retention time.Duration
	sweep     time.Duration
	now       func() time.Time

	// stopping ends when Close is called: the loops drain and return, and a
	// retry waits no longer.
	stopping context.Context
	stop     context.CancelFunc
	done     chan struct{}
	once     sync.Once
	closed   atomic.Bool
	dropped  atomic.Uint64
	written  atomic.Uint64
	lost     atomic.Uint64
	expired  atomic.Uint64
}

// NewWriter starts a Writer; Close stops it.
func NewWriter(cfg Config) *Writer {
	w := &Writer{
		sink: cfg.Sink, log: cfg.Logger, batch: cfg.BatchSize, interval: cfg.FlushInterval,
		retention: cfg.Retention, sweep: cfg.SweepInterval, now: cfg.Now,
		done: make(chan struct{}),
	}
	w.stopping, w.stop = context.WithCancel(context.Background())
	size := cfg.QueueSize
	if size <= 0 {
		size = DefaultQueueSize
	}
	w.ch = make(chan event.Payload, size)
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.batch <= 0 {
		w.batch = DefaultBatchSize
	}
	if w.interval <= 0 {
		w.interval = DefaultFlushInterval
	}
	if w.retention == 0 {
		w.retention = DefaultRetention
	}
	if w.sweep <= 0 {
		w.sweep = DefaultSweepInterval
	}
	if w.now == nil {
		w.now = time.Now
	}
	go w.run()
	return w
}

// Capture queues p, or drops and counts it when the queue is full. It
// never blocks.
func (w *Writer) Capture(p event.Payload) {
	if w.closed.Load() {
		w.dropped.Add(1)
		return
	}
	select {
	case w.ch <- p:
	default:
		w.dropped.Add(1)
	}
}

// Dropped is how many captures were dropped, for the metric
// relay_payload_captures_dropped_total.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Stats returns the counters.
func (w *Writer) Stats() Stats {
	return Stats{Queued: len(w.ch), Capacity: cap(w.ch), Dropped: w.dropped.Load(), Written: w.written.Load(), Lost: w.lost.Load(), Expired: w.expired.Load()}
}

// Close writes what is queued and stops, giving up when ctx ends.
func (w *Writer) Close(ctx context.Context) error {
	w.once.Do(func() {
		w.closed.Store(true)
		w.stop()
	})
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run batches the queue and writes it, while a second goroutine deletes
// what retention lets go.
func (w *Writer) run() {
	defer close(w.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(w.sweepLoop)
	batch := make([]event.Payload, 0, w.batch)
	rows := make([]store.PayloadCapture, 0, w.batch)
	flush := func() {
		if len(batch) > 0 {
			rows = w.write(batch, rows)
			clear(batch) // let go of the bodies
			batch = batch[:0]
		}
	}
	batching.Gather(w.ch, w.stopping.Done(), w.batch, w.interval, &batch, flush)
}

// sweepLoop deletes expired captures at start and every sweep interval.
func (w *Writer) sweepLoop() {
	if w.retention <= 0 {
		return
	}
	w.expire()
	sweep := time.NewTicker(w.sweep)
	defer sweep.Stop()
	for {
		select {
		case <-sweep.C:
			w.expire()
		case <-w.stopping.Done():
			return
		}
	}
}

// write stores one batch, trying writeAttempts times with backoff; then its
// captures are counted as lost. It returns rows for reuse.
func (w *Writer) write(batch []event.Payload, rows []store.PayloadCapture) []store.PayloadCapture {
	rows = rows[:0]
	for _, p := range batch {
		rows = append(rows, row(p))
	}
	defer clear(rows)
	retry := backoff.Policy{Base: writeRetryBase, Max: 2 * writeRetryBase}
	var err error
	for attempt := 1; attempt <= writeAttempts; attempt++ {
		if attempt > 1 {
			retry.Wait(w.stopping, attempt-1) // on Close: at once
		}
		ctx, cancel := context.WithTimeout(context.Background(), DefaultWriteTimeout)
		var n int64
		n, err = w.sink.InsertPayloadCaptures(ctx, rows)
		cancel()
		if err == nil {
			w.written.Add(uint64(n))
			return rows
		}
	}
	w.lost.Add(uint64(len(rows)))
	w.log.Error("payload captures lost", "captures", len(rows), "err", err)
	return rows
}

func (w *Writer) expire() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n, err := w.sink.DeletePayloadCapturesBefore(ctx, w.now().Add(-w.retention), sweepBatch)
	w.expired.Add(uint64(n))
	if err != nil {
		w.log.Error("delete expired payload captures", "err", err)
	}
}

func row(p event.Payload) store.PayloadCapture {
	return store.PayloadCapture{
		RequestID: p.RequestID, ClientRequestID: optString(p.ClientRequestID), CreatedAt: p.At, ProjectID: p.ProjectID,
		RelayKeyID: opt(p.RelayKeyID), InferenceTokenID: opt(p.InferenceTokenID), PolicyID: opt(p.PolicyID),
		Model: p.Model, Status: int32(p.Status),
		RequestBody: nonNil(p.Request), ResponseBody: nonNil(p.Response), Truncated: p.Truncated,
	}
}

func opt(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
