package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Defaults for zero Options fields.
const (
	DefaultPrefix       = "relay:"
	DefaultTimeout      = 100 * time.Millisecond
	DefaultRetryDown    = time.Second
	DefaultLeaseTTL     = time.Minute
	DefaultAssumedPods  = 2
	DefaultOutputTokens = 1024
	DefaultSpacingSlack = 100 * time.Millisecond
	DefaultMaxQueue     = 1000
	DefaultSettleQueue  = 4096
	DefaultSettleEvery  = time.Millisecond
	DefaultLeasePoll    = 50 * time.Millisecond
	DefaultTokenPoll    = 250 * time.Millisecond
	settleTimeout       = time.Second
	settleHelpers       = 2 // settle goroutines that join in on a backlog
	failureModeClosed   = "closed"
	priorityHeader      = "X-Relay-Priority"
	unavailableRetry    = time.Second
)

// Options configures a Limiter. Zero fields take the defaults above.
type Options struct {
	// Redis shares the counters between pods; nil keeps them in this
	// process (correct for one pod).
	Redis redis.UniversalClient
	// Prefix starts every Redis key.
	Prefix string
	// Timeout bounds each Redis call on the request path.
	Timeout time.Duration
	// RetryDown is how long after a failed Redis call requests go straight
	// to their policy's failure mode before one of them tries Redis again.
	RetryDown time.Duration
	// LeaseTTL is how long a concurrency lease outlives a pod that died
	// holding it; live leases are renewed every LeaseTTL/3.
	LeaseTTL time.Duration
	// AssumedPods divides every limit for the local fallback while Redis
	// is down, until the pod count has been read from Redis.
	AssumedPods int
	// DefaultOutputTokens is the output estimate of a request that sets no
	// max_tokens, for a model with no max output in the catalog.
	DefaultOutputTokens int64
	// SpacingSlack widens the window of a host key's pacing: sends are
	// spaced (tier window + slack) / tier requests apart, so that jitter
	// on the way to the provider does not bunch them in its window.
	SpacingSlack time.Duration
	// MaxQueue caps the requests waiting in one pacing queue.
	MaxQueue int
	// SettleQueue is the capacity of the queue of settlements (a
	// request's policy counters and its host key's settle apart). When
	// full, a settlement's token and budget adjustments are dropped and
	// counted (its estimates stand) but its lease releases are still
	// queued, up to twice the capacity; past that the whole settlement is
	// dropped (its leases expire after LeaseTTL).
	SettleQueue int
	// SettleEvery is the least time between the starts of two
	// settlement round trips to Redis: settlements that come meanwhile
	// wait for the rest of it and go together, so that a busy pod pays
	// for one script call per several requests, not one per request.
	// A settlement waits not at all when this pod has requests waiting
	// for room (their wake-up comes from it), nor after a quiet spell
	// (the first one goes at once), nor on a Flush. Negative: never wait.
	SettleEvery time.Duration
	// LeasePoll is how often a request waiting for a concurrency slot
	// checks again (a release in this pod wakes it at once).
	LeasePoll time.Duration
	// FixedEstimates turns learning off: a request's output estimate is
	// its max_tokens (else the model's max output, else
	// DefaultOutputTokens), as before estimates were learned.
	FixedEstimates bool
	// EstimatePercentile is the percentile of recent actual output
	// tokens (per model, and per policy and model) a request reserves
	// when it is below the request's max_tokens.
	EstimatePercentile int
	// EstimateSamples is how many recent outputs each is learned from.
	EstimateSamples int
	// EstimateMinSamples is how many outputs must have been seen before
	// the learned estimate is used.
	EstimateMinSamples int
	// EstimateFloor is the least a learned output estimate reserves.
	EstimateFloor int64
	// LongContextTokens and LongContextWeight weight long prompts: of a
	// request's input estimate (body bytes / 4), the tokens past
	// LongContextTokens count LongContextWeight times (0 tokens: off;
	// a weight below 1 is 1). Settlement corrects to the actual count.
	LongContextTokens int64
	LongContextWeight float64
	// TokenPoll is how often the head of a queue waiting for tokens asks
	// again when no settlement has woken it: a settlement that gives
	// tokens back (actual below the estimate) wakes it at once, in this
	// pod directly and in the others through Redis pub/sub.
	TokenPoll time.Duration
	// Logger gets state changes (Redis down, Redis back); nil discards.
	Logger *slog.Logger
	// Now is the counters' clock; nil is time.Now, and Redis's own clock
	// for counters in Redis.
	Now func() time.Time
	// Pod names this process in Redis's set of live pods; "" is the
	// hostname and a random suffix.
	Pod string
}

