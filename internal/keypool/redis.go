package keypool

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/snapshot"
)

// RedisBreakers are Breakers shared by every pod through Redis, with the
// same scopes as Memory: one hash field per held key and per held (key,
// model). The request path only touches a local copy (a Memory), so Ready,
// Acquire and Report cost no round trip: a change of state a Report makes
// is written to a Redis hash and published by a background goroutine,
// every pod applies what the others publish, and a periodic full read of
// the hash heals messages lost while a pod was disconnected. A rotated
// secret is a new KeyRef and starts closed everywhere. Clear (an
// operator's, off the request path) deletes the fields in Redis at once
// and publishes the deletions.
//
// The half-open probe is claimed locally: after a backoff each pod may send
// one probe, and the first verdict published settles the breaker for all.
type RedisBreakers struct {
	local   *Memory
	client  redis.UniversalClient
	hash    string
	channel string
	resync  time.Duration
	log     *slog.Logger

	writes  chan breakerWrite
	pending atomic.Int64 // writes queued and not yet applied
	// gen moves on every local change, finished write and applied event:
	// a full read that saw it move may be older than what it would
	// overwrite, so it is dropped.
	gen atomic.Uint64
	// changing is held shared by every local change from its generation
	// bump to its queued write, and exclusively by a full read between its
	// check and its replacement, so a change cannot land between the two.
	changing sync.RWMutex
	stop     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
	ps       *redis.PubSub
	failing  atomic.Bool // the last write failed: log once per streak
}

// RedisBreakerOptions tune RedisBreakers; zero fields take defaults.
type RedisBreakerOptions struct {
	Prefix string        // key and channel prefix; "relay:"
	Resync time.Duration // full read of the shared state; 5s
	Logger *slog.Logger  // nil discards
}

type breakerWrite struct {
	hold Hold
	e    *entry // nil: closed
}

var _ Breakers = (*RedisBreakers)(nil)

// breakerScript sets (or, with an empty value, deletes) one breaker and
// publishes the change, atomically.
var breakerScript = redis.NewScript(`
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PUBLISH', ARGV[3], ARGV[1] .. '=' .. ARGV[2])
return 1
`)

// clearScript deletes the breakers named in ARGV[2…] and publishes each
// deletion on ARGV[1], atomically.
var clearScript = redis.NewScript(`
for i = 2, #ARGV do
  redis.call('HDEL', KEYS[1], ARGV[i])
  redis.call('PUBLISH', ARGV[1], ARGV[i] .. '=')
end
return #ARGV - 1
`)

// breakerStateTTL drops the shared hash when no breaker changed for a week.
const breakerStateTTL = 7 * 24 * time.Hour

