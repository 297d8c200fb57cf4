// Package poll is the one way a test waits for something another goroutine
// or process makes true: it checks a condition, quickly at first and then
// every 10ms, until it holds or a deadline passes and the test fails. Tests
// never sleep a fixed time hoping the work is done. Only tests import it.
package poll

import (
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/backoff"
)

// The pause between checks: 1ms, doubling to 10ms, so a quick condition is
// seen at once and a slow one costs little.
const firstPause, longestPause = time.Millisecond, 10 * time.Millisecond

// Until checks cond until it holds and returns how long that took, or fails
// t, naming what it waited for, once within has passed.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	pause := backoff.Policy{Base: firstPause, Max: longestPause}
	start := time.Now()
	for n := 1; !cond(); n++ {
		if time.Since(start) > within {
			t.Fatalf("timed out after %s waiting until %s", within, what)
		}
		time.Sleep(pause.Delay(n)) // a pause between checks, with a deadline
	}
	return time.Since(start)
}
