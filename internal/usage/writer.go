package usage

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relay-llm/relay/internal/backoff"
	"github.com/relay-llm/relay/internal/batching"
	"github.com/relay-llm/relay/internal/event"
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
	DefaultTransactions    = 2
)

// Sink stores batches of events; *store.Store is one. IngestUsageEvents must
// be idempotent (a retried or replayed batch may have been committed
// already) and return how many events were new. An error that wraps
// store.ErrUsageBatchRejected says Postgres refused the batch's data: it is
// not retried.
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
	// SpoolDir, when set, is where batches go when Postgres cannot take
	// them (<RELAY_DATA_DIR>/spool/usage): they are replayed, oldest first,
	// once it can, and a spool a killed process left is replayed on start.
	// Empty: no spool; a batch is retried Attempts times, then lost.
	SpoolDir string
	// SpoolMaxBytes caps the spool; a batch that would take it past the cap
	// is counted as lost. 0: DefaultSpoolMaxBytes.
	SpoolMaxBytes int64
	// Attempts is how many times a batch is tried before it is counted as
	// lost, without a spool. 0: DefaultAttempts.
	Attempts int
	// RetryBackoff is the wait after the first failed write, doubling with
	// jitter up to RetryBackoffMax (with a spool: between replays while
	// Postgres stays away). 0: the defaults.
	RetryBackoff, RetryBackoffMax time.Duration
	// WriteTimeout bounds one write attempt. 0: DefaultWriteTimeout.
	WriteTimeout time.Duration
	// TrimRouteDetail stores an event's routing decision in full only where
	// it explains something (keepDetail: a refusal, a failover, a fallback,
	// a degraded plan) or for RouteDetailSample, a fraction (0 to 1) of the
	// plain successes; the others keep its short form, the route column.
	// False: every decision is stored in full.
	TrimRouteDetail   bool
	RouteDetailSample float64
	// Transactions is how many batches may be in Postgres at once, each in
	// a transaction of its own, so that one pod's ledger is not capped by
	// one Postgres backend. Their rollup upserts lock rows in one order (by
	// rollup key), so two transactions adding to the same row wait for each
	// other, never deadlock, and neither loses the other's sums. Spool
	// replays run alongside. 0: DefaultTransactions.
	Transactions int
}

// Stats are a Writer's counters since it started.
type Stats struct {
	Queued     int    // events waiting in the queue now
	Capacity   int    // the queue's size
	Dropped    uint64 // events refused because the queue was full or the writer closed
	Written    uint64 // events in the ledger, including those found already there
	Duplicates uint64 // events a write found already stored (a retried batch)
	Lost       uint64 // events given up: every attempt failed (no spool), the spool was full, or Postgres rejected the batch
	Retries    uint64 // failed write attempts that were retried (replays included)
	LostBatch  uint64 // batches lost
	Unpriced   uint64 // events whose binding was gone from the snapshot (cost 0)

	Spilled     uint64 // events written to the spool
	Replayed    uint64 // events of the spool now in the ledger (also in Written)
	SpoolBytes  int64  // the spool's size now
	SpoolEvents int64  // events in the spool now
}

// Writer records usage events: Record queues them without blocking and one
// goroutine writes them in batches. It implements proxy.Recorder.
//
// With a spool (WriterConfig.SpoolDir) two goroutines share the work: the
// collector batches the queue and hands each batch to the ingester when it
// is idle, or else spills the batch to the spool; the ingester writes what
// it is handed and replays the spool, oldest segment first, backing off
// while Postgres is away. Neither waits for the other, so Record keeps
// finding room in the queue through an outage.
type Writer struct {
	sink     Sink
	snapshot func() *snapshot.Snapshot
	observer Observer
	log      *slog.Logger
	// ch is the queue. It holds pointers so that its buffer is 8 bytes a
	// slot: a queue of Events (~450 B each) would keep QueueSize of them
	// resident once it has gone round, busy or not. The Events come from
	// free and go back to it once written, spilled or dropped.
	ch       chan *Event
	free     sync.Pool // of *Event
	batch    int
	interval time.Duration
	attempts int
	backoff  time.Duration
	backoffM time.Duration
	timeout  time.Duration
	txs      int    // Transactions
	trim     bool   // TrimRouteDetail
	sample   uint32 // RouteDetailSample, per 2^32

	spool     *spool        // nil: no spool
	journal   *journal      // with the spool: every event Record takes
	handoff   chan []*Event // collector to idle ingester; unbuffered
	kick      chan struct{} // a segment was spilled (buffered, 1)
	collected chan struct{} // closed when the collector has handed or spilled its last batch
	ingested  chan struct{} // closed when the ingester has returned

	ctx    context.Context // canceled when Close gives up
	cancel context.CancelFunc
	quit   chan struct{} // closed by Close
	done   chan struct{} // closed when the goroutine has returned
	once   sync.Once

	closed        atomic.Bool
	journalFailed atomic.Bool // logged once
	dropped       atomic.Uint64
	unpriced      atomic.Uint64
	written       atomic.Uint64
	duplicates    atomic.Uint64
	lost          atomic.Uint64
	lostBatch     atomic.Uint64
	retries       atomic.Uint64
	spilled       atomic.Uint64
	replayed      atomic.Uint64
}

