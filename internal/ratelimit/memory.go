package ratelimit

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// Memory is the in-process Store: correct for one pod, and the local
// fallback of a Redis-backed limiter whose Redis is down. Its semantics
// are those of the Redis scripts, line for line.
type Memory struct {
	mu      sync.Mutex
	windows map[string]*wlog
	leases  map[string]*leaseSet
	spacing map[string]int64 // theoretical arrival time (ms)
	periods map[string]*period
	ops     int // since the last sweep
}

type wentry struct{ exp, w int64 }

// wlog is a sliding log: entries in expiry order and their sum.
type wlog struct {
	entries []wentry
	sum     int64
}

type period struct{ v, expireAt int64 }

// leaseSet is a concurrency counter's live leases: their expiries by id,
// and a min-heap of (expiry, id) whose stale entries (renewed or released
// leases) are dropped when they surface.
type leaseSet struct {
	exp  map[string]int64
	heap []leaseAt
}

type leaseAt struct {
	exp int64
	id  string
}

func (z *leaseSet) put(id string, exp int64) {
	z.exp[id] = exp
	z.heap = append(z.heap, leaseAt{exp, id})
	for i := len(z.heap) - 1; i > 0; {
		p := (i - 1) / 2
		if z.heap[p].exp <= z.heap[i].exp {
			break
		}
		z.heap[p], z.heap[i] = z.heap[i], z.heap[p]
		i = p
	}
}

func (z *leaseSet) pop() {
	n := len(z.heap) - 1
	z.heap[0] = z.heap[n]
	z.heap[n] = leaseAt{}
	z.heap = z.heap[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && z.heap[l].exp < z.heap[m].exp {
			m = l
		}
		if r < n && z.heap[r].exp < z.heap[m].exp {
			m = r
		}
		if m == i {
			return
		}
		z.heap[i], z.heap[m] = z.heap[m], z.heap[i]
		i = m
	}
}

// compact rebuilds the heap when released leases make up most of it.
func (z *leaseSet) compact() {
	if len(z.heap) < 64 || len(z.heap) < 4*len(z.exp) {
		return
	}
	z.heap = z.heap[:0]
	for id, exp := range z.exp {
		z.heap = append(z.heap, leaseAt{exp, id})
	}
	slices.SortFunc(z.heap, func(a, b leaseAt) int { return cmp.Compare(a.exp, b.exp) }) // a sorted slice is a heap
}

