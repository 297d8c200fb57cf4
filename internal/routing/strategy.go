package routing

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"time"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/snapshot"
)

// Stats are the live figures the latency and least_busy strategies order
// by. Live is the proxy's; the control plane's explain reads the same one
// when it runs in the same process.
type Stats interface {
	// TTFB is the binding's moving average time to first byte; ok is
	// false before any was measured.
	TTFB(binding snapshot.ID) (d time.Duration, ok bool)
	// InFlight is the number of requests the binding is serving now.
	InFlight(binding snapshot.ID) int64
}

// order sorts one model's candidates (cs, as walked in position order):
// kept ones first, by the plan's strategy; then, with binding affinity,
// the session's rendezvous order among equal bindings; then each kept
// binding's keys by the session's rendezvous hash.
func (r *Router) order(p *Plan, cs []Candidate, now time.Time) {
	strategy := p.Strategy
	for i := range cs {
		c := &cs[i]
		if c.Skip != Kept {
			continue
		}
		c.Score = r.score(p, c, strategy, now)
	}
	// Insertion sort: stable, allocation-free, and the lists are short.
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && before(&cs[j], &cs[j-1]); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
	if p.Panic {
		for i := range cs {
			if c := &cs[i]; c.Skip == Kept {
				r.leastRecentlyFailed(p, c, now)
			}
		}
		return
	}
	if p.Affinity == snapshot.AffinityBinding {
		r.bindingAffinity(p, cs, strategy)
	}
	if p.Affinity != snapshot.AffinityOff {
		for i := range cs {
			if c := &cs[i]; c.Skip == Kept && c.hi-c.lo > 1 {
				p.rendezvous(c)
			}
		}
	}
}

// before orders kept candidates first, by score, then by position.
func before(a, b *Candidate) bool {
	ak, bk := a.Skip == Kept, b.Skip == Kept
	if ak != bk {
		return ak
	}
	if !ak {
		return false // skipped ones keep their walk order
	}
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Binding.Position < b.Binding.Position
}

// score is c's place under the strategy, lower first.
func (r *Router) score(p *Plan, c *Candidate, s snapshot.RouteStrategy, now time.Time) float64 {
	switch s {
	case snapshot.RouteWeighted:
		if p.Affinity == snapshot.AffinityBinding {
			return 0 // bindingAffinity draws the order by the session
		}
		// An exponential race: the first of the draws -ln(U)/w is each
		// binding with probability w/Σw, and the rest follow likewise.
		u := (float64(r.rand()>>11) + 0.5) / (1 << 53)
		return -math.Log(u) / float64(weight(c.Binding))
	case snapshot.RouteCost:
		out := p.Needs.MaxOutput
		if out <= 0 {
			out = int64(c.Model.MaxOutputTokens)
		}
		return float64(pricing.EstimateMicros(&c.Binding.Pricing, p.Needs.PromptTokens, out))
	case snapshot.RouteLatency:
		if r.Stats != nil {
			if d, ok := r.Stats.TTFB(c.Binding.ID); ok {
				return float64(d) / float64(time.Millisecond)
			}
		}
		return 0 // unmeasured: tried first, so that it gets measured
	case snapshot.RouteLeastBusy:
		if r.Stats != nil {
			return float64(r.Stats.InFlight(c.Binding.ID))
		}
		return 0
	}
	return float64(c.Binding.Position)
}

func weight(b *snapshot.Binding) int {
	return max(b.Weight, 1)
}

func (r *Router) rand() uint64 {
	if r.Rand != nil {
		return r.Rand()
	}
	return rand.Uint64()
}

// bindingAffinity reorders each run of equal kept bindings (equal score;
// under weighted, all of them) by the session's rendezvous hash, weighted
// by Binding.Weight, so a session keeps its binding among equals and the
// sessions split across them as the weights say.
func (r *Router) bindingAffinity(p *Plan, cs []Candidate, s snapshot.RouteStrategy) {
	n := 0
	for n < len(cs) && cs[n].Skip == Kept {
		n++
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && cs[hi].Score == cs[lo].Score {
			hi++
		}
		if hi-lo > 1 {
			run := cs[lo:hi]
			for i := range run {
				// Weighted rendezvous: the lowest -ln(u)/w, u drawn from the
				// session and the binding, is each binding's for a share w/Σw
				// of the sessions.
				u := (float64(hrw(p.Session, run[i].Binding.ID)>>11) + 0.5) / (1 << 53)
				run[i].Score += -math.Log(u) / float64(weight(run[i].Binding))
			}
			for i := 1; i < len(run); i++ {
				for j := i; j > 0 && run[j].Score < run[j-1].Score; j-- {
					run[j], run[j-1] = run[j-1], run[j]
				}
			}
		}
		lo = hi
	}
}

// rendezvous orders c's keys by the session's highest-random-weight hash,
// highest first: a session's key is the healthy key it scores highest on,
// and a key that leaves moves only the sessions it held.
func (p *Plan) rendezvous(c *Candidate) {
	keys := p.keys[c.lo:c.hi]
	if cap(p.scores) < len(keys) {
		p.scores = make([]uint64, len(keys), max(len(keys), 16))
	}
	sc := p.scores[:len(keys)]
	for i, k := range keys {
		sc[i] = hrw(p.Session, k.ID)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && sc[j] > sc[j-1]; j-- {
			sc[j], sc[j-1] = sc[j-1], sc[j]
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	c.Affinity = true
}

// leastRecentlyFailed orders c's (held) keys by when their breakers last
// saw a failure, longest ago first: panic mode's order.
func (r *Router) leastRecentlyFailed(p *Plan, c *Candidate, now time.Time) {
	keys := p.keys[c.lo:c.hi]
	if cap(p.scores) < len(keys) {
		p.scores = make([]uint64, len(keys), max(len(keys), 16))
	}
	sc := p.scores[:len(keys)]
	for i, k := range keys {
		last, _ := r.Breakers.Panicable(keypool.Ref(k), c.Binding.UpstreamModel, now)
		sc[i] = uint64(last.UnixNano())
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && sc[j] < sc[j-1]; j-- {
			sc[j], sc[j-1] = sc[j-1], sc[j]
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// hrw is the rendezvous score of a session on an item.
func hrw(session uint64, id snapshot.ID) uint64 {
	a := binary.LittleEndian.Uint64(id[:8])
	b := binary.LittleEndian.Uint64(id[8:])
	return mix(session ^ mix(a^mix(b)))
}
