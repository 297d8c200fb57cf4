package backoff

import (
	"context"
	"testing"
	"time"
)

func TestPolicy_DelayDoublesToTheCap(t *testing.T) {
	t.Parallel()
	p := Policy{Base: time.Second, Max: time.Minute}
	for n, want := range map[int]time.Duration{
		-1: time.Second, 0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		6: 32 * time.Second, 7: time.Minute, 100: time.Minute, 1 << 30: time.Minute,
	} {
		if got := p.Delay(n); got != want {
			t.Errorf("Delay(%d) = %v, want %v", n, got, want)
		}
	}
	if got := (Policy{Base: time.Minute, Max: time.Second}).Delay(1); got != time.Second {
		t.Errorf("a cap below the base: %v, want the cap", got)
	}
	if got := (Policy{Base: time.Second}).Delay(1000); got <= 0 || got < time.Duration(1)<<62 {
		t.Errorf("no cap: Delay(1000) = %v, want the largest doubling that does not overflow", got)
	}
}

func TestPolicy_NextJitters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		jitter Jitter
		lo, hi time.Duration
	}{
		{NoJitter, 4 * time.Second, 4 * time.Second},
		{Equal, 2 * time.Second, 4 * time.Second},
		{Extra, 4 * time.Second, 6 * time.Second},
	} {
		p := Policy{Base: time.Second, Max: time.Minute, Jitter: c.jitter}
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.Next(3)
			if d < c.lo || d > c.hi {
				t.Fatalf("jitter %d: Next(3) = %v, want within [%v, %v]", c.jitter, d, c.lo, c.hi)
			}
			seen[d] = true
		}
		if random := len(seen) > 1; random != (c.jitter != NoJitter) {
			t.Errorf("jitter %d: %d distinct waits in 200", c.jitter, len(seen))
		}
	}
	if d := (Policy{Jitter: Equal}).Next(1 << 30); d != 0 {
		t.Errorf("a zero policy waits %v", d)
	}
}

func TestSleep_EndsWithTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep waited out an hour on a canceled context")
	}
	if time.Since(start) > time.Minute {
		t.Fatal("Sleep did not return when the context ended")
	}
	if !Sleep(t.Context(), time.Millisecond) {
		t.Fatal("Sleep gave up on a live context")
	}
	if !(Policy{Base: time.Millisecond, Max: time.Millisecond, Jitter: Equal}).Wait(t.Context(), 5) {
		t.Fatal("Wait gave up on a live context")
	}
}
