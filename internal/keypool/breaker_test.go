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
	return mustAcquireFor(t, b, r, "", now)
}

func mustAcquireFor(t *testing.T, b Breakers, r KeyRef, model string, now time.Time) Ticket {
	t.Helper()
	tk, ok := b.Acquire(r, model, now)
	if !ok {
		t.Fatalf("Acquire(%v, %q) at +%v refused", r, model, now.Sub(t0))
	}
	return tk
}

func mustRefuse(t *testing.T, b Breakers, r KeyRef, now time.Time) {
	t.Helper()
	mustRefuseFor(t, b, r, "", now)
}

func mustRefuseFor(t *testing.T, b Breakers, r KeyRef, model string, now time.Time) {
	t.Helper()
	if b.Ready(r, model, now) {
		t.Fatalf("Ready(%v, %q) at +%v, want held", r, model, now.Sub(t0))
	}
	if _, ok := b.Acquire(r, model, now); ok {
		t.Fatalf("Acquire(%v, %q) at +%v succeeded, want refused", r, model, now.Sub(t0))
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
	if !b.Ready(k, "", t0.Add(time.Second)) {
		t.Fatal("a second concurrent failure lengthened the backoff")
	}
}

func TestMemory_AuthFailureReprobedWithCappedBackoff(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{HoldBackoff: 30 * time.Second, MaxHoldBackoff: 10 * time.Minute})
	k := ref(3, 1)
	b.Report(mustAcquire(t, b, k, t0), Result{Outcome: OutcomeAuth, Reason: "401"}, t0)
	mustRefuse(t, b, k, t0.Add(29*time.Second))
	if st := b.States(t0); len(st) != 1 || st[0].State != StateAuthFailed || !st[0].Until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("States = %+v", st)
	}
	// A rotated secret is fresh at once.
	if tk := mustAcquire(t, b, ref(3, 2), t0); tk.Probe {
		t.Fatal("a rotated secret did not start closed")
	}
	// Each failed probe doubles the hold, up to the cap.
	at := t0.Add(30 * time.Second)
	for _, hold := range []time.Duration{60, 120, 240, 480, 600, 600} {
		p := mustAcquire(t, b, k, at)
		if !p.Probe {
			t.Fatal("the attempt after the hold is not a probe")
		}
		mustRefuse(t, b, k, at) // one probe at a time
		b.Report(p, Result{Outcome: OutcomeAuth, Reason: "401"}, at)
		mustRefuse(t, b, k, at.Add(hold*time.Second-time.Millisecond))
		at = at.Add(hold * time.Second)
	}
	// The key works again: the probe closes the hold.
	b.Report(mustAcquire(t, b, k, at), Result{Outcome: OutcomeSuccess}, at)
	if st := b.States(at); len(st) != 0 {
		t.Fatalf("States after recovery = %+v", st)
	}
}

func TestMemory_ScopesHoldWhatFailed(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{})
	k := ref(9, 1)
	// A model-level failure holds (key, model) only.
	tk := mustAcquireFor(t, b, k, "broken", t0)
	b.Report(tk, Result{Outcome: OutcomeFailure, Scope: ScopeModel, Reason: "500"}, t0)
	mustRefuseFor(t, b, k, "broken", t0)
	mustAcquireFor(t, b, k, "healthy", t0)
	mustAcquire(t, b, k, t0)
	st := b.States(t0)
	if len(st) != 1 || st[0].Scope != ScopeModel || st[0].Model != "broken" || st[0].State != StateOpen {
		t.Fatalf("States = %+v", st)
	}
	// A per-model 429 cools that model only.
	tk = mustAcquireFor(t, b, k, "busy", t0)
	b.Report(tk, Result{Outcome: OutcomeRateLimited, Scope: ScopeModel, RetryAfter: time.Minute}, t0)
	mustRefuseFor(t, b, k, "busy", t0.Add(59*time.Second))
	mustAcquireFor(t, b, k, "healthy", t0)
	// A key-level failure through any model holds every model.
	tk = mustAcquireFor(t, b, k, "healthy", t0)
	b.Report(tk, Result{Outcome: OutcomeQuota, Scope: ScopeKey, Reason: "429 insufficient_quota"}, t0)
	for _, m := range []string{"", "healthy", "other"} {
		mustRefuseFor(t, b, k, m, t0)
	}
	if st := b.States(t0); len(st) != 3 || st[0].Scope != ScopeKey || st[0].State != StateQuotaExhausted {
		t.Fatalf("States = %+v", st)
	}

	// Clearing one model leaves the rest; clearing the key clears all.
	if got, _ := b.Clear(t.Context(), k.ID, "broken", t0); len(got) != 1 || got[0].Model != "broken" {
		t.Fatalf("Clear(broken) = %+v", got)
	}
	if got, _ := b.Clear(t.Context(), k.ID, "", t0); len(got) != 2 {
		t.Fatalf("Clear(key) = %+v", got)
	}
	mustAcquireFor(t, b, k, "busy", t0)
	if st := b.States(t0); len(st) != 0 {
		t.Fatalf("States after clear = %+v", st)
	}
}

