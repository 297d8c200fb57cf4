// Package backoff says how long to wait before the next try after a run of
// failures — exponential from a base, capped, with jitter — and waits it out
// unless a context ends first. The retry loops of the breaker, the loader,
// the usage writer and the capture writer use it, so that every loop backs
// off the same way. It holds no state: the caller counts its failures.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Jitter is how much of a delay is random. Many pods that failed together
// (Postgres went away) should not all come back in the same instant.
type Jitter uint8

const (
	// NoJitter waits exactly the delay: for periods that are not
	// retries of many clients (a breaker's open period).
	NoJitter Jitter = iota
	// Equal waits between half the delay and the whole of it.
	Equal
	// Extra waits between the delay and half as long again.
	Extra
)

// Policy is an exponential backoff: Base after the first failure, doubling
// with each further one, never past Max.
type Policy struct {
	Base   time.Duration // delay after the first failure
	Max    time.Duration // cap of every delay, the first included; 0: no cap
	Jitter Jitter
}

// Delay is the delay after n consecutive failures, before jitter: Base
// doubled n-1 times, capped at Max. An n below 1 counts as 1.
func (p Policy) Delay(n int) time.Duration {
	d := p.Base
	for i := 1; i < n; i++ {
		if d <= 0 || p.Max > 0 && d >= p.Max || d > maxDuration/2 {
			break
		}
		d *= 2
	}
	if p.Max > 0 {
		d = min(d, p.Max)
	}
	return d
}

const maxDuration = time.Duration(1<<63 - 1)

// Next is the wait after n consecutive failures: Delay(n) with the policy's
// jitter.
func (p Policy) Next(n int) time.Duration {
	d := p.Delay(n)
	if d <= 0 {
		return 0
	}
	switch p.Jitter {
	case Equal:
		return d/2 + rand.N(d/2+1)
	case Extra:
		return d + rand.N(d/2+1)
	}
	return d
}

// Wait waits Next(n), or until ctx ends; it reports whether it waited the
// whole time.
func (p Policy) Wait(ctx context.Context, n int) bool {
	return Sleep(ctx, p.Next(n))
}

// Sleep waits d, or until ctx ends; it reports whether it waited the whole
// time (false: ctx ended).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