// Stats are the limiter's counters since start, for metrics.
type Stats struct {
	Admitted      uint64 // reservations granted (first attempts and retries)
	Paced         uint64 // reservations that waited in a pacing queue
	Refused       uint64 // 429 rate_limited
	BudgetRefused uint64 // 429 budget_exceeded
	FailOpen      uint64 // reservations made against the local share while Redis was down
	FailClosed    uint64 // 503 limiter_unavailable
	StoreErrors   uint64 // failed or timed-out Redis calls on the request path
	SettleDropped uint64 // settlements dropped (whole, or all but their lease releases) on a full queue
	LeasesDropped uint64 // lease releases among them: those leases expire by TTL
	SettleErrors  uint64 // settlement batches that failed
	PacedAdmitted uint64 // reservations granted after waiting in a pacing queue
	// Refusals by why the request could not wait (longer), whatever
	// refused it (a rate limit, a budget): its estimate can never fit,
	// its wait would pass its deadline (or the policy lets no request
	// wait), its queue was full. Fail-closed refusals are FailClosed.
	RefusedNeverFits   uint64
	RefusedWaitTooLong uint64
	RefusedQueueFull   uint64
	Wakes              uint64 // wake-ups by another pod's settlement (Redis pub/sub)
	// Degraded counts reservations refused so that their request is
	// served by a cheaper fallback instead of waiting (the policy's
	// degrade option).
	Degraded       uint64
	Waiting        int64 // requests in pacing queues now
	Pods           int64 // live pods last seen in Redis (0 before the first look)
	RedisAvailable bool  // false while Redis calls are being skipped after a failure
}

// Limiter implements admission.KeyLimiter over a Store. It is safe for
// concurrent use; Close stops its goroutines.
type Limiter struct {
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	primary  Store
	redis    *Redis  // nil without Redis
	fallback *Memory // the local share while Redis is down; nil without Redis
	health   health

	qmu    sync.Mutex
	queues map[queueKey]*queue

	lmu    sync.Mutex
	leases map[string]leaseRef // live leases by id, renewed in the background

	estimates *estimates  // nil with FixedEstimates
	shares    chan string // learned estimates to publish; nil without Redis

	budgets atomic.Pointer[budgetIndex]
	keys    atomic.Pointer[keyCache]
	seq     atomic.Uint64

	// smu guards the settlements handed over and not yet taken by the
	// settle goroutine, which swaps the whole slice out at once.
	smu      sync.Mutex
	pending  []settleJob
	npending int           // settlements in pending (barriers aside)
	wake     chan struct{} // capacity 1: pending has work
	hurry    chan struct{} // capacity 1: a Flush or a new waiter wants the pending settlements now
	surge    chan struct{} // capacity 1: pending has a backlog (wakes a helper)
	lastTurn chan struct{} // closed when the last turn taken is over, and every turn before it
	stop     chan struct{}
	wg       sync.WaitGroup
	closed   sync.Once

	admitted, paced, refused, budgetRefused atomic.Uint64
	failOpen, failClosed, storeErrors       atomic.Uint64
	settleDropped, settleErrors             atomic.Uint64
	leasesDropped, wakes                    atomic.Uint64
	pacedAdmitted, refusedNeverFits         atomic.Uint64
	refusedWaitTooLong, refusedQueueFull    atomic.Uint64
	degraded                                atomic.Uint64
	pacingObs                               atomic.Pointer[PacingObserver]
	// freed counts settlements that freed room (kick): a refusal that
	// sees it move before its request is queued asks again at once,
	// instead of sleeping through the wake-up it missed.
	freed         atomic.Uint64
	waiting, pods atomic.Int64
}

// leaseRef is a live lease and the store that holds it.
type leaseRef struct {
	store Store
	c     Counter
}

var (
	_ admission.KeyLimiter  = (*Limiter)(nil)
	_ admission.Reservation = (*reservation)(nil)
	_ admission.RateHeaders = (*reservation)(nil)
)

