package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
)

// queueKey names a pacing queue: one per policy and host key, and per
// principal when the policy has per-principal rules (so one relay key
// that spent its share does not hold up the others).
type queueKey struct{ policy, principal, key snapshot.ID }

// queue holds the requests waiting for room, by priority (higher first)
// then arrival. Only its head asks the store, at retryAt: the moment the
// store said it would fit. When the head is admitted the next one asks at
// once, so waiters are released in order without polling.
type queue struct {
	refs int // acquire calls holding the queue; guarded by Limiter.qmu

	mu      sync.Mutex
	waiters []*waiter
	retryAt time.Time
	last    Verdict   // the head's last refusal, to explain a timeout
	lastAt  time.Time // when the store gave it
	// Fair turns across projects (start-time fair queuing): a waiter's
	// round is one past the last round its project holds in the queue,
	// and at least the round of the last waiter admitted; within a
	// priority, waiters go by round, then arrival. A project that queued
	// 1000 requests holds rounds 0…999; another project's one request
	// takes the round being served and goes next.
	round  int64                 // the round of the last waiter admitted
	rounds map[snapshot.ID]int64 // per project with waiters: its last round
	counts map[snapshot.ID]int   // … and how many it has
	// onSettle: the head's last refusal was for something a settlement
	// frees (a concurrency slot, or tokens reserved from an estimate), so
	// a release or a refund — in this pod or, through Redis, another —
	// wakes the head.
	onSettle bool
}

type waiter struct {
	prio    int
	round   int64
	seq     uint64
	project snapshot.ID
	wake    chan struct{} // buffered 1
}

// ask is one reservation to acquire.
type ask struct {
	qk       queueKey
	prio     int
	seq      uint64      // arrival order
	project  snapshot.ID // whose turn it takes, for fairness
	deadline time.Time   // zero: may not wait
	closed   bool        // the policy fails closed
	// degrade: a refusal for a wait sends the request to a cheaper
	// fallback (the deadline is the policy's degrade wait); it is counted
	// as degraded, not among the refusals.
	degrade bool
	cs      []Counter
	// refresh, when set, updates the amounts of cs before each try (a
	// waiting request's estimate may be learned lower meanwhile).
	refresh func([]Counter)
}

// acquire reserves a.cs, waiting in a.qk's queue while the store says the
// wait fits before a.deadline. ok false with a nil error is a refusal,
// explained by the verdict.
func (l *Limiter) acquire(ctx context.Context, a *ask) (g grant, v Verdict, ok bool, err error) {
	q := l.queue(a.qk)
	defer l.unref(a.qk)

	q.mu.Lock()
	queued := len(q.waiters) > 0
	q.mu.Unlock()
	freed := l.freed.Load()
	if !queued {
		// The fast path: nobody waits, so nobody is overtaken.
		var st Store
		if v, st, err = l.reserve(ctx, a.cs, a.closed); err != nil || v.OK {
			return grant{store: st, at: v.At, atOf: v.AtOf, cs: a.cs}, v, err == nil, err
		}
		if !l.canWait(v, a.cs, a.deadline) {
			l.refusedFor(v, a)
			return grant{}, v, false, nil
		}
	}

	q.mu.Lock()
	if queued {
		// Behind others: refuse at once what cannot be served in time.
		est := Verdict{Wait: time.Until(q.retryAt), Worst: q.last.Worst, Used: q.last.Used, Reset: q.last.Reset}
		if q.onSettle {
			// The head waits for a settlement that may come any moment:
			// wait behind it until the deadline.
			est.Wait = 0
		}
		est.Wait = max(est.Wait, time.Millisecond)
		if full := len(q.waiters) >= l.opts.MaxQueue; full || a.deadline.IsZero() || time.Now().Add(est.Wait).After(a.deadline) {
			q.mu.Unlock()
			switch {
			case a.degrade:
			case full:
				l.refusedQueueFull.Add(1)
			default:
				l.refusedWaitTooLong.Add(1)
			}
			return grant{}, est, false, nil
		}
	}
	w := &waiter{prio: a.prio, seq: a.seq, project: a.project, wake: make(chan struct{}, 1)}
	q.take(w)
	i := len(q.waiters)
	for i > 0 && before(w, q.waiters[i-1]) {
		i--
	}
	q.waiters = append(q.waiters, nil)
	copy(q.waiters[i+1:], q.waiters[i:])
	q.waiters[i] = w
	if !queued {
		q.last, q.lastAt, q.onSettle = v, time.Now(), freedBySettle(v, a.cs)
		if i == 0 || q.retryAt.IsZero() {
			q.retryAt = time.Now().Add(l.pace(v, a.cs))
		}
		if q.onSettle && l.freed.Load() != freed {
			q.retryAt = time.Now() // a settlement freed room since the refusal: ask again now
		}
	}
	if i == 0 && len(q.waiters) > 1 {
		signal(q.waiters[1]) // displaced: it goes back to waiting for its turn
	}
	q.mu.Unlock()
	l.paced.Add(1)
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	// The room it waits for may be in a settlement that is itself
	// waiting to be sent with others (Options.SettleEvery): send it now.
	select {
	case l.hurry <- struct{}{}:
	default:
	}
	obs := l.observer()
	if obs != nil {
		obs.PacingStarted()
	}
	start := time.Now()
	g, v, ok, err = l.wait(ctx, q, w, a)
	outcome := "refused"
	switch {
	case ok:
		outcome = "admitted"
		l.pacedAdmitted.Add(1)
	case err != nil && ctx.Err() != nil:
		outcome = "canceled"
	case a.degrade && v.Wait != Never:
		outcome = "degraded"
	}
	if obs != nil {
		obs.PacingEnded(time.Since(start), outcome)
	}
	return g, v, ok, err
}

