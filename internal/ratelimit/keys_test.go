package ratelimit

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/snapshot"
)

// The cached keys are the keys ruleCounter and budgetCounter make, and
// the Redis key layout of reservation.go.
func TestCachedKeys_SameAsBuilt(t *testing.T) {
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	snap := snapshot.Build(&snapshot.Data{}, 1, time.Now())
	owner, rl, who := uuid.New(), uuid.New(), uuid.New()
	rules := []*snapshot.Rule{
		{ID: uuid.New(), Meter: snapshot.MeterRequests, Amount: 10, Window: time.Minute},
		{ID: uuid.New(), Meter: snapshot.MeterConcurrency, Amount: 2},
	}
	for _, tier := range []bool{false, true} {
		base := policyKey(owner, rl)
		if tier {
			base = tierKey(owner, rl)
		}
		for _, rule := range rules {
			for _, p := range []snapshot.ID{uuid.Nil, who} {
				want := ruleCounter(base, rule, p, 3, "lease", time.Second)
				for range 2 { // built, then from the cache
					got := keyedRuleCounter(l.counterKey(snap, ruleKey(tier, owner, rl, rule)), rule, p, 3, "lease", time.Second)
					if got != want {
						t.Errorf("tier %v, %s, principal %v: got %+v, want %+v", tier, rule.Meter, p, got, want)
					}
				}
			}
		}
	}
	if k := l.counterKey(snap, keyID{kind: keyPace, owner: owner}); k.key != "key:"+owner.String()+":pace" || k.tag != "key:"+owner.String() {
		t.Errorf("pace key %+v", k)
	}
	if k := l.counterKey(snap, ruleKey(false, owner, rl, rules[0])); k.key != "pol:"+owner.String()+":"+rl.String()+":"+rules[0].ID.String()+":60" {
		t.Errorf("window key %q", k.key)
	}
	now := time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)
	for _, period := range []string{"day", "month"} {
		b := &snapshot.Budget{ID: uuid.New(), Period: period, Amount: 5}
		want := budgetCounter(b, now)
		if got := l.budgetCounter(snap, b, now); got != want {
			t.Errorf("%s budget: got %+v, want %+v", period, got, want)
		}
	}
}
