package cache

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/redistest"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// storeContract holds a Store to its meaning: get what was set until it
// expires, purge by pattern.
func storeContract(t *testing.T, s Store, expire func(time.Duration)) {
	ctx := context.Background()
	if _, err := s.Get(ctx, "relay:rc:p1:x:project::a"); !errors.Is(err, ErrMiss) {
		t.Fatalf("empty store: %v", err)
	}
	for _, k := range []string{"relay:rc:p1:x:project::a", "relay:rc:p1:x:relay_key:k1:b", "relay:rc:p2:x:relay_key:k1:c"} {
		if err := s.Set(ctx, k, []byte("v-"+k), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := s.Get(ctx, "relay:rc:p1:x:project::a"); err != nil || string(v) != "v-relay:rc:p1:x:project::a" {
		t.Fatalf("get: %q, %v", v, err)
	}
	if n, err := s.Purge(ctx, "relay:rc:*:*:relay_key:k1:*"); err != nil || n != 2 {
		t.Fatalf("purge by key: %d, %v", n, err)
	}
	if _, err := s.Get(ctx, "relay:rc:p1:x:relay_key:k1:b"); !errors.Is(err, ErrMiss) {
		t.Errorf("purged entry: %v", err)
	}
	if _, err := s.Get(ctx, "relay:rc:p1:x:project::a"); err != nil {
		t.Errorf("an entry the pattern does not match went: %v", err)
	}
	if expire != nil {
		expire(2 * time.Second)
		if _, err := s.Get(ctx, "relay:rc:p1:x:project::a"); !errors.Is(err, ErrMiss) {
			t.Errorf("expired entry: %v", err)
		}
	}
}

func TestMemory_Contract(t *testing.T) {
	c := &testClock{t: time.Unix(1000, 0)}
	storeContract(t, NewMemory(0, c.now), c.advance)
}

func TestMemory_EvictsOldestPastMaxBytes(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(100, nil)
	for _, k := range []string{"a", "b", "c"} {
		_ = m.Set(ctx, k, make([]byte, 40), time.Hour)
	}
	if _, err := m.Get(ctx, "a"); !errors.Is(err, ErrMiss) {
		t.Error("the oldest entry stayed past max bytes")
	}
	for _, k := range []string{"b", "c"} {
		if _, err := m.Get(ctx, k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	_ = m.Set(ctx, "huge", make([]byte, 200), time.Hour)
	if _, err := m.Get(ctx, "b"); err != nil {
		t.Error("an entry larger than the store evicted the rest")
	}
	// Setting one key again and again keeps the order bounded.
	for range 1000 {
		_ = m.Set(ctx, "b", make([]byte, 10), time.Hour)
	}
	if len(m.order) > 200 {
		t.Errorf("order holds %d keys for %d entries", len(m.order), len(m.entries))
	}
}

func TestRedis_Contract(t *testing.T) {
	client := redistest.Client(t, redistest.URL(t))
	// Expiry is Redis's own: the contract's expiry step is Memory's only.
	storeContract(t, NewRedis(client, redistest.Prefix(t)), nil)
}