// refusedFor counts a refusal of a request that may not wait (longer);
// one the policy degrades instead is counted by the reservation.
func (l *Limiter) refusedFor(v Verdict, a *ask) {
	switch {
	case v.Wait == Never:
		l.refusedNeverFits.Add(1)
	case !a.degrade:
		l.refusedWaitTooLong.Add(1)
	}
}

// PacingObserver is told about every request that waits in a pacing
// queue: when it starts and, once, when it stops — how long it waited and
// how it ended: "admitted", "refused", "canceled" or "degraded" (sent to
// a cheaper fallback instead of waiting longer). metrics.Registry is
// one.
type PacingObserver interface {
	PacingStarted()
	PacingEnded(wait time.Duration, outcome string)
}

// ObservePacing makes o the limiter's PacingObserver (nil: none).
func (l *Limiter) ObservePacing(o PacingObserver) {
	if o == nil {
		l.pacingObs.Store(nil)
		return
	}
	l.pacingObs.Store(&o)
}

func (l *Limiter) observer() PacingObserver {
	if p := l.pacingObs.Load(); p != nil {
		return *p
	}
	return nil
}

// before orders waiters: higher priority first, then round (fair turns
// across projects), then arrival.
func before(a, b *waiter) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.round != b.round {
		return a.round < b.round
	}
	return a.seq < b.seq
}

// take gives w its round; q.mu is held.
func (q *queue) take(w *waiter) {
	if q.rounds == nil {
		q.rounds, q.counts = make(map[snapshot.ID]int64), make(map[snapshot.ID]int)
	}
	w.round = q.round
	if q.counts[w.project] > 0 {
		w.round = max(w.round, q.rounds[w.project]+1)
	}
	q.rounds[w.project] = w.round
	q.counts[w.project]++
}

// give takes w's round back as it leaves; q.mu is held.
func (q *queue) give(w *waiter, admitted bool) {
	if admitted {
		q.round = max(q.round, w.round)
	}
	if q.counts[w.project]--; q.counts[w.project] <= 0 {
		delete(q.counts, w.project)
		delete(q.rounds, w.project)
	}
}

func signal(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// wait runs one waiter until it is admitted, refused or canceled.
func (l *Limiter) wait(ctx context.Context, q *queue, w *waiter, a *ask) (grant, Verdict, bool, error) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		q.mu.Lock()
		head := q.waiters[0] == w
		d := time.Until(a.deadline)
		turn := head && !time.Now().Before(q.retryAt)
		if head {
			d = min(d, time.Until(q.retryAt))
		}
		last, lastAt := q.last, q.lastAt
		q.mu.Unlock()

		switch {
		case turn:
			if a.refresh != nil {
				a.refresh(a.cs)
			}
			freed := l.freed.Load()
			v, st, err := l.reserve(ctx, a.cs, a.closed)
			if err != nil {
				l.leave(q, w, false)
				return grant{}, v, false, err
			}
			if v.OK {
				l.leave(q, w, true)
				return grant{store: st, at: v.At, atOf: v.AtOf, cs: a.cs}, v, true, nil
			}
			q.mu.Lock()
			q.last, q.lastAt, q.onSettle = v, time.Now(), freedBySettle(v, a.cs)
			q.retryAt = time.Now().Add(l.pace(v, a.cs))
			if q.onSettle && l.freed.Load() != freed {
				q.retryAt = time.Now() // a settlement freed room since the refusal: ask again now
			}
			q.mu.Unlock()
			if !l.canWait(v, a.cs, a.deadline) {
				l.leave(q, w, false)
				l.refusedFor(v, a)
				return grant{}, v, false, nil
			}
			continue
		case d <= 0: // past the deadline
			l.leave(q, w, false)
			if !a.degrade {
				l.refusedWaitTooLong.Add(1)
			}
			last.Wait = l.refusedWait(last, lastAt, a.cs, q)
			return grant{}, last, false, nil
		}
		timer.Reset(d)
		select {
		case <-w.wake:
		case <-timer.C:
		case <-ctx.Done():
			l.leave(q, w, false)
			return grant{}, Verdict{}, false, ctx.Err()
		}
	}
}

