// Package pricing is the cost arithmetic: a binding's snapshot pricing
// (micro-units of currency per million tokens, with long-context tiers)
// applied to one request's token usage. It is pure — no I/O, no state — so
// the inference path (the proxy's X-Relay-Usage answer, the rate limiter's
// budgets) and the usage ledger compute the very same numbers.
//
// It must import nothing but the snapshot's types and wire.Usage.
package pricing

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
	hi, lo := r.sum(u)
	return div(hi, lo, 1000, 500) // round(x / 1000) = floor((x + 500) / 1000)
}

// Saved is what the prompt-cache reads of u saved under p, in nano-units of
// currency rounded half up: the tokens read from the cache at the uncached
// input price minus what they cost at the cached one,
//
//	saved = round(CacheRead × (Input price − CacheRead price) / 1000)
//
// with the rates of the prompt's tier, as Cost picks them. A cached price
// above the input price saves nothing (never a negative saving), and cache
// reads an upstream reported beyond the prompt count only up to the prompt.
func Saved(p *snapshot.Pricing, u wire.Usage) int64 {
	return SavedAt(RatesFor(p, u.Input), u)
}

// SavedAt is Saved with the rates already picked.
func SavedAt(r Rates, u wire.Usage) int64 {
	read := min(max(u.CacheRead, 0), max(u.Input, 0))
	diff := r.Input - max(r.CacheRead, 0)
	if read == 0 || diff <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(read), uint64(diff))
	return div(hi, lo, 1000, 500)
}

// Micros is what u costs under p in micro-units of currency (1e-6),
// rounded up: budgets count in micro-units and must never undercount.
func Micros(p *snapshot.Pricing, u wire.Usage) int64 {
	hi, lo := RatesFor(p, u.Input).sum(u)
	return div(hi, lo, 1_000_000, 999_999)
}

// EstimateMicros is the most a request of in prompt tokens and out
// generated tokens may cost under p, in micro-units rounded up: the prompt
// at the uncached input price, the output at the output or reasoning price,
// whichever is dearer.
func EstimateMicros(p *snapshot.Pricing, in, out int64) int64 {
	r := RatesFor(p, in)
	r.Output = max(r.Output, r.Reasoning)
	r.Reasoning = 0
	hi, lo := r.sum(wire.Usage{Input: in, Output: out})
	return div(hi, lo, 1_000_000, 999_999)
}

// sum is Σ tokens × price in pico-units, exact in 128 bits.
func (r Rates) sum(u wire.Usage) (hi, lo uint64) {
	cacheRead := max(u.CacheRead, 0)
	cacheWrite := max(u.CacheWrite, 0)
	uncached := max(u.Input-cacheRead-cacheWrite, 0)
	reasoning := max(u.Reasoning, 0)
	plain := max(u.Output-reasoning, 0)
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
	return hi, lo
}

// div is floor((hi:lo + bias) / d), saturating at MaxInt64.
func div(hi, lo, d, bias uint64) int64 {
	var c uint64
	lo, c = bits.Add64(lo, bias, 0)
	hi += c
	if hi >= d {
		return math.MaxInt64 // the quotient would not fit in 64 bits
	}
	q, _ := bits.Div64(hi, lo, d)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// BatchDivisor is how much cheaper a token is in a batch (OpenAI's Batch
// API, Anthropic's Message Batches): both bill every kind of token of a
// batch at half the binding's price, cached and reasoning tokens included.
// The batch price is the binding's price divided by it, applied once to the
// exact sum, so a batch costs exactly half of the same requests made one by
// one (rounded once, half up).
const BatchDivisor = 2

// BatchCostAt is CostAt at the batch price.
func BatchCostAt(r Rates, u wire.Usage) int64 {
	hi, lo := r.sum(u)
	return div(hi, lo, 1000*BatchDivisor, 1000*BatchDivisor/2)
}

// BatchSavedAt is SavedAt at the batch price.
func BatchSavedAt(r Rates, u wire.Usage) int64 {
	read := min(max(u.CacheRead, 0), max(u.Input, 0))
	diff := r.Input - max(r.CacheRead, 0)
	if read == 0 || diff <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(read), uint64(diff))
	return div(hi, lo, 1000*BatchDivisor, 1000*BatchDivisor/2)
}

// BatchMicros is Micros at the batch price (rounded up).
func BatchMicros(p *snapshot.Pricing, u wire.Usage) int64 {
	hi, lo := RatesFor(p, u.Input).sum(u)
	return div(hi, lo, 1_000_000*BatchDivisor, 1_000_000*BatchDivisor-1)
}

// BatchEstimateMicros is EstimateMicros at the batch price: the most a
// batch of in prompt tokens and out generated tokens (its lines' totals)
// may cost. The tier is the one of the whole in count, so the estimate
// errs high, never low.
func BatchEstimateMicros(p *snapshot.Pricing, in, out int64) int64 {
	r := RatesFor(p, in)
	r.Output = max(r.Output, r.Reasoning)
	r.Reasoning = 0
	hi, lo := r.sum(wire.Usage{Input: in, Output: out})
	return div(hi, lo, 1_000_000*BatchDivisor, 1_000_000*BatchDivisor-1)
}

// UnitMicros is UnitCost in micro-units of currency, rounded up: what a
// request's units take of a budget (budgets never undercount).
func UnitMicros(p *snapshot.Pricing, u wire.Units) int64 {
	c := UnitCost(p, u)
	if c == math.MaxInt64 {
		return c
	}
	return (c + 999) / 1000
}

// AddMicros adds two non-negative amounts, saturating at MaxInt64.
func AddMicros(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// UnitCost is what u costs under p's unit prices, in nano-units of
// currency: each image at the price of the most specific image entry that
// matches its size and quality (an entry's empty size or quality matches
// any; size and quality both set beats one, one beats none), and the audio
// at the per-second price, by the millisecond. A unit without a price
// costs nothing (its tokens, if any, are priced as tokens). Saturates at
// MaxInt64.
func UnitCost(p *snapshot.Pricing, u wire.Units) int64 {
	if len(p.Units) == 0 {
		return 0
	}
	var total uint64
	add := func(n, price int64, scale uint64) {
		if n <= 0 || price <= 0 {
			return
		}
		hi, lo := bits.Mul64(uint64(n), uint64(price))
		if hi != 0 {
			total = math.MaxInt64
			return
		}
		hi, lo = bits.Mul64(lo, scale)
		if hi != 0 || lo > math.MaxInt64 || total+lo > math.MaxInt64 {
			total = math.MaxInt64
			return
		}
		total += lo
	}
	if u.Images > 0 {
		best, score := int64(-1), -1
		for _, up := range p.Units {
			if up.Unit != snapshot.UnitImage || (up.Size != "" && up.Size != u.Size) || (up.Quality != "" && up.Quality != u.Quality) {
				continue
			}
			s := 0
			if up.Size != "" {
				s++
			}
			if up.Quality != "" {
				s++
			}
			if s > score {
				best, score = up.Price, s
			}
		}
		add(u.Images, best, 1000) // micro-units per image → nano-units
	}
	if u.Millis > 0 {
		for _, up := range p.Units {
			if up.Unit == snapshot.UnitSecond {
				add(u.Millis, up.Price, 1) // micro-units per second = nano-units per millisecond
				break
			}
		}
	}
	return int64(total)
}
