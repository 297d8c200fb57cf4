package usage

import (
	"math"
	"math/bits"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Rates are the five per-million-token prices, in micro-units of currency,
// that apply to one request.
type Rates struct {
	Input      int64 // prompt tokens neither read from nor written to the cache
	CacheRead  int64 // prompt tokens read from the cache
	CacheWrite int64 // prompt tokens written to the cache
	Output     int64 // generated tokens that are not reasoning
	Reasoning  int64 // reasoning tokens
}

// RatesFor picks the rates of a binding's pricing for a prompt of input
// tokens (wire.Usage.Input: the whole prompt, cached parts included, which is
// how providers define their long-context tiers). The last tier whose
// AboveInputTokens the prompt exceeds replaces the base prices. A tier has no
// reasoning price of its own: reasoning follows the tier's output price when
// the binding bills reasoning as output (no reasoning price set), else it
// keeps the binding's reasoning price.
func RatesFor(p *snapshot.Pricing, input int64) Rates {
	r := Rates{Input: p.Input, CacheRead: p.CachedInput, CacheWrite: p.CacheWrite, Output: p.Output, Reasoning: p.Reasoning}
	for i := len(p.Tiers) - 1; i >= 0; i-- {
		t := &p.Tiers[i]
		if input <= t.AboveInputTokens {
			continue
		}
		r.Input, r.CacheRead, r.CacheWrite, r.Output = t.InputPrice, t.CachedInputPrice, t.CacheWritePrice, t.OutputPrice
		if p.Reasoning == p.Output {
			r.Reasoning = t.OutputPrice
		}
		break
	}
	return r
}

// Cost is what u costs under p, in nano-units of currency (1e-9), rounded
// half up once. See docs/usage.md for the arithmetic:
//
//	uncached  = Input − CacheRead − CacheWrite   (Input includes both)
//	plain out = Output − Reasoning               (Output includes reasoning)
//	cost      = round(Σ tokens × price / 1000)
//
// A price is micro-units per million tokens, so one token at price p costs
// p × 1e-6 / 1e6 = p × 1e-12 of a unit = p / 1000 nano-units. The sum of
// tokens × price is exact in 128 bits; the result saturates at MaxInt64.
// Counts an upstream reported inconsistently (more cached than prompt tokens,
// more reasoning than output tokens) are clamped so that no token is billed
// twice and none is billed negative.
func Cost(p *snapshot.Pricing, u wire.Usage) int64 {
	return CostAt(RatesFor(p, u.Input), u)
}

// CostAt is Cost with the rates already picked.
func CostAt(r Rates, u wire.Usage) int64 {
	cacheRead := clamp(u.CacheRead, 0)
	cacheWrite := clamp(u.CacheWrite, 0)
	uncached := clamp(u.Input-cacheRead-cacheWrite, 0)
	reasoning := clamp(u.Reasoning, 0)
	plain := clamp(u.Output-reasoning, 0)

	var hi, lo uint64
	add := func(tokens, price int64) {
		if tokens <= 0 || price <= 0 {
			return
		}
		h, l := bits.Mul64(uint64(tokens), uint64(price))
		var c uint64
		lo, c = bits.Add64(lo, l, 0)
		hi, _ = bits.Add64(hi, h, c)
	}
	add(uncached, r.Input)
	add(cacheRead, r.CacheRead)
	add(cacheWrite, r.CacheWrite)
	add(plain, r.Output)
	add(reasoning, r.Reasoning)

	// round(x / 1000) = floor((x + 500) / 1000)
	var c uint64
	lo, c = bits.Add64(lo, 500, 0)
	hi += c
	if hi >= 1000 {
		return math.MaxInt64 // the quotient would not fit in 64 bits
	}
	q, _ := bits.Div64(hi, lo, 1000)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

func clamp(v, lo int64) int64 { return max(v, lo) }
