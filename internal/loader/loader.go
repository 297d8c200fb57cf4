// Package loader builds snapshots from Postgres and keeps them current. It
// LISTENs on the catalog channel over one dedicated connection, debounces
// notifications, re-reads only the rows they name and applies them
// copy-on-write, then publishes the new snapshot with one atomic store. A lost
// connection is retried with exponential backoff and followed by a full
// reload; a periodic full resync is the safety net.
//
// The loader owns the path from store rows to snapshot rows, including
// resolving host key secrets. The inference plane only ever sees Current().
package loader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/backoff"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
)

// Options tune a Loader. Zero values take the defaults.
type Options struct {
	Debounce   time.Duration            // quiet time before applying notifications (default 1s)
	Resync     time.Duration            // full reload interval (default 5m)
	MaxBackoff time.Duration            // cap of the reconnect backoff (default 30s)
	MaxPending int                      // notified rows above which a full reload is cheaper (default 5000)
	Getenv     func(string) string      // resolves env:NAME host keys (default os.Getenv is passed by the caller)
	Now        func() time.Time         // clock (default time.Now)
	OnSwap     func(*snapshot.Snapshot) // called after every publish (optional; tests and metrics)
}

// Loader publishes the current snapshot.
type Loader struct {
	st     *store.Store
	box    *secret.Box
	log    *slog.Logger
	opts   Options
	getenv func(string) string

	current   atomic.Pointer[snapshot.Snapshot]
	version   atomic.Uint64
	lastSync  atomic.Int64 // unix nanos of the last successful read from Postgres
	listening atomic.Bool  // the LISTEN connection is up
	wake      chan struct{}
	full      chan struct{}

	buildMu sync.Mutex // serialises builds and swaps

	pendingMu sync.Mutex // guards the fields below
	pending   map[store.Kind]map[uuid.UUID]struct{}
	pendingN  int
	needFull  bool
}

// New makes a Loader; nothing is loaded until Load or Run.
func New(st *store.Store, box *secret.Box, log *slog.Logger, opts Options) *Loader {
	if opts.Debounce <= 0 {
		opts.Debounce = time.Second
	}
	if opts.Resync <= 0 {
		opts.Resync = 5 * time.Minute
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 5000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	return &Loader{
		st: st, box: box, log: log, opts: opts, getenv: getenv,
		wake:    make(chan struct{}, 1),
		full:    make(chan struct{}, 1),
		pending: make(map[store.Kind]map[uuid.UUID]struct{}),
	}
}

// Current returns the published snapshot, or nil before the first load.
func (l *Loader) Current() *snapshot.Snapshot { return l.current.Load() }

// Ready reports whether a snapshot has been published.
func (l *Loader) Ready() bool { return l.current.Load() != nil }

// Version is the published snapshot's version (0 before the first load).
func (l *Loader) Version() uint64 {
	if s := l.current.Load(); s != nil {
		return s.Version()
	}
	return 0
}

// Listening reports whether the LISTEN connection is up, i.e. whether
// changes reach this process within the debounce.
func (l *Loader) Listening() bool { return l.listening.Load() }

// Age is the time since the snapshot was last confirmed against Postgres
// (a build, or a resync that found it current).
func (l *Loader) Age() time.Duration {
	ns := l.lastSync.Load()
	if ns == 0 {
		return 0
	}
	return l.opts.Now().Sub(time.Unix(0, ns))
}

// Load does a full reload now and publishes the result.
func (l *Loader) Load(ctx context.Context) error {
	l.buildMu.Lock()
	defer l.buildMu.Unlock()
	start := l.opts.Now()
	cat, err := l.st.ReadCatalog(ctx)
	if err != nil {
		return fmt.Errorf("load snapshot: %w", err)
	}
	now := l.opts.Now()
	s := snapshot.Build(converter{l}.data(cat), l.version.Add(1), now)
	l.publish(s, now)
	l.log.Info("snapshot loaded", "version", s.Version(), "took", now.Sub(start), "relay_keys", s.Counts()["relay_keys"], "models", s.Counts()["models"])
	return nil
}

// RequestReload asks Run for a full reload soon (the control API's reload).
func (l *Loader) RequestReload() {
	select {
	case l.full <- struct{}{}:
	default:
	}
}

func (l *Loader) publish(s *snapshot.Snapshot, now time.Time) {
	l.current.Store(s)
	l.lastSync.Store(now.UnixNano())
	if l.opts.OnSwap != nil {
		l.opts.OnSwap(s)
	}
}

// notified records one payload; it never blocks.
func (l *Loader) notified(payload string) {
	table, idText, ok := strings.Cut(payload, ":")
	id, err := uuid.Parse(idText)
	l.pendingMu.Lock()
	if !ok || err != nil || l.pendingN >= l.opts.MaxPending {
		l.needFull = true
	} else {
		kind := store.Kind(table).Owner()
		set := l.pending[kind]
		if set == nil {
			set = make(map[uuid.UUID]struct{})
			l.pending[kind] = set
		}
		if _, dup := set[id]; !dup {
			set[id] = struct{}{}
			l.pendingN++
		}
	}
	l.pendingMu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take empties the pending set.
func (l *Loader) take() (changed map[store.Kind][]uuid.UUID, full bool) {
	l.pendingMu.Lock()
	defer l.pendingMu.Unlock()
	full = l.needFull
	changed = make(map[store.Kind][]uuid.UUID, len(l.pending))
	for kind, set := range l.pending {
		for id := range set {
			changed[kind] = append(changed[kind], id)
		}
	}
	l.pending = make(map[store.Kind]map[uuid.UUID]struct{})
	l.pendingN = 0
	l.needFull = false
	return changed, full
}

// applyPending reads the notified rows and applies them to the current snapshot.
func (l *Loader) applyPending(ctx context.Context) error {
	changed, full := l.take()
	if full || l.Current() == nil {
		return l.Load(ctx)
	}
	if len(changed) == 0 {
		return nil
	}
	l.buildMu.Lock()
	defer l.buildMu.Unlock()
	cat, deleted, err := l.st.ReadChanged(ctx, changed)
	if err != nil {
		// Put the work back so nothing is lost; the next wake retries.
		l.pendingMu.Lock()
		l.needFull = true
		l.pendingMu.Unlock()
		return fmt.Errorf("apply changes: %w", err)
	}
	now := l.opts.Now()
	s := l.Current().Apply(converter{l}.changes(cat, deleted), l.version.Add(1), now)
	l.publish(s, now)
	n := 0
	for _, ids := range changed {
		n += len(ids)
	}
	l.log.Debug("snapshot updated", "version", s.Version(), "rows", n)
	return nil
}

// Run keeps the snapshot current until ctx ends. It returns nil on ctx end.
func (l *Loader) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.applyLoop(ctx)
	}()
	l.listenLoop(ctx)
	cancel()
	wg.Wait()
	return nil
}

