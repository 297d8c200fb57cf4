package keypool

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
)

// Pool picks the host key for each attempt in the order a policy's
// strategy gives, skipping keys its breakers hold back. The selection
// state (round-robin cursors, last-use times) is per process: sharing it
// between pods would buy little.
type Pool struct {
	breakers Breakers

	mu   sync.RWMutex
	next map[snapshot.ID]*atomic.Uint64 // round-robin cursor per host
	used map[snapshot.ID]*atomic.Int64  // last pick per host key, unix ns
}

// NewPool returns a pool over the given breakers.
func NewPool(b Breakers) *Pool {
	return &Pool{
		breakers: b,
		next:     make(map[snapshot.ID]*atomic.Uint64),
		used:     make(map[snapshot.ID]*atomic.Int64),
	}
}

// Breakers returns the pool's breakers.
func (p *Pool) Breakers() Breakers { return p.breakers }

// Pick chooses a key among keys (a host's enabled, usable, granted keys in
// position order) that is not in tried, and acquires it from the breakers
// for the upstream model. It returns false when none can be had.
func (p *Pool) Pick(strategy snapshot.KeyStrategy, keys []*snapshot.HostKey, model string, tried []snapshot.ID, now time.Time) (*snapshot.HostKey, Ticket, bool) {
	n := len(keys)
	if n == 0 {
		return nil, Ticket{}, false
	}
	switch strategy {
	case snapshot.StrategyRoundRobin:
		start := int(p.cursor(keys[0].HostID).Add(1)-1) % n
		for j := range n {
			k := keys[(start+j)%n]
			if t, ok := p.try(k, model, tried, now); ok {
				return k, t, true
			}
		}
	case snapshot.StrategyLeastRecentlyUsed:
		var passed uint64 // keys already looked at, for the first 64
		for range min(n, 64) {
			best, bestAt := -1, int64(0)
			for i, k := range keys[:min(n, 64)] {
				if passed&(1<<i) != 0 {
					continue
				}
				if at := p.lastUse(k.ID); best < 0 || at < bestAt {
					best, bestAt = i, at
				}
			}
			passed |= 1 << best
			if t, ok := p.try(keys[best], model, tried, now); ok {
				p.markUsed(keys[best].ID, now)
				return keys[best], t, true
			}
		}
	default: // prioritized
		for _, k := range keys {
			if t, ok := p.try(k, model, tried, now); ok {
				return k, t, true
			}
		}
	}
	return nil, Ticket{}, false
}

// Panic chooses, when the breakers hold every key of every candidate, the
// first of keys (ordered least recently failed first) not in tried,
// without asking the breakers: the attempt counts as a probe of the key's
// and the model's breakers, so a success closes them and a failure
// lengthens their backoff.
func (p *Pool) Panic(keys []*snapshot.HostKey, model string, tried []snapshot.ID) (*snapshot.HostKey, Ticket, bool) {
	for _, k := range keys {
		if !slices.Contains(tried, k.ID) {
			return k, Ticket{Ref: Ref(k), Model: model, Probe: true, ModelProbe: true}, true
		}
	}
	return nil, Ticket{}, false
}

func (p *Pool) try(k *snapshot.HostKey, model string, tried []snapshot.ID, now time.Time) (Ticket, bool) {
	if slices.Contains(tried, k.ID) {
		return Ticket{}, false
	}
	return p.breakers.Acquire(Ref(k), model, now)
}

func (p *Pool) cursor(host snapshot.ID) *atomic.Uint64 {
	p.mu.RLock()
	c := p.next[host]
	p.mu.RUnlock()
	if c != nil {
		return c
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c = p.next[host]; c == nil {
		c = new(atomic.Uint64)
		p.next[host] = c
	}
	return c
}

func (p *Pool) lastUse(key snapshot.ID) int64 {
	p.mu.RLock()
	c := p.used[key]
	p.mu.RUnlock()
	if c == nil {
		return 0
	}
	return c.Load()
}

func (p *Pool) markUsed(key snapshot.ID, now time.Time) {
	p.mu.RLock()
	c := p.used[key]
	p.mu.RUnlock()
	if c == nil {
		p.mu.Lock()
		if c = p.used[key]; c == nil {
			c = new(atomic.Int64)
			p.used[key] = c
		}
		p.mu.Unlock()
	}
	c.Store(now.UnixNano())
}