// NewRedisBreakers returns running shared breakers; Close stops them.
func NewRedisBreakers(client redis.UniversalClient, cfg BreakerConfig, opts RedisBreakerOptions) *RedisBreakers {
	if opts.Prefix == "" {
		opts.Prefix = "relay:"
	}
	if opts.Resync <= 0 {
		opts.Resync = 5 * time.Second
	}
	b := &RedisBreakers{
		local:   NewMemory(cfg),
		client:  client,
		hash:    opts.Prefix + "{breakers}:state",
		channel: opts.Prefix + "{breakers}:events",
		resync:  opts.Resync,
		log:     opts.Logger,
		writes:  make(chan breakerWrite, 1024),
		stop:    make(chan struct{}),
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.ps = client.Subscribe(context.Background(), b.channel)
	b.wg.Add(3)
	go b.writeLoop()
	go b.listen()
	go b.resyncLoop()
	return b
}

// Close stops the background goroutines after the queued writes.
func (b *RedisBreakers) Close() error {
	b.once.Do(func() {
		close(b.stop)
		_ = b.ps.Close()
		b.wg.Wait()
	})
	return nil
}

// Ready implements Breakers.
func (b *RedisBreakers) Ready(ref KeyRef, model string, now time.Time) bool {
	return b.local.Ready(ref, model, now)
}

// Acquire implements Breakers.
func (b *RedisBreakers) Acquire(ref KeyRef, model string, now time.Time) (Ticket, bool) {
	return b.local.Acquire(ref, model, now)
}

// Panicable implements Breakers.
func (b *RedisBreakers) Panicable(ref KeyRef, model string, now time.Time) (time.Time, bool) {
	return b.local.Panicable(ref, model, now)
}

// States implements Breakers.
func (b *RedisBreakers) States(now time.Time) []KeyState { return b.local.States(now) }

// Report implements Breakers: locally at once, shared off the request path.
func (b *RedisBreakers) Report(t Ticket, r Result, now time.Time) {
	holds := [2]Hold{{Ref: t.Ref}, {Ref: t.Ref, Model: t.Model}}
	n := 1
	if t.Model != "" {
		n = 2
	}
	var before [2]entry
	var had [2]bool
	held := false
	for i, h := range holds[:n] {
		before[i], had[i] = b.local.entryOf(h)
		held = held || had[i]
	}
	if !held && (r.Outcome == OutcomeSuccess || r.Outcome == OutcomeNeutral) {
		return // closed breakers stay closed: nothing to share
	}
	b.changing.RLock()
	defer b.changing.RUnlock()
	b.gen.Add(1) // a full read in flight predates this change
	b.local.Report(t, r, now)
	for i, h := range holds[:n] {
		after, has := b.local.entryOf(h)
		if had[i] == has && (!has || shared(before[i]) == shared(after)) {
			continue
		}
		w := breakerWrite{hold: h}
		if has {
			w.e = &after
		}
		b.share(w)
	}
}

func (b *RedisBreakers) share(w breakerWrite) {
	b.gen.Add(1)
	b.pending.Add(1)
	select {
	case b.writes <- w:
	default:
		b.pending.Add(-1)
		b.log.Warn("breakers: share queue full; other pods learn this state at their next resync", "host_key_id", w.hold.Ref.ID)
	}
}

// Clear implements Breakers: the matching fields are deleted in Redis and
// the deletions published before it returns, so every pod closes them.
func (b *RedisBreakers) Clear(ctx context.Context, id snapshot.ID, model string, now time.Time) ([]KeyState, error) {
	b.changing.RLock()
	b.gen.Add(1) // a full read in flight may predate the clear
	out := b.local.clear(id, model, now)
	b.changing.RUnlock()
	m, err := b.client.HGetAll(ctx, b.hash).Result()
	if err != nil {
		return out, fmt.Errorf("read shared breakers: %w", err)
	}
	args := []any{b.channel}
	for f, v := range m {
		h, e, ok := decodeBreaker(f, v)
		if !ok || !clears(h, id, model) {
			continue
		}
		args = append(args, f)
		if e != nil && !slices.ContainsFunc(out, func(ks KeyState) bool { return ks.Ref == h.Ref && ks.Model == h.Model }) {
			if ks, ok := b.local.describe(h, e, now); ok {
				out = append(out, ks) // held on another pod only
			}
		}
	}
	sortStates(out)
	if len(args) == 1 {
		return out, nil
	}
	if err := clearScript.Run(ctx, b.client, []string{b.hash}, args...).Err(); err != nil {
		return out, fmt.Errorf("clear shared breakers: %w", err)
	}
	b.gen.Add(1)
	return out, nil
}

// Sync replaces the local state with the shared one (done every Resync).
func (b *RedisBreakers) Sync(ctx context.Context) error {
	gen := b.gen.Load()
	m, err := b.client.HGetAll(ctx, b.hash).Result()
	if err != nil {
		return err
	}
	b.changing.Lock()
	defer b.changing.Unlock()
	if b.pending.Load() > 0 || b.gen.Load() != gen {
		return nil // newer changes than this read are on their way or applied; the next sync will agree
	}
	remote := make(map[Hold]entry, len(m))
	for f, v := range m {
		if h, e, ok := decodeBreaker(f, v); ok && e != nil {
			remote[h] = *e
		}
	}
	b.local.replaceAll(remote)
	return nil
}

func (b *RedisBreakers) writeLoop() {
	defer b.wg.Done()
	for {
		select {
		case w := <-b.writes:
			b.write(w)
		case <-b.stop:
			for {
				select {
				case w := <-b.writes:
					b.write(w)
				default:
					return
				}
			}
		}
	}
}

func (b *RedisBreakers) write(w breakerWrite) {
	defer b.pending.Add(-1)
	defer b.gen.Add(1)
	field, value := encodeBreaker(w.hold, w.e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := breakerScript.Run(ctx, b.client, []string{b.hash}, field, value, b.channel, breakerStateTTL.Milliseconds()).Err()
	switch {
	case err != nil && !b.failing.Swap(true):
		b.log.Warn("breakers: sharing a breaker state failed; this pod keeps its own until Redis answers", "err", err)
	case err == nil && b.failing.Swap(false):
		b.log.Info("breakers: sharing breaker states again")
	}
}

func (b *RedisBreakers) listen() {
	defer b.wg.Done()
	for msg := range b.ps.Channel() {
		field, value, ok := strings.Cut(msg.Payload, "=")
		if !ok {
			continue
		}
		if h, e, ok := decodeBreaker(field, value); ok {
			b.changing.RLock()
			b.gen.Add(1)
			b.local.put(h, e)
			b.changing.RUnlock()
		}
	}
}

func (b *RedisBreakers) resyncLoop() {
	defer b.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := b.Sync(ctx); err != nil && !b.failing.Swap(true) {
			b.log.Warn("breakers: reading the shared breaker states failed", "err", err)
		}
		cancel()
		t.Reset(b.resync)
	}
}

// sharedEntry is what pods share of a breaker: not the local probe claim.
type sharedEntry struct {
	kind     entryKind
	failures int
	until    int64
	reason   string
	lastAt   int64
}

func shared(e entry) sharedEntry {
	return sharedEntry{e.kind, e.failures, e.until.UnixMilli(), e.reason, e.lastAt.UnixMilli()}
}

// encodeBreaker is "<host key id>:<secret version>" for a key's own
// breaker, "<host key id>:<secret version>:<upstream model>" for a
// model's, and "<kind>|<failures>|<until ms>|<last ms>|<reason>" ("" when
// closed).
func encodeBreaker(h Hold, e *entry) (string, string) {
	field := h.Ref.ID.String() + ":" + strconv.Itoa(h.Ref.Version)
	if h.Model != "" {
		field += ":" + h.Model
	}
	if e == nil {
		return field, ""
	}
	var until int64
	if !e.until.IsZero() {
		until = e.until.UnixMilli()
	}
	return field, strconv.Itoa(int(e.kind)) + "|" + strconv.Itoa(e.failures) + "|" +
		strconv.FormatInt(until, 10) + "|" + strconv.FormatInt(e.lastAt.UnixMilli(), 10) + "|" + e.reason
}

func decodeBreaker(field, value string) (Hold, *entry, bool) {
	// The model comes last: its name may hold ':' ("llama3:8b").
	parts := strings.SplitN(field, ":", 3)
	if len(parts) < 2 {
		return Hold{}, nil, false
	}
	u, err := uuid.Parse(parts[0])
	v, err2 := strconv.Atoi(parts[1])
	if err != nil || err2 != nil {
		return Hold{}, nil, false
	}
	h := Hold{Ref: KeyRef{ID: u, Version: v}}
	if len(parts) == 3 {
		if parts[2] == "" {
			return Hold{}, nil, false
		}
		h.Model = parts[2]
	}
	if value == "" {
		return h, nil, true
	}
	vals := strings.SplitN(value, "|", 5)
	if len(vals) != 5 {
		return Hold{}, nil, false
	}
	kind, e1 := strconv.Atoi(vals[0])
	failures, e2 := strconv.Atoi(vals[1])
	until, e3 := strconv.ParseInt(vals[2], 10, 64)
	last, e4 := strconv.ParseInt(vals[3], 10, 64)
	if e1 != nil || e2 != nil || e3 != nil || e4 != nil || kind < int(kindOpen) || kind > int(kindCounting) {
		return Hold{}, nil, false
	}
	e := &entry{kind: entryKind(kind), failures: failures, reason: vals[4], lastAt: time.UnixMilli(last)}
	if until != 0 {
		e.until = time.UnixMilli(until)
	}
	return h, e, true
}

// entryOf returns a copy of h's entry, if it has one.
func (b *Memory) entryOf(h Hold) (entry, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if e := b.m[h]; e != nil {
		return *e, true
	}
	return entry{}, false
}

// put sets h's shared state (nil: closed), keeping this pod's probe claim.
func (b *Memory) put(h Hold, e *entry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e == nil {
		delete(b.m, h)
		return
	}
	n := *e
	old := b.m[h]
	if old != nil && old.kind == kindCounting && n.kind == kindCounting && old.failures > n.failures {
		return // an echo of this pod's own earlier count
	}
	if old != nil && old.kind == n.kind {
		n.probing, n.probeAt = old.probing, old.probeAt
	}
	b.m[h] = &n
}

// replaceAll makes the local state the shared one, keeping probe claims.
func (b *Memory) replaceAll(m map[Hold]entry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for h := range b.m {
		if _, ok := m[h]; !ok {
			delete(b.m, h)
		}
	}
	for h, e := range m {
		n := e
		if old := b.m[h]; old != nil && old.kind == n.kind {
			n.probing, n.probeAt = old.probing, old.probeAt
		}
		b.m[h] = &n
	}
}