// refusedWait is the Retry-After of a waiter refused at its deadline: for
// a window (tokens included) the moment the head's last answer said it
// would fit, less the time since; otherwise the head's next try.
func (l *Limiter) refusedWait(last Verdict, lastAt time.Time, cs []Counter, q *queue) time.Duration {
	if last.Worst >= 0 && last.Worst < len(cs) && cs[last.Worst].Kind == KindWindow && last.Wait != Never && !lastAt.IsZero() {
		return max(time.Millisecond, last.Wait-time.Since(lastAt))
	}
	return max(time.Millisecond, time.Until(q.retryAtLocked()))
}

func (q *queue) retryAtLocked() time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.retryAt
}

// leave takes w out of q. When w was the head, the next waiter takes
// over: at once if w was admitted (there may be room for more), else at
// the retry time w was given.
func (l *Limiter) leave(q *queue, w *waiter, admitted bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.waiters {
		if x != w {
			continue
		}
		copy(q.waiters[i:], q.waiters[i+1:])
		q.waiters[len(q.waiters)-1] = nil
		q.waiters = q.waiters[:len(q.waiters)-1]
		q.give(w, admitted)
		if i == 0 && len(q.waiters) > 0 {
			if admitted {
				q.retryAt = time.Now()
			}
			signal(q.waiters[0])
		}
		return
	}
}

// worstIsLease reports whether a refusal waits for a concurrency slot.
func worstIsLease(v Verdict, cs []Counter) bool {
	return v.Worst >= 0 && v.Worst < len(cs) && cs[v.Worst].Kind == KindLease
}

// worstIsTokens reports whether a refusal waits for tokens: a window of a
// token meter, whose reservations are estimates that settling may give
// back long before the window moves.
func worstIsTokens(v Verdict, cs []Counter) bool {
	return v.Worst >= 0 && v.Worst < len(cs) && cs[v.Worst].Kind == KindWindow && isTokenMeter(cs[v.Worst].Meter)
}

func isTokenMeter(m snapshot.Meter) bool {
	return m == snapshot.MeterInputTokens || m == snapshot.MeterOutputTokens || m == snapshot.MeterTotalTokens
}

// freedBySettle reports whether a refusal waits for something a
// settlement frees: a concurrency slot or tokens.
func freedBySettle(v Verdict, cs []Counter) bool {
	return worstIsLease(v, cs) || worstIsTokens(v, cs)
}

// pace is how long the head waits before asking again: the store's wait,
// or for what a settlement frees (any time, from any pod) at most
// LeasePoll for a concurrency slot and TokenPoll for tokens. A settlement
// wakes the head sooner (kick); the poll is the net under a lost wake-up.
func (l *Limiter) pace(v Verdict, cs []Counter) time.Duration {
	d := v.Wait
	switch {
	case worstIsLease(v, cs):
		d = min(d, l.opts.LeasePoll)
	case worstIsTokens(v, cs):
		d = min(d, l.opts.TokenPoll)
	}
	return max(d, time.Millisecond)
}

// canWait reports whether a request refused with v may wait for room. A
// request that can never fit is refused at once; one waiting for a
// concurrency slot or for tokens waits until its deadline, since a release
// or a settlement below its estimate may free the room any moment;
// otherwise it waits when the store's wait ends before the deadline.
func (l *Limiter) canWait(v Verdict, cs []Counter, deadline time.Time) bool {
	if v.Wait == Never || deadline.IsZero() {
		return false
	}
	if freedBySettle(v, cs) {
		return true
	}
	return !time.Now().Add(v.Wait).After(deadline)
}

// kick makes the heads waiting for what a settlement frees ask again now:
// a lease was released or tokens given back, by this pod or (through
// Redis) another.
func (l *Limiter) kick() {
	l.freed.Add(1)
	l.qmu.Lock()
	qs := make([]*queue, 0, len(l.queues))
	for _, q := range l.queues {
		qs = append(qs, q)
	}
	l.qmu.Unlock()
	now := time.Now()
	for _, q := range qs {
		q.mu.Lock()
		if len(q.waiters) > 0 && q.onSettle {
			q.retryAt = now
			signal(q.waiters[0])
		}
		q.mu.Unlock()
	}
}

func (l *Limiter) queue(k queueKey) *queue {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	q := l.queues[k]
	if q == nil {
		q = &queue{}
		l.queues[k] = q
	}
	q.refs++
	return q
}

func (l *Limiter) unref(k queueKey) {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if q := l.queues[k]; q != nil {
		if q.refs--; q.refs == 0 {
			delete(l.queues, k)
		}
	}
}
