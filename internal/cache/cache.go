package cache

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/snapshot"
)

// Entry is one cached answer.
type Entry struct {
	Response canonical.Response `json:"response"`
	// StoredAt is when the answer was kept; a hit's age is measured from it.
	StoredAt time.Time `json:"stored_at"`
	// BindingID is the binding that produced the answer, whose pricing
	// says what a hit saved.
	BindingID snapshot.ID `json:"binding_id"`
}

// Cache reads and fills entries in a Store, counting what it does.
type Cache struct {
	store Store
	sem   *Semantic
	now   func() time.Time
	// timeout bounds each Store call made on the request path.
	timeout time.Duration

	hits, misses, bypasses, fills, fillBytes, errs, tooLarge atomic.Int64
	// saved is what hits saved, in nano-units of currency (Saved).
	saved atomic.Int64
}

// Config wires a Cache.
type Config struct {
	// Store keeps entries; nil: a Memory of 64 MiB.
	Store Store
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Timeout bounds a lookup and a fill (0: 100ms); a slow store is a miss.
	Timeout time.Duration
	// Index keeps the semantic cache's entries; nil: a MemoryIndex of 64 MiB.
	Index Index
}

// New returns a Cache for cfg.
func New(cfg Config) *Cache {
	c := &Cache{store: cfg.Store, now: cfg.Now, timeout: cfg.Timeout}
	if c.now == nil {
		c.now = time.Now
	}
	if c.store == nil {
		c.store = NewMemory(0, c.now)
	}
	if c.timeout <= 0 {
		c.timeout = 100 * time.Millisecond
	}
	c.sem = NewSemantic(cfg.Index, c.now, c.timeout)
	return c
}

// Semantic is the semantic cache beside the exact one.
func (c *Cache) Semantic() *Semantic { return c.sem }

// Lookup returns the live entry under key. A store error counts as a miss
// (and an error): the request goes upstream.
func (c *Cache) Lookup(ctx context.Context, key string) (*Entry, bool) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	b, err := c.store.Get(ctx, key)
	if err != nil {
		if !errors.Is(err, ErrMiss) {
			c.errs.Add(1)
		}
		c.misses.Add(1)
		return nil, false
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		c.errs.Add(1)
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return &e, true
}

// Miss counts a lookup the caller skipped to refresh the entry.
func (c *Cache) Miss() { c.misses.Add(1) }

// TooLarge counts an answer that grew past its policy's maximum entry
// size before it could be encoded.
func (c *Cache) TooLarge() { c.tooLarge.Add(1) }

// Bypass counts a request that asked not to use the cache.
func (c *Cache) Bypass() { c.bypasses.Add(1) }

// Fill keeps e under key for ttl unless its encoding is larger than
// maxBytes; it reports whether it was kept.
func (c *Cache) Fill(ctx context.Context, key string, e *Entry, ttl time.Duration, maxBytes int) bool {
	if e.StoredAt.IsZero() {
		e.StoredAt = c.now()
	}
	b, err := json.Marshal(e)
	if err != nil {
		c.errs.Add(1)
		return false
	}
	if maxBytes > 0 && len(b) > maxBytes {
		c.tooLarge.Add(1)
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := c.store.Set(ctx, key, b, ttl); err != nil {
		c.errs.Add(1)
		return false
	}
	c.fills.Add(1)
	c.fillBytes.Add(int64(len(b)))
	return true
}

// Age is how long ago e was kept.
func (c *Cache) Age(e *Entry) time.Duration { return max(c.now().Sub(e.StoredAt), 0) }

// PurgePolicy deletes every entry of a policy, exact and semantic.
func (c *Cache) PurgePolicy(ctx context.Context, policy snapshot.ID) (int, error) {
	n, err := c.store.Purge(ctx, PolicyPattern(policy))
	if err != nil {
		return n, err
	}
	m, err := c.sem.PurgePolicy(ctx, policy)
	return n + m, err
}

// PurgeRelayKey deletes every entry scoped to one relay key (policies that
// narrow their cache to the relay key), exact and semantic.
func (c *Cache) PurgeRelayKey(ctx context.Context, key snapshot.ID) (int, error) {
	n, err := c.store.Purge(ctx, RelayKeyPattern(key))
	if err != nil {
		return n, err
	}
	m, err := c.sem.PurgeRelayKey(ctx, key)
	return n + m, err
}

// Stats are the cache's counters since start.
type Stats struct {
	Hits, Misses, Bypasses int64
	// Fills and FillBytes count the entries kept and their encoded size.
	Fills, FillBytes int64
	// TooLarge counts answers over their policy's maximum entry size.
	TooLarge int64
	// Errors counts store failures and undecodable entries.
	Errors int64
	// Saved is what hits saved: each cached answer's cost at the pricing
	// of the binding that produced it, in nano-units of currency.
	Saved int64
}

// Saved counts what one hit saved, in nano-units of currency.
func (c *Cache) Saved(nano int64) {
	if nano > 0 {
		c.saved.Add(nano)
	}
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Bypasses: c.bypasses.Load(),
		Fills: c.fills.Load(), FillBytes: c.fillBytes.Load(), TooLarge: c.tooLarge.Load(), Errors: c.errs.Load(), Saved: c.saved.Load(),
	}
}
