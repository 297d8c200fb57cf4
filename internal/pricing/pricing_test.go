package pricing

import (
	"math"
	"testing"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Prices in the tests are micro-units per million tokens: $2.50/M is 2_500_000.
func TestCost_HandComputed(t *testing.T) {
	t.Parallel()
	flat := snapshot.Pricing{Input: 2_500_000, Output: 10_000_000, Reasoning: 10_000_000}
	anthropicLike := snapshot.Pricing{Input: 3_000_000, CachedInput: 300_000, CacheWrite: 3_750_000, Output: 15_000_000, Reasoning: 15_000_000}
	reasoningPriced := snapshot.Pricing{Input: 1_000_000, Output: 10_000_000, Reasoning: 20_000_000}
	// A Gemini-like long-context tier above 200k prompt tokens.
	tiered := snapshot.Pricing{
		Input: 1_250_000, CachedInput: 312_500, Output: 10_000_000, Reasoning: 10_000_000,
		Tiers: []snapshot.PriceTier{
			{AboveInputTokens: 200_000, InputPrice: 2_500_000, CachedInputPrice: 625_000, OutputPrice: 15_000_000},
			{AboveInputTokens: 1_000_000, InputPrice: 5_000_000, CachedInputPrice: 1_000_000, OutputPrice: 20_000_000},
		},
	}
	tieredOwnReasoning := tiered
	tieredOwnReasoning.Reasoning = 12_000_000

	tests := []struct {
		name string
		p    snapshot.Pricing
		u    wire.Usage
		want int64 // nano-units
	}{
		// 1000 × $2.50/M = $0.0025; 500 × $10/M = $0.005; $0.0075 = 7_500_000 nano.
		{"input and output", flat, wire.Usage{Input: 1000, Output: 500}, 7_500_000},
		{"nothing", flat, wire.Usage{}, 0},
		// Input 1000 includes 600 read and 100 written: 300 uncached.
		// 300×3e6 + 600×3e5 + 100×3.75e6 + 150×15e6 + 50×15e6 = 4.455e9 pico = 4_455_000 nano.
		{"cache read and write, reasoning at the output price", anthropicLike,
			wire.Usage{Input: 1000, CacheRead: 600, CacheWrite: 100, Output: 200, Reasoning: 50}, 4_455_000},
		// 100×1e6 + 150×10e6 + 50×20e6 = 2.6e9 pico: reasoning instead of output, not on top.
		{"reasoning at its own price", reasoningPriced, wire.Usage{Input: 100, Output: 200, Reasoning: 50}, 2_600_000},
		// 150k×1.25e6 + 50k×312_500 + 1000×10e6 = 2.13125e11 pico.
		{"at the tier threshold: base prices", tiered,
			wire.Usage{Input: 200_000, CacheRead: 50_000, Output: 1000, Reasoning: 400}, 213_125_000},
		// 150_001×2.5e6 + 50k×625_000 + 1000×15e6 = 4.212525e11 pico (reasoning follows the tier's output price).
		{"above the threshold: the tier's prices", tiered,
			wire.Usage{Input: 200_001, CacheRead: 50_000, Output: 1000, Reasoning: 400}, 421_252_500},
		// 1.5M×5e6 + 1000×20e6 = 7.52e12 pico.
		{"the highest tier that applies", tiered, wire.Usage{Input: 1_500_000, Output: 1000}, 7_520_000_000},
		// 200k×2.5e6 + 600×15e6 + 400×12e6 = 5.138e11 pico: the binding's own reasoning price stays.
		{"a tier keeps an explicit reasoning price", tieredOwnReasoning,
			wire.Usage{Input: 200_001, Output: 1000, Reasoning: 400}, 513_802_500},
		// One token at 1500 micro/M is 1.5 nano: half rounds up, once per event.
		{"half rounds up", snapshot.Pricing{Input: 1500}, wire.Usage{Input: 1}, 2},
		{"just under half rounds down", snapshot.Pricing{Input: 1499}, wire.Usage{Input: 1}, 1},
		{"exactly half of one nano", snapshot.Pricing{Input: 500}, wire.Usage{Input: 1}, 1},
		{"under half of one nano", snapshot.Pricing{Input: 499}, wire.Usage{Input: 1}, 0},
		// Rounded once on the sum, not per part: 1×499 + 1×499 = 998 pico → 1 nano.
		{"rounded once per event", snapshot.Pricing{Input: 499, Output: 499, Reasoning: 499}, wire.Usage{Input: 1, Output: 1}, 1},
		// More cached than prompt, more reasoning than output: no negative parts, nothing twice.
		{"inconsistent counts clamp", anthropicLike, wire.Usage{Input: 100, CacheRead: 150, Output: 10, Reasoning: 20}, 45_000 + 300_000},
		{"negative counts are ignored", flat, wire.Usage{Input: -5, Output: -1}, 0},
		// 1e9 tokens at $1000/M: 1e9 × 1e9 pico = 1e15 nano ($1M), exact.
		{"large and exact", snapshot.Pricing{Input: 1_000_000_000}, wire.Usage{Input: 1_000_000_000}, 1_000_000_000_000_000},
		{"saturates", snapshot.Pricing{Input: math.MaxInt64, Output: math.MaxInt64}, wire.Usage{Input: math.MaxInt64, Output: math.MaxInt64}, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Cost(&tt.p, tt.u); got != tt.want {
				t.Errorf("Cost = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestRatesFor_PicksTier(t *testing.T) {
	t.Parallel()
	p := snapshot.Pricing{Input: 1, CachedInput: 2, CacheWrite: 3, Output: 4, Reasoning: 4, Tiers: []snapshot.PriceTier{
		{AboveInputTokens: 10, InputPrice: 11, CachedInputPrice: 12, CacheWritePrice: 13, OutputPrice: 14},
	}}
	if r := RatesFor(&p, 10); r != (Rates{Input: 1, CacheRead: 2, CacheWrite: 3, Output: 4, Reasoning: 4}) {
		t.Errorf("at 10: %+v", r)
	}
	if r := RatesFor(&p, 11); r != (Rates{Input: 11, CacheRead: 12, CacheWrite: 13, Output: 14, Reasoning: 14}) {
		t.Errorf("at 11: %+v", r)
	}
}

// Budgets count micro-units rounded up, from the same exact sum.
func TestMicros_RoundsUp(t *testing.T) {
	t.Parallel()
	p := snapshot.Pricing{Input: 2_500_000, Output: 10_000_000, Reasoning: 10_000_000}
	for _, tt := range []struct {
		u    wire.Usage
		want int64
	}{
		{wire.Usage{}, 0},
		{wire.Usage{Input: 1}, 3},                    // 2.5 micro → 3
		{wire.Usage{Input: 1000, Output: 500}, 7500}, // exact
		{wire.Usage{Input: 2}, 5},
		{wire.Usage{Input: -3}, 0},
	} {
		if got := Micros(&p, tt.u); got != tt.want {
			t.Errorf("Micros(%+v) = %d, want %d", tt.u, got, tt.want)
		}
		if n := Cost(&p, tt.u); (n+999)/1000 != tt.want {
			t.Errorf("Micros(%+v) disagrees with Cost %d nano", tt.u, n)
		}
	}
	if got := Micros(&snapshot.Pricing{Input: math.MaxInt64}, wire.Usage{Input: math.MaxInt64}); got != math.MaxInt64 {
		t.Errorf("no saturation: %d", got)
	}
}

// The estimate prices the output at the dearer of output and reasoning.
func TestEstimateMicros_DearerOutput(t *testing.T) {
	t.Parallel()
	p := snapshot.Pricing{Input: 1_000_000, Output: 10_000_000, Reasoning: 20_000_000}
	if got := EstimateMicros(&p, 1000, 100); got != 1000+2000 {
		t.Errorf("got %d", got)
	}
	tiered := snapshot.Pricing{Input: 1, Output: 1, Reasoning: 1, Tiers: []snapshot.PriceTier{{AboveInputTokens: 10, InputPrice: 1_000_000, OutputPrice: 2_000_000}}}
	if got := EstimateMicros(&tiered, 11, 1); got != 11+2 {
		t.Errorf("tiered: got %d", got)
	}
}

func TestSaved_HandComputed(t *testing.T) {
	t.Parallel()
	anthropicLike := snapshot.Pricing{Input: 3_000_000, CachedInput: 300_000, CacheWrite: 3_750_000, Output: 15_000_000}
	tiered := snapshot.Pricing{
		Input: 1_250_000, CachedInput: 312_500, Output: 10_000_000,
		Tiers: []snapshot.PriceTier{{AboveInputTokens: 200_000, InputPrice: 2_500_000, CachedInputPrice: 625_000, OutputPrice: 15_000_000}},
	}
	tests := []struct {
		name string
		p    snapshot.Pricing
		u    wire.Usage
		want int64 // nano-units
	}{
		// 600 × (3e6 − 3e5) = 1.62e9 pico = 1_620_000 nano.
		{"cache reads at the cached price", anthropicLike, wire.Usage{Input: 1000, CacheRead: 600, CacheWrite: 100, Output: 200}, 1_620_000},
		{"no cache reads", anthropicLike, wire.Usage{Input: 1000, Output: 200}, 0},
		// 50k × (2.5e6 − 625_000) = 9.375e10 pico: the tier's prices.
		{"the tier's prices", tiered, wire.Usage{Input: 200_001, CacheRead: 50_000}, 93_750_000},
		// Reported reads beyond the prompt count only up to it: 10 × 2.7e6.
		{"reads beyond the prompt", anthropicLike, wire.Usage{Input: 10, CacheRead: 40}, 27_000},
		{"no cached price: the whole input price", snapshot.Pricing{Input: 1_000_000}, wire.Usage{Input: 10, CacheRead: 10}, 10_000},
		{"cached dearer than uncached", snapshot.Pricing{Input: 100, CachedInput: 200}, wire.Usage{Input: 10, CacheRead: 10}, 0},
		{"negative reads", anthropicLike, wire.Usage{Input: 10, CacheRead: -5}, 0},
		// 1 × 1500 pico = 1.5 nano: half rounds up.
		{"half rounds up", snapshot.Pricing{Input: 1500}, wire.Usage{Input: 1, CacheRead: 1}, 2},
	}
	for _, tc := range tests {
		if got := Saved(&tc.p, tc.u); got != tc.want {
			t.Errorf("%s: Saved = %d, want %d", tc.name, got, tc.want)
		}
	}
	// What the cache saved and what was spent add up to the price of the
	// same prompt uncached.
	u := wire.Usage{Input: 1000, CacheRead: 600, Output: 200}
	uncached := u
	uncached.CacheRead = 0
	if Cost(&anthropicLike, u)+Saved(&anthropicLike, u) != Cost(&anthropicLike, uncached) {
		t.Error("cost + saved differs from the uncached cost")
	}
}

// A batch costs half of the same requests made one by one, every kind of
// token included, rounded once.
func TestBatch_HalfTheBindingPrice(t *testing.T) {
	t.Parallel()
	anthropicLike := snapshot.Pricing{Input: 3_000_000, CachedInput: 300_000, CacheWrite: 3_750_000, Output: 15_000_000, Reasoning: 15_000_000}
	u := wire.Usage{Input: 1000, CacheRead: 600, CacheWrite: 100, Output: 200, Reasoning: 50}
	r := RatesFor(&anthropicLike, u.Input)
	if got, want := BatchCostAt(r, u), CostAt(r, u)/2; got != want { // 4_455_000 / 2
		t.Errorf("BatchCostAt = %d, want %d", got, want)
	}
	if got, want := BatchSavedAt(r, u), SavedAt(r, u)/2; got != want {
		t.Errorf("BatchSavedAt = %d, want %d", got, want)
	}
	// 4.455e9 pico / 2 = 2.2275e9 pico = 2227.5 micro, rounded up.
	if got := BatchMicros(&anthropicLike, u); got != 2228 {
		t.Errorf("BatchMicros = %d, want 2228", got)
	}
	// 1000×3e6 + 500×15e6 = 1.05e10 pico; halved 5.25e9 = 5250 micro.
	if got := BatchEstimateMicros(&anthropicLike, 1000, 500); got != 5250 {
		t.Errorf("BatchEstimateMicros = %d, want 5250", got)
	}
	// One token at 1500 micro/M: 0.75 nano in a batch, rounds up to 1; at
	// 999: 0.4995, rounds down.
	if got := BatchCostAt(Rates{Input: 1500}, wire.Usage{Input: 1}); got != 1 {
		t.Errorf("0.75 nano = %d, want 1", got)
	}
	if got := BatchCostAt(Rates{Input: 999}, wire.Usage{Input: 1}); got != 0 {
		t.Errorf("0.4995 nano = %d, want 0", got)
	}
	if got := BatchCostAt(Rates{Input: math.MaxInt64}, wire.Usage{Input: math.MaxInt64}); got != math.MaxInt64 {
		t.Errorf("saturation = %d", got)
	}
}

func TestUnitCost_MostSpecificPriceBySizeAndQuality(t *testing.T) {
	t.Parallel()
	p := &snapshot.Pricing{Units: []snapshot.UnitPrice{
		{Unit: snapshot.UnitImage, Price: 50_000},
		{Unit: snapshot.UnitImage, Size: "1024x1024", Price: 40_000},
		{Unit: snapshot.UnitImage, Quality: "hd", Price: 80_000},
		{Unit: snapshot.UnitImage, Size: "1024x1792", Quality: "hd", Price: 120_000},
		{Unit: snapshot.UnitSecond, Price: 100},
	}}
	for _, tc := range []struct {
		u    wire.Units
		want int64
	}{
		{wire.Units{Images: 2, Size: "1024x1024", Quality: "standard"}, 80_000_000},
		{wire.Units{Images: 1, Size: "1024x1792", Quality: "hd"}, 120_000_000},
		{wire.Units{Images: 1, Size: "512x512", Quality: "hd"}, 80_000_000},
		{wire.Units{Images: 3}, 150_000_000},
		{wire.Units{Millis: 1500}, 150_000},
		{wire.Units{}, 0},
		{wire.Units{Images: math.MaxInt64}, math.MaxInt64},
	} {
		if got := UnitCost(p, tc.u); got != tc.want {
			t.Errorf("UnitCost(%+v) = %d, want %d", tc.u, got, tc.want)
		}
	}
	if got := UnitCost(&snapshot.Pricing{}, wire.Units{Images: 4, Millis: 9}); got != 0 {
		t.Errorf("no unit prices: %d", got)
	}
}
