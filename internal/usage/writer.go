package usage

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
)

// Defaults for zero WriterConfig fields.
const (
	DefaultQueueSize       = 16384
	DefaultBatchSize       = 1000
	DefaultFlushInterval   = time.Second
	DefaultAttempts        = 6
	DefaultRetryBackoff    = 250 * time.Millisecond
	DefaultRetryBackoffMax = 8 * time.Second
	DefaultWriteTimeout    = 30 * time.Second
)

// Sink stores batches of events; *store.Store is one. IngestUsageEvents must
// be idempotent (a retried batch may have been committed already) and return
// how many events were new.
type Sink interface {
	IngestUsageEvents(ctx context.Context, events []store.UsageEvent) (int64, error)
}

// Observer sees every event as it is recorded, on the request's goroutine,
// whether or not the queue has room for it. It must not block; the metrics
// registry is one. The event comes by value so that it stays on the stack.
type Observer interface {
	ObserveUsage(ev Event)
}

// WriterConfig wires a Writer. Sink and Snapshot are required.
type WriterConfig struct {
	Sink Sink
	// Snapshot returns the current snapshot, whose bindings price events.
	Snapshot func() *snapshot.Snapshot
	// Observer, if set, sees every event (see Observer).
	Observer Observer
	// Logger gets lost batches and retries; nil discards.
	Logger *slog.Logger
	// QueueSize is how many events may wait for the writer; beyond it Record
	// drops. 0: DefaultQueueSize.
	QueueSize int
	// BatchSize is the most events one write carries; a full batch is
	// written at once. 0: DefaultBatchSize.
	BatchSize int
	// FlushInterval is the longest an event waits in a partial batch. 0:
	// DefaultFlushInterval.
	FlushInterval time.Duration
	// Attempts is how many times a batch is tried before it is counted as
	// lost. 0: DefaultAttempts.
	Attempts int
	// RetryBackoff is the wait after the first failed write, doubling with
	// jitter up to RetryBackoffMax. 0: the defaults.
	RetryBackoff, RetryBackoffMax time.Duration
	// WriteTimeout bounds one write attempt. 0: DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// Stats are a Writer's counters since it started.
type Stats struct {
	Queued     int    // events waiting in the queue now
	Capacity   int    // the queue's size
	Dropped    uint64 // events refused because the queue was full or the writer closed
	Written    uint64 // events in the ledger, including those found already there
	Duplicates uint64 // events a write found already stored (a retried batch)
	Lost       uint64 // events of batches that failed every attempt
	Retries    uint64 // failed write attempts that were retried
	LostBatch  uint64 // batches lost
	Unpriced   uint64 // events whose binding was gone from the snapshot (cost 0)
}

// Writer records usage events: Record queues them without blocking and one
// goroutine writes them in batches. It implements proxy.Recorder.
type Writer struct {
	sink     Sink
	snapshot func() *snapshot.Snapshot
	observer Observer
	log      *slog.Logger
	ch       chan Event
	batch    int
	interval time.Duration
	attempts int
	backoff  time.Duration
	backoffM time.Duration
	timeout  time.Duration

	ctx    context.Context // canceled when Close gives up
	cancel context.CancelFunc
	quit   chan struct{} // closed by Close
	done   chan struct{} // closed when the goroutine has returned
	once   sync.Once

	closed     atomic.Bool
	dropped    atomic.Uint64
	unpriced   atomic.Uint64
	written    atomic.Uint64
	duplicates atomic.Uint64
	lost       atomic.Uint64
	lostBatch  atomic.Uint64
	retries    atomic.Uint64
}

var _ proxy.Recorder = (*Writer)(nil)

// NewWriter starts a Writer. Call Close to flush and stop it.
func NewWriter(cfg WriterConfig) *Writer {
	w := &Writer{
		sink:     cfg.Sink,
		snapshot: cfg.Snapshot,
		observer: cfg.Observer,
		log:      cfg.Logger,
		batch:    cfg.BatchSize,
		interval: cfg.FlushInterval,
		attempts: cfg.Attempts,
		backoff:  cfg.RetryBackoff,
		backoffM: cfg.RetryBackoffMax,
		timeout:  cfg.WriteTimeout,
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	size := cfg.QueueSize
	if size <= 0 {
		size = DefaultQueueSize
	}
	w.ch = make(chan Event, size)
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.snapshot == nil {
		w.snapshot = func() *snapshot.Snapshot { return nil }
	}
	if w.batch <= 0 {
		w.batch = DefaultBatchSize
	}
	if w.interval <= 0 {
		w.interval = DefaultFlushInterval
	}
	if w.attempts <= 0 {
		w.attempts = DefaultAttempts
	}
	if w.backoff <= 0 {
		w.backoff = DefaultRetryBackoff
	}
	if w.backoffM <= 0 {
		w.backoffM = max(DefaultRetryBackoffMax, w.backoff)
	}
	if w.timeout <= 0 {
		w.timeout = DefaultWriteTimeout
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go w.run()
	return w
}

// Record implements proxy.Recorder: it prices rec, shows it to the observer
// and queues it, or counts it as dropped when the queue is full. It never
// blocks.
func (w *Writer) Record(rec proxy.Record) {
	ev := NewEvent(&rec, w.snapshot())
	if ev.Unpriced {
		w.unpriced.Add(1)
	}
	if w.observer != nil {
		w.observer.ObserveUsage(ev)
	}
	if w.closed.Load() {
		w.dropped.Add(1)
		return
	}
	select {
	case w.ch <- ev:
	default:
		w.dropped.Add(1)
	}
}

// Stats returns the writer's counters.
func (w *Writer) Stats() Stats {
	return Stats{
		Queued:     len(w.ch),
		Capacity:   cap(w.ch),
		Dropped:    w.dropped.Load(),
		Written:    w.written.Load(),
		Duplicates: w.duplicates.Load(),
		Lost:       w.lost.Load(),
		LostBatch:  w.lostBatch.Load(),
		Retries:    w.retries.Load(),
		Unpriced:   w.unpriced.Load(),
	}
}

// Close stops taking events (later ones count as dropped), writes what is
// queued and returns once it is stored. If ctx ends first, the writes in
// progress are abandoned, their events counted as lost, and Close returns
// ctx's error. Close may be called more than once.
func (w *Writer) Close(ctx context.Context) error {
	w.once.Do(func() {
		w.closed.Store(true)
		close(w.quit)
	})
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		w.cancel()
		<-w.done
		return ctx.Err()
	}
}

func (w *Writer) run() {
	defer close(w.done)
	defer w.cancel()
	batch := make([]Event, 0, w.batch)
	rows := make([]store.UsageEvent, 0, w.batch)
	flush := func() {
		if len(batch) > 0 {
			rows = w.write(batch, rows)
			clear(batch) // let go of the strings it holds
			batch = batch[:0]
		}
	}
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		select {
		case ev := <-w.ch:
			batch = append(batch, ev)
			if len(batch) >= w.batch {
				flush()
			}
		case <-tick.C:
			flush()
		case <-w.quit:
			for {
				select {
				case ev := <-w.ch:
					batch = append(batch, ev)
					if len(batch) >= w.batch {
						flush()
					}
					continue
				default:
				}
				break
			}
			flush()
			return
		}
	}
}

// write stores one batch, retrying with backoff; after the last attempt the
// batch is counted as lost. It returns rows for reuse.
func (w *Writer) write(batch []Event, rows []store.UsageEvent) []store.UsageEvent {
	rows = rows[:0]
	for i := range batch {
		rows = append(rows, batch[i].row())
	}
	defer clear(rows)
	wait := w.backoff
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(w.ctx, w.timeout)
		n, err := w.sink.IngestUsageEvents(ctx, rows)
		cancel()
		if err == nil {
			// Every event of the batch is in the ledger now; those the write
			// did not insert were there already (an earlier attempt of this
			// batch committed, its acknowledgement lost).
			w.written.Add(uint64(len(rows)))
			w.duplicates.Add(uint64(int64(len(rows)) - n))
			return rows
		}
		if attempt >= w.attempts || w.ctx.Err() != nil {
			w.lost.Add(uint64(len(rows)))
			w.lostBatch.Add(1)
			w.log.Error("usage batch lost", "events", len(rows), "attempts", attempt,
				"first_request_id", rows[0].RequestID, "last_request_id", rows[len(rows)-1].RequestID, "err", err)
			return rows
		}
		w.retries.Add(1)
		w.log.Warn("usage batch write failed; retrying", "events", len(rows), "attempt", attempt, "err", err)
		d := wait/2 + rand.N(wait/2+1)
		wait = min(wait*2, w.backoffM)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
		}
	}
}
