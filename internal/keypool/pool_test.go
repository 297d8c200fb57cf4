package keypool

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/snapshot"
)

func keys(n int) []*snapshot.HostKey {
	host := uuid.UUID{0xee}
	out := make([]*snapshot.HostKey, n)
	for i := range out {
		out[i] = &snapshot.HostKey{ID: uuid.UUID{byte(i + 1)}, HostID: host, Slug: string(rune('a' + i)), SecretVersion: 1, Position: i, Enabled: true, Usable: true}
	}
	return out
}

func pickSlugs(t *testing.T, p *Pool, s snapshot.KeyStrategy, ks []*snapshot.HostKey, n int, clock func(int) time.Time) string {
	t.Helper()
	out := ""
	for i := range n {
		k, tk, ok := p.Pick(s, ks, "", nil, clock(i))
		if !ok {
			t.Fatalf("pick %d: none", i)
		}
		p.Breakers().Report(tk, Result{Outcome: OutcomeSuccess}, clock(i))
		out += k.Slug
	}
	return out
}

func TestPool_Strategies(t *testing.T) {
	t.Parallel()
	ks := keys(3)
	fixed := func(int) time.Time { return t0 }
	ticking := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	tests := []struct {
		strategy snapshot.KeyStrategy
		clock    func(int) time.Time
		want     string
	}{
		{snapshot.StrategyPrioritized, fixed, "aaaaaa"},
		{"", fixed, "aaaaaa"},
		{snapshot.StrategyRoundRobin, fixed, "abcabc"},
		{snapshot.StrategyLeastRecentlyUsed, ticking, "abcabc"},
	}
	for _, tt := range tests {
		p := NewPool(NewMemory(BreakerConfig{}))
		if got := pickSlugs(t, p, tt.strategy, ks, 6, tt.clock); got != tt.want {
			t.Errorf("%q: picked %s, want %s", tt.strategy, got, tt.want)
		}
	}
}

func TestPool_SkipsTriedAndHeldKeys(t *testing.T) {
	t.Parallel()
	ks := keys(3)
	for _, s := range []snapshot.KeyStrategy{snapshot.StrategyPrioritized, snapshot.StrategyRoundRobin, snapshot.StrategyLeastRecentlyUsed} {
		b := NewMemory(BreakerConfig{})
		p := NewPool(b)
		tk, _ := b.Acquire(Ref(ks[1]), "", t0)
		b.Report(tk, Result{Outcome: OutcomeAuth}, t0)
		seen := map[string]bool{}
		var tried []snapshot.ID
		for {
			k, tk, ok := p.Pick(s, ks, "", tried, t0)
			if !ok {
				break
			}
			b.Report(tk, Result{Outcome: OutcomeSuccess}, t0)
			if seen[k.Slug] {
				t.Fatalf("%s: %s picked twice", s, k.Slug)
			}
			seen[k.Slug] = true
			tried = append(tried, k.ID)
		}
		if len(seen) != 2 || seen["b"] {
			t.Errorf("%s: picked %v, want a and c", s, seen)
		}
	}
}