// New returns a running Limiter. With Options.Redis it loads the script
// (a failure is logged, not fatal: Redis may come up later).
func New(opts Options) *Limiter {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	def(&opts.Timeout, DefaultTimeout)
	def(&opts.RetryDown, DefaultRetryDown)
	def(&opts.LeaseTTL, DefaultLeaseTTL)
	def(&opts.LeasePoll, DefaultLeasePoll)
	def(&opts.TokenPoll, DefaultTokenPoll)
	defInt := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	defInt(&opts.EstimatePercentile, DefaultEstimatePercentile)
	opts.EstimatePercentile = min(opts.EstimatePercentile, 100)
	defInt(&opts.EstimateSamples, DefaultEstimateSamples)
	defInt(&opts.EstimateMinSamples, DefaultEstimateMinSamples)
	opts.EstimateMinSamples = min(opts.EstimateMinSamples, opts.EstimateSamples)
	if opts.EstimateFloor <= 0 {
		opts.EstimateFloor = DefaultEstimateFloor
	}
	if opts.AssumedPods <= 0 {
		opts.AssumedPods = DefaultAssumedPods
	}
	if opts.DefaultOutputTokens <= 0 {
		opts.DefaultOutputTokens = DefaultOutputTokens
	}
	def(&opts.SpacingSlack, DefaultSpacingSlack)
	if opts.MaxQueue <= 0 {
		opts.MaxQueue = DefaultMaxQueue
	}
	if opts.SettleQueue <= 0 {
		opts.SettleQueue = DefaultSettleQueue
	}
	if opts.SettleEvery == 0 {
		opts.SettleEvery = DefaultSettleEvery
	}
	if opts.Pod == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		opts.Pod = host + "-" + hex.EncodeToString(b[:])
	}
	l := &Limiter{
		opts:   opts,
		log:    opts.Logger,
		now:    opts.Now,
		queues: make(map[queueKey]*queue),
		leases: make(map[string]leaseRef),
		wake:   make(chan struct{}, 1),
		hurry:  make(chan struct{}, 1),
		surge:  make(chan struct{}, 1),
		stop:   make(chan struct{}),
	}
	l.lastTurn = make(chan struct{})
	close(l.lastTurn)
	if !opts.FixedEstimates {
		l.estimates = &estimates{percentile: opts.EstimatePercentile, samples: opts.EstimateSamples, minSamples: opts.EstimateMinSamples}
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.now == nil {
		l.now = time.Now
	}
	if opts.Redis != nil {
		if c, ok := opts.Redis.(*redis.Client); ok && !c.Options().ContextTimeoutEnabled {
			l.log.Warn("rate limiter: the Redis client ignores context deadlines, so a slow Redis may hold requests past the limiter's timeout; build it with NewRedisClient")
		}
		l.redis = NewRedis(opts.Redis, opts.Prefix, opts.Now == nil)
		l.redis.timeout = opts.Timeout
		l.redis.Notify(opts.Pod)
		l.fallback = NewMemory()
		l.primary = l.redis
		ctx, cancel := context.WithTimeout(context.Background(), 10*opts.Timeout)
		if err := l.redis.Load(ctx); err != nil {
			l.log.Warn("rate limiter: Redis unreachable at start; policies follow their limiter_failure_mode until it answers", "err", err)
		}
		cancel()
	} else {
		l.primary = NewMemory()
		l.log.Info("rate limiter: counters in process memory (no RELAY_REDIS_URL); correct for one pod only")
	}
	l.wg.Add(2 + settleHelpers)
	go l.settleLoop(l.wake, l.redis != nil)
	for range settleHelpers {
		go l.settleLoop(l.surge, false)
	}
	go l.renewLoop()
	if l.redis != nil {
		l.wg.Add(1)
		go l.listenLoop()
		if l.estimates != nil {
			l.shares = make(chan string, shareQueue)
			l.estimates.learnt = func(k estimateKey, n int64) {
				select {
				case l.shares <- estimateMessage(l.opts.Pod, k, n):
				default: // the next percentile will be shared
				}
			}
			l.wg.Add(1)
			go l.shareLoop()
		}
	}
	return l
}

// shareQueue bounds the learned estimates waiting to be published.
const shareQueue = 64

// estimatesChannel is the pub/sub channel of learned output estimates,
// after the prefix.
const estimatesChannel = "{rl}:estimates"

// shareLoop publishes the output estimates this pod learns, so that the
// other pods reserve them before they have learned their own.
func (l *Limiter) shareLoop() {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case m := <-l.shares:
			ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
			if err := l.opts.Redis.Publish(ctx, l.opts.Prefix+estimatesChannel, m).Err(); err != nil {
				l.log.Debug("rate limiter: sharing a learned estimate failed", "err", err)
			}
			cancel()
		}
	}
}