// evict drops expired leases and stale heap entries; afterwards the heap's
// top, if any, is the live lease that expires first.
func (z *leaseSet) evict(now int64) {
	for len(z.heap) > 0 {
		top := z.heap[0]
		if exp, ok := z.exp[top.id]; ok && exp == top.exp {
			if exp > now {
				return
			}
			delete(z.exp, top.id)
		}
		z.pop()
	}
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-process store.
func NewMemory() *Memory {
	return &Memory{
		windows: make(map[string]*wlog),
		leases:  make(map[string]*leaseSet),
		spacing: make(map[string]int64),
		periods: make(map[string]*period),
	}
}

// Reserve implements Store.
func (m *Memory) Reserve(_ context.Context, cs []Counter, now time.Time) (Verdict, error) {
	return m.reserve(cs, now.UnixMilli(), false), nil
}

// Peek implements Store.
func (m *Memory) Peek(_ context.Context, cs []Counter, now time.Time) (Verdict, error) {
	return m.reserve(cs, now.UnixMilli(), true), nil
}

func (m *Memory) reserve(cs []Counter, now int64, peek bool) Verdict {
	v := Verdict{OK: true, Worst: -1, At: now, Used: make([]int64, len(cs)), Reset: make([]time.Duration, len(cs))}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	var worst int64 // ms; -2 never
	for i := range cs {
		c := &cs[i]
		var wait int64
		switch c.Kind {
		case KindWindow:
			l := m.window(c.Key, now)
			v.Used[i] = l.sum
			if n := len(l.entries); n > 0 {
				v.Reset[i] = time.Duration(l.entries[n-1].exp-now) * time.Millisecond
			}
			switch {
			case c.Amount > c.Limit:
				wait = -2
			case l.sum+c.Amount > c.Limit:
				need, acc := l.sum+c.Amount-c.Limit, int64(0)
				wait = ms(c.Window)
				for _, e := range l.entries {
					if acc += e.w; acc >= need {
						wait = e.exp - now
						break
					}
				}
			}
		case KindLease:
			z := m.leaseSet(c.Key, now)
			v.Used[i] = int64(len(z.exp))
			if v.Used[i] >= c.Limit {
				if c.Limit < 1 {
					wait = -2
					break
				}
				wait = max(1, z.heap[0].exp-now)
			}
		case KindSpacing:
			if tat := m.spacing[c.Key]; tat > now {
				wait = tat - now
				v.Reset[i] = time.Duration(wait) * time.Millisecond
			}
		case KindPeriod:
			end := c.End.UnixMilli()
			p := m.periods[c.Key]
			if p != nil && p.expireAt <= now {
				delete(m.periods, c.Key)
				p = nil
			}
			if p != nil {
				v.Used[i] = p.v
			}
			v.Reset[i] = time.Duration(end-now) * time.Millisecond
			switch {
			case c.Amount > c.Limit:
				wait = -2
			case v.Used[i]+c.Amount > c.Limit:
				wait = max(1, end-now)
			}
		}
		switch {
		case wait == 0 || worst == -2:
		case wait == -2 || wait > worst:
			worst, v.Worst = wait, i
		}
	}
	if worst != 0 {
		v.OK = false
		v.Wait = time.Duration(worst) * time.Millisecond
		if worst == -2 {
			v.Wait = Never
		}
		return v
	}
	if peek {
		return v
	}
	for i := range cs {
		c := &cs[i]
		switch c.Kind {
		case KindWindow:
			m.add(c.Key, expiry(now, ms(c.Window)), c.Amount)
		case KindLease:
			m.leaseSet(c.Key, now).put(c.Lease, now+ms(c.Window))
		case KindSpacing:
			m.spacing[c.Key] = max(m.spacing[c.Key], now) + ms(c.Window)
		case KindPeriod:
			if c.Amount > 0 {
				p := m.periods[c.Key]
				if p == nil {
					p = &period{}
					m.periods[c.Key] = p
				}
				p.v += c.Amount
				p.expireAt = c.End.UnixMilli() + periodGrace
			}
		}
	}
	return v
}

// periodGrace keeps a period's spend readable for a day after it ended.
const periodGrace = 24 * 3600 * 1000

// window returns the log of key with expired entries dropped.
func (m *Memory) window(key string, now int64) *wlog {
	l := m.windows[key]
	if l == nil {
		l = &wlog{}
		m.windows[key] = l
	}
	n := 0
	for n < len(l.entries) && l.entries[n].exp <= now {
		l.sum -= l.entries[n].w
		n++
	}
	if n > 0 {
		l.entries = append(l.entries[:0], l.entries[n:]...)
	}
	if len(l.entries) == 0 || l.sum < 0 {
		l.sum = 0
	}
	return l
}

// add puts amount into the entry expiring at exp, merging with the last
// entry when it is the same bucket.
func (m *Memory) add(key string, exp, amount int64) {
	if amount <= 0 {
		return
	}
	l := m.windows[key]
	if l == nil {
		l = &wlog{}
		m.windows[key] = l
	}
	if n := len(l.entries); n > 0 && l.entries[n-1].exp == exp {
		l.entries[n-1].w += amount
	} else if n > 0 && l.entries[n-1].exp > exp {
		// Out of order (a late settle): join the last entry, which
		// expires later — conservative.
		l.entries[n-1].w += amount
	} else {
		l.entries = append(l.entries, wentry{exp: exp, w: amount})
	}
	l.sum += amount
}

// leaseSet returns key's leases with the expired ones dropped.
func (m *Memory) leaseSet(key string, now int64) *leaseSet {
	z := m.leases[key]
	if z == nil {
		z = &leaseSet{exp: make(map[string]int64)}
		m.leases[key] = z
	}
	z.evict(now)
	return z
}

// Settle implements Store. A large batch (a settle goroutine's whole
// backlog) is applied settleChunk adjustments at a time, so reservations
// waiting for the lock wait for one chunk, not the whole batch.
func (m *Memory) Settle(_ context.Context, adj []Adjust, now time.Time) error {
	t := now.UnixMilli()
	for len(adj) > 0 {
		n := min(len(adj), settleChunk)
		m.settle(adj[:n], t)
		adj = adj[n:]
	}
	return nil
}

func (m *Memory) settle(adj []Adjust, t int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range adj {
		a := &adj[i]
		switch a.Kind {
		case KindWindow:
			if a.Delta == 0 {
				continue
			}
			win := ms(a.Window)
			exp := expiry(a.At, win)
			l := m.window(a.Key, t)
			found := false
			if exp > t {
				for j := len(l.entries) - 1; j >= 0 && l.entries[j].exp >= exp; j-- {
					if e := &l.entries[j]; e.exp == exp {
						nw := max(0, e.w+a.Delta)
						l.sum += nw - e.w
						e.w = nw
						found = true
						break
					}
				}
			}
			if !found && a.Delta > 0 {
				m.add(a.Key, max(exp, expiry(t, win)), a.Delta)
			}
		case KindLease:
			if z := m.leases[a.Key]; z != nil {
				delete(z.exp, a.Lease)
				z.compact()
			}
		case KindSpacing:
			// Give the slot back if no later reservation took the next.
			if tat, ok := m.spacing[a.Key]; ok && tat == a.At {
				m.spacing[a.Key] = tat - ms(a.Window)
			}
		case KindPeriod:
			if a.Delta == 0 {
				continue
			}
			if p := m.periods[a.Key]; p != nil && p.expireAt > t {
				p.v = max(0, p.v+a.Delta)
			}
		}
	}
}

// Renew implements Store. The memory store is one pod's own.
func (m *Memory) Renew(_ context.Context, leases []Counter, _ string, ttl time.Duration, now time.Time) (int, error) {
	t := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range leases {
		if z := m.leases[c.Key]; z != nil {
			if exp, ok := z.exp[c.Lease]; ok && exp > t {
				z.put(c.Lease, t+ms(ttl))
			}
		}
	}
	return 1, nil
}

// sweep drops state that has fully expired, every 4096 operations, so
// keys that are never touched again do not pile up.
func (m *Memory) sweep(now int64) {
	if m.ops++; m.ops < 4096 {
		return
	}
	m.ops = 0
	for k, l := range m.windows {
		if n := len(l.entries); n == 0 || l.entries[n-1].exp <= now {
			delete(m.windows, k)
		}
	}
	for k := range m.leases {
		if len(m.leaseSet(k, now).exp) == 0 {
			delete(m.leases, k)
		}
	}
	for k, tat := range m.spacing {
		if tat <= now {
			delete(m.spacing, k)
		}
	}
	for k, p := range m.periods {
		if p.expireAt <= now {
			delete(m.periods, k)
		}
	}
}