// NewWriter starts a Writer. Call Close to flush and stop it. A spool
// directory that cannot be made or read is logged, and the writer runs
// without a spool.
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
		txs:      cfg.Transactions,
		trim:     cfg.TrimRouteDetail,
		sample:   detailSample(cfg.RouteDetailSample),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	size := cfg.QueueSize
	if size <= 0 {
		size = DefaultQueueSize
	}
	w.ch = make(chan *Event, size)
	w.free.New = func() any { return new(Event) }
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
	if w.txs <= 0 {
		w.txs = DefaultTransactions
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if cfg.SpoolDir != "" {
		sp, err := openSpool(cfg.SpoolDir, cfg.SpoolMaxBytes)
		if err != nil {
			w.log.Error("usage spool unavailable; batches Postgres cannot take will be retried, then lost", "err", err)
		} else {
			w.spool = sp
			w.journal = &journal{sp: sp}
			if b, n := sp.size(); n > 0 {
				w.log.Info("usage spool holds events from before; replaying", "events", n, "bytes", b)
			}
		}
	}
	if w.spool == nil {
		go w.run()
		return w
	}
	w.handoff = make(chan []*Event)
	w.kick = make(chan struct{}, 1)
	w.collected = make(chan struct{})
	w.ingested = make(chan struct{})
	go w.collect()
	go w.ingest()
	go func() {
		<-w.ingested
		w.cancel()
		close(w.done)
	}()
	return w
}

// Record implements proxy.Recorder: it prices rec, shows it to the observer
// and queues it, or counts it as dropped when the queue is full. It never
// blocks.
func (w *Writer) Record(rec event.Record) {
	if w.trim && !keepDetail(&rec, w.sample) {
		rec.RouteDetail = nil
	}
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
	p := w.free.Get().(*Event)
	*p = ev
	if w.journal != nil {
		switch res, err := w.journal.append(p, w.ch); res {
		case queued:
			return
		case spilled:
			w.spilled.Add(1)
			*p = Event{}
			w.free.Put(p)
			return
		default:
			// Not journaled (the spool is at its cap, or the disk failed):
			// queued as without a spool; a SIGKILL would lose it.
			if w.journalFailed.CompareAndSwap(false, true) {
				w.log.Error("usage journal refused an event; events are queued in memory only until it takes them again", "err", err)
			}
		}
	}
	select {
	case w.ch <- p:
	default:
		w.dropped.Add(1)
		*p = Event{}
		w.free.Put(p)
	}
}

// release hands the events of a batch that is done with (written, spilled
// or lost) back to the free list, cleared so that it keeps no strings, and
// empties the batch.
func (w *Writer) release(batch []*Event) []*Event {
	for i, p := range batch {
		*p = Event{}
		w.free.Put(p)
		batch[i] = nil
	}
	return batch[:0]
}

// Stats returns the writer's counters.
func (w *Writer) Stats() Stats {
	var spoolBytes, spoolEvents int64
	if w.spool != nil {
		spoolBytes, spoolEvents = w.spool.size()
		jb, jm := w.journal.size()
		spoolBytes += jb
		spoolEvents += jm
	}
	return Stats{
		Spilled:     w.spilled.Load(),
		Replayed:    w.replayed.Load(),
		SpoolBytes:  spoolBytes,
		SpoolEvents: spoolEvents,
		Queued:      len(w.ch),
		Capacity:    cap(w.ch),
		Dropped:     w.dropped.Load(),
		Written:     w.written.Load(),
		Duplicates:  w.duplicates.Load(),
		Lost:        w.lost.Load(),
		LostBatch:   w.lostBatch.Load(),
		Retries:     w.retries.Load(),
		Unpriced:    w.unpriced.Load(),
	}
}

