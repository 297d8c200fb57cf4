package controlapi

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// Every hold the proxy honours keeps the key out of an explain too, so the
// explain says what the proxy would do; a breaker whose time is up, or one
// that is closed or half open, holds nothing.
func TestHeldKeys_EveryHoldTheProxyHonours(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Minute), now.Add(-time.Minute)
	states := []struct {
		state string
		retry time.Time
		held  bool
	}{
		{"open", later, true},
		{"cooling", later, true},
		{"auth_failed", later, true},
		{"quota_exhausted", later, true},
		{"open", time.Time{}, true},
		{"open", earlier, false},
		{"auth_failed", earlier, false},
		{"half_open", later, false},
		{"closed", time.Time{}, false},
	}
	var in []BreakerState
	want := map[uuid.UUID]bool{}
	for _, s := range states {
		id := uuid.New()
		in = append(in, BreakerState{HostKeyID: id, SecretVersion: 1, State: s.state, RetryAt: s.retry})
		want[id] = s.held
	}
	srv := &Server{cfg: Config{Breakers: func() []BreakerState { return in }}}
	got := map[uuid.UUID]bool{}
	for _, h := range srv.heldKeys(now) {
		got[h.HostKeyID] = true
	}
	for i, s := range states {
		if id := in[i].HostKeyID; got[id] != want[id] {
			t.Errorf("%s retry %v: held = %v, want %v", s.state, s.retry, got[id], want[id])
		}
	}
}