// listenLoop wakes this pod's waiters when another pod's settlement gave
// room back (Redis pub/sub; the client resubscribes after a lost
// connection, and the waiters' polls cover what is missed meanwhile).
func (l *Limiter) listenLoop() {
	defer l.wg.Done()
	sub := l.opts.Redis.Subscribe(context.Background(), l.redis.Channel(), l.opts.Prefix+estimatesChannel)
	defer func() { _ = sub.Close() }()
	ch := sub.Channel()
	for {
		select {
		case <-l.stop:
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			if m.Channel != l.redis.Channel() {
				if pod, k, n, err := parseEstimateMessage(m.Payload); err == nil && pod != l.opts.Pod {
					l.estimates.adopt(k, n)
				}
				continue
			}
			if m.Payload != l.opts.Pod {
				l.wakes.Add(1)
				l.kick()
			}
		}
	}
}

// Close flushes pending settlements and stops the background goroutines.
// Leases still held are left to expire.
func (l *Limiter) Close() error {
	l.closed.Do(func() {
		close(l.stop)
		l.wg.Wait()
	})
	return nil
}

// Stats returns the limiter's counters.
func (l *Limiter) Stats() Stats {
	return Stats{
		Admitted: l.admitted.Load(), Paced: l.paced.Load(), Refused: l.refused.Load(),
		BudgetRefused: l.budgetRefused.Load(), FailOpen: l.failOpen.Load(), FailClosed: l.failClosed.Load(),
		StoreErrors: l.storeErrors.Load(), SettleDropped: l.settleDropped.Load(), SettleErrors: l.settleErrors.Load(),
		LeasesDropped: l.leasesDropped.Load(), Waiting: l.waiting.Load(), Pods: l.pods.Load(),
		PacedAdmitted: l.pacedAdmitted.Load(), RefusedNeverFits: l.refusedNeverFits.Load(),
		RefusedWaitTooLong: l.refusedWaitTooLong.Load(), RefusedQueueFull: l.refusedQueueFull.Load(), Wakes: l.wakes.Load(), Degraded: l.degraded.Load(),
		RedisAvailable: l.redis == nil || l.health.downUntil.Load() == 0,
	}
}

// errUnavailable is the fail-closed answer.
func errUnavailable() error {
	return &wire.Error{
		Kind:       wire.ErrLimiterUnavailable,
		Msg:        "Rate limits cannot be checked right now (Relay's Redis is unavailable) and this policy fails closed; retry shortly.",
		RetryAfter: unavailableRetry,
	}
}

// health tracks whether Redis answers. After a failure, requests skip
// Redis until downUntil; then one request (the probe) tries it again.
type health struct {
	downUntil atomic.Int64 // Unix ns; 0: up
	probing   atomic.Bool
}

// try reports whether this call should go to Redis.
func (h *health) try(now time.Time) bool {
	d := h.downUntil.Load()
	if d == 0 {
		return true
	}
	if now.UnixNano() < d {
		return false
	}
	return h.probing.CompareAndSwap(false, true)
}

func (l *Limiter) redisOK() {
	if l.health.downUntil.Load() != 0 {
		l.health.downUntil.Store(0)
		l.health.probing.Store(false)
		l.log.Info("rate limiter: Redis is back; counters are shared again")
	}
}

func (l *Limiter) redisFailed(err error) {
	l.storeErrors.Add(1)
	was := l.health.downUntil.Swap(time.Now().Add(l.opts.RetryDown).UnixNano())
	l.health.probing.Store(false)
	if was == 0 {
		l.log.Warn("rate limiter: Redis failed; fail-open policies use a local share of their limits, fail-closed policies answer 503 until it is back",
			"err", err, "share_divisor", l.podCount())
	}
}

// podCount is the divisor of the local share.
func (l *Limiter) podCount() int64 {
	if n := l.pods.Load(); n > 0 {
		return n
	}
	return int64(l.opts.AssumedPods)
}