// Close stops taking events (later ones count as dropped), writes what is
// queued and returns once it is stored. If ctx ends first, the writes in
// progress are abandoned, their events counted as lost, and Close returns
// ctx's error. With a spool nothing is lost: what Postgres has not taken
// by then stays in the spool for the next writer. Close may be called more
// than once.
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

// run batches the queue, without a spool, and hands each batch to one of
// Transactions writers, waiting while all of them are busy (the queue
// fills meanwhile).
func (w *Writer) run() {
	defer close(w.done)
	defer w.cancel()
	work := make(chan []*Event)
	spare := make(chan []*Event, w.txs+1) // batches written, for reuse
	var writers sync.WaitGroup
	for range w.txs {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rows := make([]store.UsageEvent, 0, w.batch)
			for batch := range work {
				rows = w.write(batch, rows)
				select {
				case spare <- w.release(batch):
				default:
				}
			}
		}()
	}
	batch := make([]*Event, 0, w.batch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		work <- batch
		select {
		case batch = <-spare:
		default:
			batch = make([]*Event, 0, w.batch)
		}
	}
	batching.Gather(w.ch, w.quit, w.batch, w.interval, &batch, flush)
	close(work)
	writers.Wait()
}

// write stores one batch, retrying with backoff; after the last attempt the
// batch is counted as lost. It returns rows for reuse.
func (w *Writer) write(batch []*Event, rows []store.UsageEvent) []store.UsageEvent {
	rows = rows[:0]
	for i := range batch {
		rows = append(rows, batch[i].row())
	}
	defer clear(rows)
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
		w.retry().Wait(w.ctx, attempt)
	}
}

// retry is the wait between write attempts: RetryBackoff doubling up to
// RetryBackoffMax, with equal jitter.
func (w *Writer) retry() backoff.Policy {
	return backoff.Policy{Base: w.backoff, Max: w.backoffM, Jitter: backoff.Equal}
}

// collect batches the queue, with a spool: a batch goes to the ingester
// when it is idle and the spool empty, else to the spool.
func (w *Writer) collect() {
	defer close(w.collected)
	batch := make([]*Event, 0, w.batch)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if !w.spool.pending() {
			select {
			case w.handoff <- batch:
				batch = make([]*Event, 0, w.batch)
				return
			default:
			}
		}
		w.spill(batch)
		batch = w.release(batch)
		w.reap()
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	tick := func() {
		flush()
		// Marked events of a quiet segment reach the spool now, not when
		// it fills.
		w.journal.sealMarked()
		w.reap()
	}
	batching.Gather(w.ch, w.quit, w.batch, w.interval, &batch, tick)
}

