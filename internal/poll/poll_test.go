package poll

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil_ReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var checks atomic.Int32
	took := Until(t, 30*time.Second, "the third check", func() bool { return checks.Add(1) == 3 })
	if checks.Load() != 3 || took < 0 {
		t.Fatalf("checked %d times, took %s", checks.Load(), took)
	}
}

// fatalTB records Fatalf instead of ending the test, so the deadline can be
// checked.
type fatalTB struct {
	testing.TB
	failed string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func TestUntil_FailsAtTheDeadline(t *testing.T) {
	t.Parallel()
	f := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != any(f) {
				panic(r)
			}
		}()
		Until(f, 20*time.Millisecond, "never", func() bool { return false })
	}()
	if f.failed == "" {
		t.Fatal("Until returned on a condition that never holds")
	}
}
