package routing

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
)

// Live keeps the live figures of each binding in this process: the
// moving average of its time to first byte and the requests it is
// serving. It is per pod by design: latency is what this pod sees, and the
// figures need no sharing to be useful. Safe for concurrent use.
type Live struct {
	// Alpha is the weight of a new observation in the moving average.
	alpha float64

	mu sync.RWMutex // guards m (the entries themselves are atomic)
	m  map[snapshot.ID]*liveBinding
}

type liveBinding struct {
	ttfb     atomic.Uint64 // float64 bits of the average in ns; 0: none yet
	inflight atomic.Int64
}

// DefaultAlpha weighs a new time to first byte at a fifth of the average.
const DefaultAlpha = 0.2

// NewLive returns empty figures; alpha <= 0 takes DefaultAlpha.
func NewLive(alpha float64) *Live {
	if alpha <= 0 || alpha > 1 {
		alpha = DefaultAlpha
	}
	return &Live{alpha: alpha, m: make(map[snapshot.ID]*liveBinding)}
}

func (l *Live) get(id snapshot.ID) *liveBinding {
	l.mu.RLock()
	b := l.m[id]
	l.mu.RUnlock()
	return b
}

func (l *Live) entry(id snapshot.ID) *liveBinding {
	if b := l.get(id); b != nil {
		return b
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[id]
	if b == nil {
		b = new(liveBinding)
		l.m[id] = b
	}
	return b
}

// Observe adds one time to first byte of the binding to its average.
func (l *Live) Observe(binding snapshot.ID, ttfb time.Duration) {
	b := l.entry(binding)
	x := float64(max(ttfb, 1))
	for {
		old := b.ttfb.Load()
		avg := x
		if old != 0 {
			f := math.Float64frombits(old)
			avg = f + l.alpha*(x-f)
		}
		if b.ttfb.CompareAndSwap(old, math.Float64bits(avg)) {
			return
		}
	}
}

// Begin counts a request the binding starts serving; End uncounts it.
func (l *Live) Begin(binding snapshot.ID) { l.entry(binding).inflight.Add(1) }

// End uncounts a request Begin counted.
func (l *Live) End(binding snapshot.ID) { l.entry(binding).inflight.Add(-1) }

// TTFB implements Stats.
func (l *Live) TTFB(binding snapshot.ID) (time.Duration, bool) {
	b := l.get(binding)
	if b == nil {
		return 0, false
	}
	v := b.ttfb.Load()
	if v == 0 {
		return 0, false
	}
	return time.Duration(math.Float64frombits(v)), true
}

// InFlight implements Stats.
func (l *Live) InFlight(binding snapshot.ID) int64 {
	if b := l.get(binding); b != nil {
		return b.inflight.Load()
	}
	return 0
}
