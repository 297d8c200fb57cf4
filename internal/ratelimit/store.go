package ratelimit

import (
	"context"
	"math"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
)

// Kind is how a counter counts.
type Kind uint8

// Counter kinds.
const (
	// KindWindow is a sliding window: the amounts reserved in the last Window
	// may not exceed Limit. Entries are kept in buckets of Window/1000
	// (at least 1 ms) and expire at the end of their bucket plus Window, so
	// an amount counts for at least Window: never more than Limit in any
	// window of that length.
	KindWindow Kind = iota + 1
	// KindLease is a concurrency cap: at most Limit live leases, each
	// expiring Window (its TTL) after it was taken or last renewed.
	KindLease
	// KindSpacing is a minimum interval of Window between two reservations
	// (a GCRA with no burst tolerance): the pacing of a host key.
	KindSpacing
	// KindPeriod is a fixed calendar period ending at End: the spend of a
	// budget may not exceed Limit.
	KindPeriod
)

// Never is the wait of a reservation that can never fit: it asks for more
// than the limit holds.
const Never = time.Duration(math.MaxInt64)

// Counter is one limit a reservation must fit in. Keys are relative; a
// store adds its own prefix.
type Counter struct {
	Kind Kind
	Key  string
	// Tag names the owner whose counters Redis keeps together (one Redis
	// Cluster slot): a policy, a host key, a budget. Key starts with it;
	// "" is the shared slot of the counters that name no owner.
	Tag    string
	Limit  int64
	Window time.Duration // KindWindow: the window; KindSpacing: the interval; KindLease: the TTL
	Amount int64         // what the request takes (a lease always takes 1)
	End    time.Time     // KindPeriod: when the period ends
	Lease  string        // KindLease: the lease's id

	// Meter says what Amount counts, for settling: a rate-limit meter, or
	// "" for a budget (micro-units of currency) and for spacing.
	Meter snapshot.Meter
}

// Verdict is a store's answer to a reservation.
type Verdict struct {
	OK bool
	// Wait is how long until the reservation would fit when it did not:
	// exact for windows, spacing and periods; for a lease an upper bound
	// (the oldest lease's expiry), since a release may come sooner. Never
	// when it cannot fit at all.
	Wait time.Duration
	// Worst is the index of the counter with the longest wait, -1 when OK.
	Worst int
	// At is the store's clock at the reservation, in Unix milliseconds;
	// settling needs it to find the window entries it wrote.
	At int64
	// AtOf is each counter's At when the counters were taken on several
	// Redis Cluster nodes, each by its own clock; nil: At for every one.
	AtOf []int64
	// Used and Reset describe each counter before this reservation: what
	// is taken, and how long until all of it is free again. On a
	// reservation that fits, Used is set and Reset may be empty.
	Used  []int64
	Reset []time.Duration
}

// Adjust corrects one counter of an earlier reservation once the request
// has ended: Delta is added to a window or period entry (actual minus
// estimate, never below zero); a lease is released. A spacing counter's
// slot is given back (At: the time the reservation set) if no later
// reservation took the next one: the undo of a reservation refused by
// counters on another Redis node.
type Adjust struct {
	Counter
	At    int64 // Verdict.At of the reservation
	Delta int64
}

// Store keeps counters. Redis shares them between pods; Memory keeps them
// in the process for one pod, with the same semantics. Both are safe for
// concurrent use.
type Store interface {
	// Reserve checks every counter at now and takes them all, or none.
	// Counters with Kind zero are skipped.
	Reserve(ctx context.Context, cs []Counter, now time.Time) (Verdict, error)
	// Peek is Reserve without taking anything: it reports Used and Reset.
	Peek(ctx context.Context, cs []Counter, now time.Time) (Verdict, error)
	// Settle applies adjustments.
	Settle(ctx context.Context, adj []Adjust, now time.Time) error
	// Renew extends live leases to ttl from now and reports this pod
	// alive as pod for ttl; it returns how many pods are alive.
	Renew(ctx context.Context, leases []Counter, pod string, ttl time.Duration, now time.Time) (pods int, err error)
}

// bucketMs is the bucket of a window: a thousandth of it, at least 1 ms.
func bucketMs(window int64) int64 { return max(1, window/1000) }

// expiry is when an amount reserved at at (ms) stops counting in a window:
// the end of its bucket plus the window.
func expiry(at, window int64) int64 {
	b := bucketMs(window)
	return (at+b-1)/b*b + window
}

func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }
