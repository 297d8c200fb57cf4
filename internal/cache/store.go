package cache

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrMiss is a Get that found no live entry.
var ErrMiss = errors.New("cache miss")

// Store keeps encoded entries by key.
type Store interface {
	// Get returns the entry under key, or ErrMiss.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set keeps val under key for ttl.
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// Purge deletes the entries whose keys match the glob pattern and
	// returns how many it deleted.
	Purge(ctx context.Context, pattern string) (int, error)
}

// Memory is a Store in process memory, for one pod: entries expire by the
// clock and the oldest go first once MaxBytes is reached.
type Memory struct {
	now      func() time.Time
	maxBytes int

	mu      sync.Mutex
	entries map[string]memEntry
	order   []string // keys in the order they were set; may hold stale ones
	bytes   int
}

type memEntry struct {
	val     []byte
	expires time.Time
}

// NewMemory returns a Memory holding at most maxBytes of entries (0: 64
// MiB); now nil is time.Now.
func NewMemory(maxBytes int, now func() time.Time) *Memory {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, maxBytes: maxBytes, entries: map[string]memEntry{}}
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return nil, ErrMiss
	}
	if !m.now().Before(e.expires) {
		m.drop(key)
		return nil, ErrMiss
	}
	return e.val, nil
}

// Set implements Store.
func (m *Memory) Set(_ context.Context, key string, val []byte, ttl time.Duration) error {
	if len(val) > m.maxBytes {
		return nil // never kept: it would evict everything else
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop(key)
	m.entries[key] = memEntry{val: val, expires: m.now().Add(ttl)}
	m.order = append(m.order, key)
	m.bytes += len(val)
	for m.bytes > m.maxBytes && len(m.order) > 0 {
		k := m.order[0]
		m.order = m.order[1:]
		if k != key {
			m.drop(k)
		}
	}
	if len(m.order) > 2*len(m.entries)+64 {
		m.compact()
	}
	return nil
}

// Purge implements Store.
func (m *Memory) Purge(_ context.Context, pattern string) (int, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return 0, fmt.Errorf("purge %q: %w", pattern, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.entries {
		if ok, _ := path.Match(pattern, k); ok {
			m.drop(k)
			n++
		}
	}
	m.compact()
	return n, nil
}

func (m *Memory) drop(key string) {
	if e, ok := m.entries[key]; ok {
		m.bytes -= len(e.val)
		delete(m.entries, key)
	}
}

// compact drops the keys of order that no longer name an entry, keeping
// one mention (the last) of each.
func (m *Memory) compact() {
	seen := make(map[string]bool, len(m.entries))
	kept := m.order[:0]
	for i := len(m.order) - 1; i >= 0; i-- {
		k := m.order[i]
		if _, ok := m.entries[k]; ok && !seen[k] {
			seen[k] = true
			kept = append(kept, k)
		}
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	m.order = kept
}

// Redis is a Store in Redis (or Valkey), shared by every pod: one GET per
// lookup, one SET with an expiry per fill.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

// NewRedis returns a Store on client whose keys all start with prefix
// (keys of tests that share a server stay apart).
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := r.client.Get(ctx, r.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrMiss
	}
	if err != nil {
		return nil, fmt.Errorf("get cache entry: %w", err)
	}
	return b, nil
}

// Set implements Store.
func (r *Redis) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if err := r.client.Set(ctx, r.prefix+key, val, ttl).Err(); err != nil {
		return fmt.Errorf("set cache entry: %w", err)
	}
	return nil
}

// Purge implements Store: it scans for the pattern (on every master of a
// cluster) and unlinks what it finds, a batch at a time.
func (r *Redis) Purge(ctx context.Context, pattern string) (int, error) {
	var mu sync.Mutex
	total := 0
	purge := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, r.prefix+pattern, 500).Iterator()
		n := 0
		for iter.Next(ctx) {
			// One key at a time: in a cluster the keys of a batch may
			// hash to different slots.
			d, err := c.Unlink(ctx, iter.Val()).Result()
			if err != nil {
				return err
			}
			n += int(d)
		}
		mu.Lock()
		total += n
		mu.Unlock()
		return iter.Err()
	}
	var err error
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return purge(ctx, c) })
	} else {
		err = purge(ctx, r.client)
	}
	if err != nil {
		return total, fmt.Errorf("purge cache entries: %w", err)
	}
	return total, nil
}