func TestMemory_HalfOpenModelAdmitsOneProbe(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{})
	k := ref(10, 1)
	b.Report(mustAcquireFor(t, b, k, "m", t0), Result{Outcome: OutcomeFailure, Scope: ScopeModel}, t0)
	at := t0.Add(time.Second)
	p := mustAcquireFor(t, b, k, "m", at)
	if !p.ModelProbe || p.Probe {
		t.Fatalf("ticket %+v, want the model's probe", p)
	}
	mustRefuseFor(t, b, k, "m", at)  // the second caller for m goes elsewhere
	mustAcquireFor(t, b, k, "n", at) // other models are not waiting on it
	// A key-level failure of the probe holds the key and frees the model's slot.
	b.Report(p, Result{Outcome: OutcomeFailure, Scope: ScopeKey, Reason: "connection refused"}, at)
	mustRefuseFor(t, b, k, "n", at)
	at = at.Add(time.Second)
	p = mustAcquireFor(t, b, k, "m", at)
	if !p.Probe || !p.ModelProbe {
		t.Fatalf("ticket %+v, want both probes", p)
	}
	b.Report(p, Result{Outcome: OutcomeSuccess}, at)
	if st := b.States(at); len(st) != 0 {
		t.Fatalf("States = %+v", st)
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

// Server errors and network failures open a breaker only when they are the
// threshold-th in a row; a success between forgets the count, and a
// definite failure still opens it at once.
func TestMemory_BreakersOpenOnEvidence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		results []Result // reported in order at t0
		held    bool
	}{
		{"one network blip", []Result{{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceNetwork}}, false},
		{"four 500s", repeat(4, Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceServer}), false},
		{"five 500s", repeat(5, Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceServer}), true},
		{"five resets", repeat(5, Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceNetwork}), true},
		{"a success between", append(append(repeat(4, Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceServer}),
			Result{Outcome: OutcomeSuccess}), repeat(4, Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceServer})...), false},
		{"a model not found", []Result{{Outcome: OutcomeFailure, Scope: ScopeModel, Reason: "404 model not found"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewMemory(BreakerConfig{})
			k := ref(20, 1)
			for _, r := range tt.results {
				b.Report(mustAcquireFor(t, b, k, "m", t0), r, t0)
			}
			if held := !b.Ready(k, "m", t0); held != tt.held {
				t.Fatalf("held = %v, want %v; states %+v", held, tt.held, b.States(t0))
			}
			if !b.Ready(k, "", t0) || !b.Ready(k, "other", t0) {
				t.Fatal("model-level failures held the key")
			}
			if st := b.States(t0); tt.held != (len(st) == 1) {
				t.Fatalf("States = %+v (a breaker still counting is closed and not listed)", st)
			}
		})
	}
}

func TestMemory_ThresholdsConfigurable(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{ServerFailures: 2, NetworkFailures: 1})
	k := ref(21, 1)
	b.Report(mustAcquireFor(t, b, k, "m", t0), Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceNetwork}, t0)
	mustRefuseFor(t, b, k, "m", t0)
	b.Report(mustAcquireFor(t, b, k, "n", t0), Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceServer}, t0)
	mustAcquireFor(t, b, k, "n", t0)
	b.Report(mustAcquireFor(t, b, k, "n", t0), Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceServer}, t0)
	mustRefuseFor(t, b, k, "n", t0)
}

