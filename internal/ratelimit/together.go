package ratelimit

import (
	"context"
	"slices"
	"sync"
)

// together puts the reservations made while another is on its way to
// Redis into one pipeline: one write and one read for the lot, on both
// sides, instead of one round trip each. At most one batch is in flight;
// whatever comes meanwhile waits for it and goes next, so a busy pod's
// batches grow with its concurrency and a lone request goes at once, as
// before. Each reservation is still its own script call, atomic for its
// counters: a batch changes how calls travel, not what they do.
//
// A batch is sent by the goroutine of its first reservation (no helper
// goroutine, no extra hand-over): when a batch comes back, the one that
// sent it hands what queued meanwhile to the first of those, then wakes
// the others of its own batch.
type together struct {
	mu    sync.Mutex
	busy  bool // a batch is in flight
	queue []*joined
}

// joined is one reservation's calls waiting in together.
type joined struct {
	calls []*call
	// turn gets nil when the calls are answered, or a batch (this one
	// first) that this goroutine is to send.
	turn chan []*joined
}

// runTogether runs cs, the calls of one reservation, in the next batch.
// A reservation whose ctx ends while it is still queued leaves the queue
// and returns at once; one already taken into a batch waits for it (the
// batch is bounded by the store's timeout).
func (s *Redis) runTogether(ctx context.Context, cs []*call) error {
	t := &s.together
	j := &joined{calls: cs}
	t.mu.Lock()
	if !t.busy {
		t.busy = true
		t.mu.Unlock()
		s.send(ctx, []*joined{j})
		return callsErr(cs)
	}
	j.turn = make(chan []*joined, 1)
	t.queue = append(t.queue, j)
	t.mu.Unlock()
	var batch []*joined
	select {
	case batch = <-j.turn:
	case <-ctx.Done():
		t.mu.Lock()
		if i := slices.Index(t.queue, j); i >= 0 {
			t.queue = slices.Delete(t.queue, i, i+1)
			t.mu.Unlock()
			return context.Cause(ctx)
		}
		t.mu.Unlock()
		batch = <-j.turn
	}
	if batch != nil {
		s.send(ctx, batch)
	}
	return callsErr(cs)
}

// send runs batch (its first reservation is the caller's) in one round
// trip, hands what queued meanwhile to the next sender and wakes the rest
// of the batch. A batch of others' reservations is sent under the store's
// own timeout, not the caller's context: one caller that goes away must
// not fail the others.
func (s *Redis) send(ctx context.Context, batch []*joined) {
	if len(batch) == 1 {
		_ = s.run(ctx, batch[0].calls)
	} else {
		var cs []*call
		for _, j := range batch {
			cs = append(cs, j.calls...)
		}
		timeout := s.timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		_ = s.run(bctx, cs)
		cancel()
	}
	t := &s.together
	t.mu.Lock()
	next := t.queue
	t.queue = nil
	t.busy = len(next) > 0
	t.mu.Unlock()
	if len(next) > 0 {
		next[0].turn <- next
	}
	for _, j := range batch[1:] {
		j.turn <- nil
	}
}

// callsErr is the first error among cs.
func callsErr(cs []*call) error {
	for _, x := range cs {
		if x.err != nil {
			return x.err
		}
	}
	return nil
}
