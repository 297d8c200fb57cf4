package ratelimit

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// TestLimiter_OutputEstimateLearned: the output estimate is max_tokens
// until enough answers were seen, then the learned 95th percentile (of
// the policy's own requests where it has them, else of the model's),
// never below the floor nor above max_tokens or the model's max output.
func TestLimiter_OutputEstimateLearned(t *testing.T) {
	t.Parallel()
	pol := &snapshot.Policy{ID: uuid.UUID{1}}
	other := &snapshot.Policy{ID: uuid.UUID{2}}
	model := &snapshot.Model{ID: uuid.UUID{3}, MaxOutputTokens: 16000}
	l := New(Options{EstimateMinSamples: 20, EstimateFloor: 100})
	t.Cleanup(func() { _ = l.Close() })
	if got := l.outputEstimate(32000, model, pol); got != 16000 {
		t.Fatalf("nothing learned, max_tokens above the model's max: %d, want 16000 (the ceiling)", got)
	}
	for i := range 19 {
		l.estimates.record(pol.ID, model.ID, int64(401+i))
	}
	if got := l.outputEstimate(8000, model, pol); got != 8000 {
		t.Fatalf("19 answers: %d, want max_tokens 8000", got)
	}
	// The 20th answer, then 100 more of 400…499: the ring (256) holds them all.
	l.estimates.record(pol.ID, model.ID, 420)
	for i := range 100 {
		l.estimates.record(pol.ID, model.ID, int64(400+i))
	}
	cases := []struct {
		name      string
		maxTokens int64
		policy    *snapshot.Policy
		want      int64
	}{
		{"learned p95", 32000, pol, 0}, // filled in below
		{"below max_tokens only", 300, pol, 300},
		{"another policy uses the model's", 32000, other, 0},
	}
	p95 := l.estimates.learned(pol.ID, model.ID)
	if p95 < 480 || p95 > 499 {
		t.Fatalf("learned %d, want the 95th percentile of 400…499 (about 494)", p95)
	}
	cases[0].want, cases[2].want = p95, l.estimates.learned(uuid.Nil, model.ID)
	for _, tc := range cases {
		if got := l.outputEstimate(tc.maxTokens, model, tc.policy); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// The floor: answers of 5 tokens reserve 100.
	small := &snapshot.Model{ID: uuid.UUID{4}}
	for range 40 {
		l.estimates.record(pol.ID, small.ID, 5)
	}
	if got := l.outputEstimate(4096, small, pol); got != 100 {
		t.Fatalf("tiny answers: %d, want the floor 100", got)
	}
	// Fixed estimates: max_tokens as before.
	f := New(Options{FixedEstimates: true})
	t.Cleanup(func() { _ = f.Close() })
	f.estimates.record(pol.ID, model.ID, 5) // a nil estimator ignores it
	if got := f.outputEstimate(8000, model, pol); got != 8000 {
		t.Fatalf("fixed: %d, want 8000", got)
	}
}

// FuzzParseEstimateMessage: the decoder of another pod's learned estimate
// never panics, and what it accepts it prints back the same.
func FuzzParseEstimateMessage(f *testing.F) {
	f.Add(estimateMessage("pod-1", estimateKey{policy: uuid.UUID{1}, model: uuid.UUID{2}}, 512))
	f.Add("a b c d")
	f.Add("")
	f.Add("p 00000000-0000-0000-0000-000000000000 00000000-0000-0000-0000-000000000001 -3")
	f.Fuzz(func(t *testing.T, msg string) {
		pod, k, n, err := parseEstimateMessage(msg)
		if err != nil {
			return
		}
		if n <= 0 {
			t.Fatalf("accepted %d tokens", n)
		}
		again, k2, n2, err := parseEstimateMessage(estimateMessage(pod, k, n))
		if err != nil || again != pod || k2 != k || n2 != n {
			t.Fatalf("round trip of %q: %q %v %d %v", msg, again, k2, n2, err)
		}
	})
}

// TestLimiter_LongContextWeight: with a long-context weight, the input
// tokens of the estimate past the threshold count weight times — in what
// the reservation takes of a token rule — a prompt below it is not
// weighted, and settlement brings the window to the actual count.
func TestLimiter_LongContextWeight(t *testing.T) {
	t.Parallel()
	for _, be := range backends()[:2] {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			l := be.open(t, 1, Options{LongContextTokens: 1000, LongContextWeight: 2.5, FixedEstimates: true})[0]
			c := newCatalog("http://unused")
			rl := c.limit("itpm", snapshot.Rule{Meter: snapshot.MeterInputTokens, Amount: 1_000_000, Window: time.Minute})
			c.policy.RateLimitID = rl.ID
			snap := c.build()
			level := func() int64 {
				t.Helper()
				n, err := l.Level(t.Context(), c.policy, rl, rl.Rules[0], uuid.Nil)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			short, err := attempt(t.Context(), l, c.admission(t, snap, 4000, 10), c.hostKey, c.binding) // 1000 tokens: at the threshold
			if err != nil {
				t.Fatal(err)
			}
			if got := level(); got != 1000 {
				t.Fatalf("a prompt at the threshold reserved %d input tokens, want 1000", got)
			}
			long, err := attempt(t.Context(), l, c.admission(t, snap, 40_000, 10), c.hostKey, c.binding) // 10 000 tokens
			if err != nil {
				t.Fatal(err)
			}
			if got, want := level()-1000, int64(1000+9000*5/2); got != want {
				t.Fatalf("a 10 000-token prompt reserved %d input tokens, want %d (1000 + 9000 × 2.5)", got, want)
			}
			short.Done(wire.Usage{Input: 900, Output: 10})
			long.Done(wire.Usage{Input: 11_000, Output: 10})
			flush(t, l)
			if got := level(); got != 11_900 {
				t.Fatalf("after settlement the window holds %d, want the actual 11 900", got)
			}
		})
	}
}