// listenLoop holds the LISTEN connection, reconnecting with backoff. Every
// (re)connect is followed by a full reload, since notifications may have
// been missed while it was down.
func (l *Loader) listenLoop(ctx context.Context) {
	retry := backoff.Policy{Base: 100 * time.Millisecond, Max: l.opts.MaxBackoff, Jitter: backoff.Extra}
	failures := 0
	for ctx.Err() == nil {
		connected := false
		err := l.st.Listen(ctx, func(uint32) {
			connected = true
			l.listening.Store(true)
			failures = 0
			l.pendingMu.Lock()
			l.needFull = true
			l.pendingMu.Unlock()
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}, l.notified)
		l.listening.Store(false)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("listener closed")
		}
		failures++
		l.log.Warn("snapshot listener lost; reconnecting", "err", err, "after", retry.Delay(failures), "was_connected", connected)
		if !retry.Wait(ctx, failures) {
			return
		}
	}
}

// applyLoop debounces wakes and runs resyncs.
func (l *Loader) applyLoop(ctx context.Context) {
	resync := time.NewTicker(l.opts.Resync)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-resync.C:
			l.markFull()
		case <-l.full:
			l.markFull()
		case <-l.wake:
			if !l.firstOrFull() {
				// Debounce: let a burst of writes settle, then apply once.
				t := time.NewTimer(l.opts.Debounce)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		if err := l.applyPending(ctx); err != nil && ctx.Err() == nil {
			l.log.Error("snapshot update failed; will retry", "err", err)
			if !backoff.Sleep(ctx, time.Second) {
				return
			}
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (l *Loader) markFull() {
	l.pendingMu.Lock()
	l.needFull = true
	l.pendingMu.Unlock()
}

// firstOrFull reports whether the pending work is a full reload (after a
// reconnect or before the first load), which is not debounced.
func (l *Loader) firstOrFull() bool {
	if l.Current() == nil {
		return true
	}
	l.pendingMu.Lock()
	defer l.pendingMu.Unlock()
	return l.needFull
}
