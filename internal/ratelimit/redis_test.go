package ratelimit

import (
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/wire"
)

// TestRedis_KeysCarryTheirOwnersTag checks the key layout that lets a Redis
// Cluster spread the limiter: every key of a reservation is under the hash
// tag of what owns it — the policy, the host key, the budget — and only the
// pods' heartbeats share the {rl} tag.
func TestRedis_KeysCarryTheirOwnersTag(t *testing.T) {
	t.Parallel()
	c := benchCatalog("http://unused")
	// Pacing: the host key's spacing counter (a tier of 1000 requests a
	// minute, and a policy that lets requests wait).
	c.policy.MaxWait = time.Second
	for _, rl := range c.data.RateLimits {
		if rl.ID == c.hostKey.TierRateLimitID {
			rl.Rules[0].Amount = 1000
		}
	}
	var budget string
	for _, b := range c.data.Budgets {
		budget = b.ID.String()
	}
	snap := c.build()
	url := redistest.URL(t)
	l := openRedis(t, url, 1, Options{})[0]
	r, err := attempt(t.Context(), l, c.admission(t, snap, 2000, 256), c.hostKey, c.binding)
	if err != nil {
		t.Fatal(err)
	}
	r.Done(wire.Usage{Input: 400, Output: 100})
	flush(t, l)

	rc := redistest.Client(t, url)
	// The pods set is written by the limiter's first heartbeat, which runs
	// on its own goroutine: on a loaded machine it may come after the
	// settlement.
	eventually(t, "the first heartbeat", func() bool {
		n, err := rc.Exists(t.Context(), l.redis.prefix+"{rl}:pods").Result()
		return err == nil && n == 1
	})
	keys, err := rc.Keys(t.Context(), l.redis.prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]int{}
	for _, k := range keys {
		tag, _, ok := strings.Cut(strings.TrimPrefix(k, l.redis.prefix+"{"), "}")
		if !ok {
			t.Errorf("key %s has no hash tag", k)
			continue
		}
		switch tag {
		case "pol:" + c.policy.ID.String(), "key:" + c.hostKey.ID.String(), "budget:" + budget, "rl":
			owners[tag]++
		default:
			t.Errorf("key %s: tag %q names no owner of this request", k, tag)
		}
	}
	// The policy: 2 windows (a window's bucket hash appears only once it
	// has an older bucket) and a lease set, emptied by the settlement and
	// so gone; the host key: 2 windows and its pacing; the budget: its
	// period; {rl}: the live pods.
	for tag, want := range map[string]int{"pol:" + c.policy.ID.String(): 2, "key:" + c.hostKey.ID.String(): 3, "budget:" + budget: 1, "rl": 1} {
		if owners[tag] != want {
			t.Errorf("%d keys under {%s}, want %d (keys %v)", owners[tag], tag, want, keys)
		}
	}
}