// ingest writes the batches the collector hands over, up to Transactions
// at once, and replays the spool alongside them. After a failed write it
// backs off, doubling with jitter up to RetryBackoffMax, and takes no
// batches meanwhile (they go to the spool). When the collector is done it
// waits for the batches in flight, replays what it can and returns.
func (w *Writer) ingest() {
	defer close(w.ingested)
	failures := 0
	var retry <-chan time.Time
	var timer *time.Timer
	var outage time.Time // when the current outage began; zero when none
	inflight := 0
	stored := make(chan bool, w.txs) // a batch in flight is done: did Postgres take it?
	failed := func() {
		if outage.IsZero() {
			outage = time.Now()
		}
		failures++
		if timer != nil {
			timer.Stop()
		}
		timer = time.NewTimer(w.retry().Next(failures))
		retry = timer.C
	}
	recovered := func() {
		failures = 0
		if !outage.IsZero() && !w.spool.pending() {
			w.log.Info("usage spool replayed; Postgres takes batches again", "outage", time.Since(outage).Round(time.Millisecond))
			outage = time.Time{}
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if retry == nil && w.spool.pending() {
			if w.replayOldest() {
				recovered()
			} else {
				failed()
			}
			continue
		}
		var handoff chan []*Event
		if retry == nil && inflight < w.txs {
			handoff = w.handoff
		}
		select {
		case batch := <-handoff:
			inflight++
			go func() {
				ok := w.store(batch)
				w.release(batch)
				stored <- ok
			}()
		case ok := <-stored:
			inflight--
			w.reap()
			if ok {
				recovered()
			} else if retry == nil {
				failed()
			}
		case <-w.kick:
		case <-retry:
			retry = nil
		case <-w.collected:
			for ; inflight > 0; inflight-- {
				<-stored
			}
			w.journal.close()
			w.reap()
			// Last chance: Postgres may take the spool now. What it does
			// not take stays on disk for the next writer.
			for w.spool.pending() && w.ctx.Err() == nil {
				if !w.replayOldest() {
					break
				}
			}
			return
		}
	}
}

// store writes a fresh batch; when Postgres cannot take it, the batch goes
// to the spool and store reports false.
func (w *Writer) store(batch []*Event) bool {
	rows := make([]store.UsageEvent, len(batch))
	for i := range batch {
		rows[i] = batch[i].row()
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.timeout)
	n, err := w.sink.IngestUsageEvents(ctx, rows)
	cancel()
	switch {
	case err == nil:
		w.written.Add(uint64(len(rows)))
		w.duplicates.Add(uint64(int64(len(rows)) - n))
		w.journal.settle(batch, false)
		return true
	case errors.Is(err, store.ErrUsageBatchRejected):
		w.loseRows(rows, "usage batch rejected by Postgres", err)
		w.journal.settle(batch, false)
		return true
	}
	w.retries.Add(1)
	w.log.Warn("usage batch write failed; it goes to the spool", "events", len(rows), "err", err)
	w.spill(batch)
	return false
}

// replayEvents is the least a replay takes in one transaction: an outage
// leaves many segments, small ones at low traffic, and one transaction per
// segment would replay slower than traffic arrives.
const replayEvents = 5000

// replayOldest writes the spool's oldest segments, up to four batches
// (at least replayEvents) in one transaction, and removes them. It reports false when Postgres could
// not take them (they stay).
func (w *Writer) replayOldest() bool {
	segs, rows, torn, err := w.spool.oldest(max(4*w.batch, replayEvents))
	if torn > 0 {
		w.lost.Add(uint64(torn))
		w.lostBatch.Add(1)
		w.log.Error("usage spool segment torn; the events past the tear are lost", "events", torn)
	}
	if err != nil {
		// Damaged on disk: nothing to replay. Its events are counted lost.
		w.lost.Add(uint64(segs[0].events))
		w.lostBatch.Add(1)
		w.log.Error("usage spool segment unreadable; its events are lost", "events", segs[0].events, "err", err)
		w.removeSegments(segs)
		return true
	}
	if len(rows) > 0 {
		ctx, cancel := context.WithTimeout(w.ctx, w.timeout)
		n, err := w.sink.IngestUsageEvents(ctx, rows)
		cancel()
		switch {
		case err == nil:
			w.written.Add(uint64(len(rows)))
			w.replayed.Add(uint64(len(rows)))
			w.duplicates.Add(uint64(int64(len(rows)) - n))
		case errors.Is(err, store.ErrUsageBatchRejected):
			w.loseRows(rows, "spooled usage batch rejected by Postgres", err)
		default:
			w.retries.Add(1)
			w.log.Warn("usage spool replay failed; will retry", "events", len(rows), "err", err)
			return false
		}
	}
	w.removeSegments(segs)
	return true
}

func (w *Writer) removeSegments(segs []segment) {
	for _, seg := range segs {
		if err := w.spool.remove(seg); err != nil {
			// It would be replayed again on the next start: harmless.
			w.log.Warn("usage spool segment not removed", "err", err)
		}
	}
}

// spill sends batch to the spool: its events are marked for replay in
// their journal segments (no copy, no encoding, no I/O), and the active
// segment is sealed so that the spool can take them soon. Events the
// journal never held are lost.
func (w *Writer) spill(batch []*Event) {
	marked, unjournaled := w.journal.settle(batch, true)
	w.spilled.Add(uint64(marked))
	if unjournaled > 0 {
		w.lost.Add(uint64(unjournaled))
		w.lostBatch.Add(1)
		w.log.Error("usage events not in the journal could not be written; lost", "events", unjournaled)
	}
	w.journal.sealMarked()
}

// reap finishes the journal segments no longer held in memory.
func (w *Writer) reap() {
	if err := w.journal.reap(); err != nil {
		w.log.Warn("usage journal", "err", err)
	}
}

func (w *Writer) loseRows(rows []store.UsageEvent, what string, err error) {
	w.lost.Add(uint64(len(rows)))
	w.lostBatch.Add(1)
	w.log.Error(what, "events", len(rows),
		"first_request_id", rows[0].RequestID, "last_request_id", rows[len(rows)-1].RequestID, "err", err)
}