// A 401/403 holds (key, model) only; a second model refused on the same key
// within the window shows the key bad and holds it for every model; one
// refused after the window does not.
func TestMemory_AuthHoldsTheModelThenTheKeyOnEvidence(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{AuthWindow: time.Minute})
	k := ref(22, 1)
	auth := Result{Outcome: OutcomeAuth, Scope: ScopeModel, Reason: "401"}
	b.Report(mustAcquireFor(t, b, k, "no-access", t0), auth, t0)
	mustRefuseFor(t, b, k, "no-access", t0)
	mustAcquireFor(t, b, k, "healthy", t0)
	if st := b.States(t0); len(st) != 1 || st[0].Scope != ScopeModel || st[0].State != StateAuthFailed {
		t.Fatalf("States = %+v", st)
	}

	// After the window: still a model's own trouble.
	late := t0.Add(61 * time.Second)
	b.Report(mustAcquireFor(t, b, k, "other", late), auth, late)
	mustAcquireFor(t, b, k, "healthy", late)

	// Within the window of "other": the key itself is held.
	at := late.Add(10 * time.Second)
	b.Report(mustAcquireFor(t, b, k, "third", at), auth, at)
	for _, m := range []string{"", "healthy"} {
		mustRefuseFor(t, b, k, m, at)
	}
	if st := b.States(at); len(st) == 0 || st[0].Scope != ScopeKey || st[0].State != StateAuthFailed || st[0].LastReason != "401 on two models" {
		t.Fatalf("States = %+v", st)
	}
}

// Panicable lets panic mode try a key held by open breakers, and says when
// it last failed; never one cooling down or held for auth or quota.
func TestMemory_Panicable(t *testing.T) {
	t.Parallel()
	b := NewMemory(BreakerConfig{})
	k := ref(23, 1)
	if at, ok := b.Panicable(k, "m", t0); !ok || !at.IsZero() {
		t.Fatalf("Panicable of a closed key = %v, %v", at, ok)
	}
	b.Report(mustAcquireFor(t, b, k, "m", t0), Result{Outcome: OutcomeFailure, Scope: ScopeModel}, t0)
	b.Report(mustAcquireFor(t, b, k, "", t0.Add(100*time.Millisecond)), Result{Outcome: OutcomeFailure, Scope: ScopeKey}, t0.Add(100*time.Millisecond))
	if at, ok := b.Panicable(k, "m", t0.Add(200*time.Millisecond)); !ok || !at.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("Panicable = %v, %v, want the key's later failure", at, ok)
	}
	for name, r := range map[string]Result{
		"cooling": {Outcome: OutcomeRateLimited, Scope: ScopeModel, RetryAfter: time.Minute},
		"auth":    {Outcome: OutcomeAuth, Scope: ScopeModel},
		"quota":   {Outcome: OutcomeQuota, Scope: ScopeKey},
	} {
		k := ref(24, 1)
		b := NewMemory(BreakerConfig{})
		b.Report(mustAcquireFor(t, b, k, "m", t0), r, t0)
		if _, ok := b.Panicable(k, "m", t0); ok {
			t.Errorf("%s: panic mode may try it", name)
		}
	}
}

func repeat(n int, r Result) []Result {
	out := make([]Result, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// A ticket's Thresholds (its host's own) override the process settings for
// that attempt; a zero field keeps the setting.
func TestMemory_TicketThresholdsOverrideTheConfig(t *testing.T) {
	t.Parallel()
	server := Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceServer}
	network := Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceNetwork}
	tests := []struct {
		name     string
		th       Thresholds
		failures []Result
		held     bool
	}{
		{"host at 1: one 500 holds", Thresholds{ServerFailures: 1}, []Result{server}, true},
		{"host at 1 for servers: one reset does not", Thresholds{ServerFailures: 1}, []Result{network}, false},
		{"host at 1 for networks: one reset holds", Thresholds{NetworkFailures: 1}, []Result{network}, true},
		{"host at 8: seven 500s do not", Thresholds{ServerFailures: 8}, repeat(7, server), false},
		{"host at 8: eight 500s hold", Thresholds{ServerFailures: 8}, repeat(8, server), true},
		{"default (5): four 500s do not", Thresholds{}, repeat(4, server), false},
		{"default (5): five 500s hold", Thresholds{}, repeat(5, server), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewMemory(BreakerConfig{})
			k := ref(22, 1)
			for _, r := range tt.failures {
				tk := mustAcquireFor(t, b, k, "m", t0)
				tk.Thresholds = tt.th
				b.Report(tk, r, t0)
			}
			if held := !b.Ready(k, "m", t0); held != tt.held {
				t.Fatalf("held = %v, want %v; states %+v", held, tt.held, b.States(t0))
			}
		})
	}
}
