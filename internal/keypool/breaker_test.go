package keypool

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ref(n byte, v int) KeyRef { return KeyRef{ID: uuid.UUID{n}, Version: v} }

func mustAcquire(t *testing.T, b Breakers, r KeyRef, now time.Time) Ticket {
	t.Helper()
	tk, ok := b.Acquire(r, now)
	if !ok {
		t.Fatalf("Acquire(%v) at +%v refused", r, now.Sub(t0))
	}
	return tk
}

func mustRefuse(t *testing.T, b Breakers, r KeyRef, now time.Time) {
	t.Helper()
	if b.Ready(r, now) {
		t.Fatalf("Ready(%v) at +%v, want held", r, now.Sub(t0))
	}
	if _, ok := b.Acquire(r, now); ok {
		t.Fatalf("Acquire(%v) at +%v succeeded, want refused", r, now.Sub(t0))
	}
}

func TestMemory_FailureOpensThenHalfOpenProbeCloses(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{})
	k := ref(1, 1)
	tk := mustAcquire(t, b, k, t0)
	b.Report(tk, Result{Outcome: OutcomeFailure, Reason: "500"}, t0)
	mustRefuse(t, b, k, t0.Add(999*time.Millisecond))

	// Backoff over: one probe at a time.
	at := t0.Add(time.Second)
	probe := mustAcquire(t, b, k, at)
	if !probe.Probe {
		t.Fatal("first attempt after the backoff is not a probe")
	}
	mustRefuse(t, b, k, at)
	if st := b.States(at); len(st) != 1 || st[0].State != StateHalfOpen || !st[0].Probing {
		t.Fatalf("States = %+v", st)
	}

	// The probe fails: open again, twice as long.
	b.Report(probe, Result{Outcome: OutcomeFailure, Reason: "timeout"}, at)
	mustRefuse(t, b, k, at.Add(1999*time.Millisecond))
	at = at.Add(2 * time.Second)
	probe = mustAcquire(t, b, k, at)
	b.Report(probe, Result{Outcome: OutcomeSuccess}, at)
	if tk := mustAcquire(t, b, k, at); tk.Probe {
		t.Fatal("closed breaker handed out a probe")
	}
	if st := b.States(at); len(st) != 0 {
		t.Fatalf("States after recovery = %+v", st)
	}
}

func TestMemory_BackoffDoublesToTheCap(t *testing.T) {
	t.Parallel()
	cfg := BreakerConfig{BaseBackoff: time.Second, MaxBackoff: 60 * time.Second}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60}
	for i, w := range want {
		if got := cfg.Backoff(i + 1); got != w*time.Second {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w*time.Second)
		}
	}
}

func TestMemory_StaleFailuresDoNotLengthenBackoff(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{})
	k := ref(2, 1)
	a1, a2 := mustAcquire(t, b, k, t0), mustAcquire(t, b, k, t0)
	b.Report(a1, Result{Outcome: OutcomeFailure}, t0)
	b.Report(a2, Result{Outcome: OutcomeFailure}, t0) // in flight when the breaker opened
	if !b.Ready(k, t0.Add(time.Second)) {
		t.Fatal("a second concurrent failure lengthened the backoff")
	}
}

func TestMemory_AuthFailureHoldsUntilSecretRotates(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{})
	k := ref(3, 1)
	b.Report(mustAcquire(t, b, k, t0), Result{Outcome: OutcomeAuth, Reason: "401"}, t0)
	mustRefuse(t, b, k, t0.Add(24*time.Hour))
	if st := b.States(t0); len(st) != 1 || st[0].State != StateAuthFailed || !st[0].Until.IsZero() {
		t.Fatalf("States = %+v", st)
	}
	rotated := ref(3, 2)
	if tk := mustAcquire(t, b, rotated, t0); tk.Probe {
		t.Fatal("a rotated secret did not start closed")
	}
}

func TestMemory_RateLimits(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{DefaultRetryAfter: 5 * time.Second})
	short, long, none := ref(4, 1), ref(5, 1), ref(6, 1)

	b.Report(mustAcquire(t, b, short, t0), Result{Outcome: OutcomeRateLimited, RetryAfter: time.Second}, t0)
	mustAcquire(t, b, short, t0) // ≤1s: move on without cooling the key

	b.Report(mustAcquire(t, b, long, t0), Result{Outcome: OutcomeRateLimited, RetryAfter: 30 * time.Second}, t0)
	mustRefuse(t, b, long, t0.Add(29*time.Second))
	if st := b.States(t0); len(st) != 1 || st[0].State != StateCooling {
		t.Fatalf("States = %+v", st)
	}
	if tk := mustAcquire(t, b, long, t0.Add(30*time.Second)); tk.Probe {
		t.Fatal("a cooled-down key needs no probe")
	}

	b.Report(mustAcquire(t, b, none, t0), Result{Outcome: OutcomeRateLimited}, t0)
	mustRefuse(t, b, none, t0.Add(4*time.Second))
	mustAcquire(t, b, none, t0.Add(5*time.Second))
}

func TestMemory_ProbeSlotFreedByNeutralOrTimeout(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{ProbeTimeout: time.Minute})
	k := ref(7, 1)
	b.Report(mustAcquire(t, b, k, t0), Result{Outcome: OutcomeFailure}, t0)
	at := t0.Add(time.Second)
	p := mustAcquire(t, b, k, at)
	b.Report(p, Result{Outcome: OutcomeNeutral}, at) // the caller went away
	p = mustAcquire(t, b, k, at)
	if !p.Probe {
		t.Fatal("not a probe")
	}
	// Never reported: the slot frees itself after ProbeTimeout.
	mustRefuse(t, b, k, at.Add(59*time.Second))
	if p2 := mustAcquire(t, b, k, at.Add(time.Minute)); !p2.Probe {
		t.Fatal("not a probe")
	}
}