// reserve takes cs from Redis, or, when Redis is failing, from the local
// share (fail open) or not at all (fail closed). Without Redis it uses
// the memory store.
func (l *Limiter) reserve(ctx context.Context, cs []Counter, closed bool) (Verdict, Store, error) {
	now := l.now()
	if l.redis == nil {
		v, err := l.primary.Reserve(ctx, cs, now)
		return v, l.primary, err
	}
	if l.health.try(time.Now()) {
		cctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
		v, err := l.redis.Reserve(cctx, cs, now)
		cancel()
		if err == nil {
			l.redisOK()
			return v, l.redis, nil
		}
		if ctx.Err() != nil {
			l.health.probing.Store(false)
			return v, nil, ctx.Err()
		}
		l.redisFailed(err)
	}
	if closed {
		l.failClosed.Add(1)
		return Verdict{}, nil, errUnavailable()
	}
	l.failOpen.Add(1)
	local := make([]Counter, len(cs))
	pods := l.podCount()
	for i, c := range cs {
		switch c.Kind {
		case KindSpacing:
			c.Window *= time.Duration(pods)
		default:
			c.Limit = max(1, c.Limit/pods)
		}
		local[i] = c
	}
	v, err := l.fallback.Reserve(ctx, local, now)
	return v, l.fallback, err
}

// settleJob is one request's adjustments to one store; a job with done
// set is a flush barrier.
type settleJob struct {
	store Store
	adj   []Adjust
	done  chan struct{}
}

// settle hands adjustments to the settle goroutine. It never waits: it
// appends to the pending slice under a lock held for the append alone, and
// wakes the goroutine. On a full queue it keeps the lease releases (up to
// twice the queue) and drops the rest (see Options.SettleQueue). When the
// backlog passes a quarter of the queue it wakes a helper settle goroutine
// and yields the processor once, so that on a saturated CPU the settle
// goroutines get their turn.
func (l *Limiter) settle(store Store, adj []Adjust) {
	if len(adj) == 0 || store == nil {
		return
	}
	limit := l.opts.SettleQueue
	l.smu.Lock()
	n := l.npending
	switch {
	case n < limit:
	case n < 2*limit:
		leases := adj[:0:0]
		for _, a := range adj {
			if a.Kind == KindLease {
				leases = append(leases, a)
			}
		}
		if len(leases) < len(adj) {
			l.settleDropped.Add(1)
		}
		adj = leases
	default:
		l.smu.Unlock()
		l.settleDropped.Add(1)
		for _, a := range adj {
			if a.Kind == KindLease {
				l.leasesDropped.Add(1)
			}
		}
		return
	}
	if len(adj) > 0 {
		l.pending = append(l.pending, settleJob{store: store, adj: adj})
		l.npending++
	}
	l.smu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	if n >= limit/4 {
		select {
		case l.surge <- struct{}{}:
		default:
		}
		runtime.Gosched()
	}
}

// Flush waits until every settlement handed over before it has been
// applied (or ctx ends).
func (l *Limiter) Flush(ctx context.Context) error {
	done := make(chan struct{})
	l.smu.Lock()
	l.pending = append(l.pending, settleJob{done: done})
	l.smu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	select {
	case l.hurry <- struct{}{}:
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settleLoop applies settlements: each time it runs it takes everything
// pending at once (one swap under the lock, whatever the backlog) and
// settles it with one Settle per store — for Redis one round trip, the
// counters summed per window bucket and per period first. A backlog that
// grew while it waited for Redis, or for a processor, is simply a bigger
// batch the next time: the goroutine keeps up however far behind it was
// scheduled, rather than taking a fixed number of requests per turn.
//
// With paced set (the main loop, with Redis) a turn starts no sooner than
// SettleEvery after the one before, so that at a busy pod's rate the
// settlements of several requests share one round trip.
//
// The settleHelpers run the same loop but wake only on a surge (a backlog
// of a quarter of the queue, signalled by settle): while one turn waits for
// a slow Redis, another takes the backlog and sends it alongside.
func (l *Limiter) settleLoop(wake <-chan struct{}, paced bool) {
	defer l.wg.Done()
	var spare []settleJob
	batch := make(map[Store][]Adjust)
	var last time.Time // when the last turn started
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		stopping := false
		select {
		case <-wake:
		case <-l.stop:
			stopping = true
		}
		if d := l.opts.SettleEvery - time.Since(last); paced && !stopping && d > 0 && l.waiting.Load() == 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-l.hurry:
				timer.Stop()
			case <-l.stop:
				timer.Stop()
				stopping = true
			}
		}
		last = time.Now()
		l.smu.Lock()
		jobs := l.pending
		var prev, done chan struct{}
		if len(jobs) > 0 {
			l.pending, l.npending = spare[:0], 0
			prev, done = l.lastTurn, make(chan struct{})
			l.lastTurn = done
		}
		l.smu.Unlock()
		if len(jobs) > 0 {
			l.apply(batch, jobs, prev)
			close(done)
			clear(jobs)
			spare = jobs
		}
		if stopping {
			return
		}
	}
}

// apply settles jobs, one Settle per store, then, once the turn before
// (prev) is over too, releases their barriers: a Flush returns when every
// settlement handed over before it has been applied, by whichever turn.
func (l *Limiter) apply(batch map[Store][]Adjust, jobs []settleJob, prev <-chan struct{}) {
	released := false
	for _, job := range jobs {
		if job.done == nil {
			batch[job.store] = append(batch[job.store], job.adj...)
		}
	}
	for st, adj := range batch {
		if len(adj) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		if err := st.Settle(ctx, adj, l.now()); err != nil {
			l.settleErrors.Add(1)
			l.log.Warn("rate limiter: settling failed; estimates stand and leases expire by TTL", "err", err, "adjustments", len(adj))
		}
		cancel()
		for i := range adj {
			if frees(&adj[i]) {
				released = true
			}
		}
		clear(adj)
		batch[st] = adj[:0]
	}
	<-prev
	for _, job := range jobs {
		if job.done != nil {
			close(job.done)
		}
	}
	if released {
		l.kick()
	}
}

// frees reports whether an adjustment gives room back: a lease released,
// or tokens settled below their estimate.
func frees(a *Adjust) bool {
	return a.Kind == KindLease || (a.Kind == KindWindow && a.Delta < 0 && isTokenMeter(a.Meter))
}

// renewLoop keeps this pod's leases alive and counts the live pods.
func (l *Limiter) renewLoop() {
	defer l.wg.Done()
	every := l.opts.LeaseTTL / 3
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.renew()
		t.Reset(every)
	}
}

// renew extends every live lease, by store, and reads the pod count.
func (l *Limiter) renew() {
	byStore := make(map[Store][]Counter)
	l.lmu.Lock()
	for _, r := range l.leases {
		byStore[r.store] = append(byStore[r.store], r.c)
	}
	l.lmu.Unlock()
	if l.redis != nil {
		if _, ok := byStore[l.redis]; !ok {
			byStore[l.redis] = nil // the heartbeat
		}
	}
	for st, cs := range byStore {
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		n, err := st.Renew(ctx, cs, l.opts.Pod, l.opts.LeaseTTL, l.now())
		cancel()
		if err != nil {
			l.log.Warn("rate limiter: renewing leases failed", "err", err, "leases", len(cs))
			continue
		}
		if st == l.redis {
			l.pods.Store(int64(n))
		}
	}
}

func (l *Limiter) holdLeases(store Store, cs []Counter) {
	for _, c := range cs {
		if c.Kind == KindLease {
			l.lmu.Lock()
			l.leases[c.Lease] = leaseRef{store: store, c: c}
			l.lmu.Unlock()
		}
	}
}

func (l *Limiter) dropLeases(cs []Counter) {
	for _, c := range cs {
		if c.Kind == KindLease {
			l.lmu.Lock()
			delete(l.leases, c.Lease)
			l.lmu.Unlock()
		}
	}
}

// Level reports how much of a policy's rate-limit rule is taken now (for a
// per-principal rule, principal's share), for tools and tests. A
// concurrency rule reports live leases.
func (l *Limiter) Level(ctx context.Context, policy *snapshot.Policy, rl *snapshot.RateLimit, rule *snapshot.Rule, principal snapshot.ID) (int64, error) {
	c := ruleCounter(policyKey(policy.ID, rl.ID), rule, principal, 0, "", l.opts.LeaseTTL)
	c.Amount = 0
	if c.Kind == KindLease {
		c.Limit = 1 << 40
	}
	v, err := l.primary.Peek(ctx, []Counter{c}, l.now())
	if err != nil {
		return 0, fmt.Errorf("peek rate limit: %w", err)
	}
	return v.Used[0], nil
}

// Spent reports a budget's spend in the current period, in micro-units.
func (l *Limiter) Spent(ctx context.Context, b *snapshot.Budget) (int64, error) {
	c := budgetCounter(b, l.now())
	c.Amount = 0
	v, err := l.primary.Peek(ctx, []Counter{c}, l.now())
	if err != nil {
		return 0, fmt.Errorf("peek budget: %w", err)
	}
	return v.Used[0], nil
}
