package keypool

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/redistest"
)

// The shared-breaker suite runs on each Redis set-up a deployment may have:
// one Redis ("redis") and a 3-master Redis Cluster ("redis-cluster"). Each
// test is a func of a client maker and runs once per set-up, under a prefix
// of its own.
type newClient func(t *testing.T) redis.UniversalClient

// theCluster is the package's Redis Cluster, stopped by TestMain.
var theCluster redistest.SharedCluster

func TestMain(m *testing.M) {
	code := m.Run()
	theCluster.Stop()
	os.Exit(code)
}

// onEachRedis runs test on one Redis and on the Redis Cluster, in parallel.
func onEachRedis(t *testing.T, test func(t *testing.T, client newClient)) {
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		url := redistest.URL(t)
		test(t, func(t *testing.T) redis.UniversalClient { return redistest.Client(t, url) })
	})
	t.Run("redis-cluster", func(t *testing.T) {
		t.Parallel()
		cluster := theCluster.Get(t)
		test(t, func(t *testing.T) redis.UniversalClient { return cluster.Client(t) })
	})
}

// twoPods returns two RedisBreakers ("pods"), each with its own client, sharing
// one Redis.
func twoPods(t *testing.T, client newClient) (a, b *RedisBreakers) {
	t.Helper()
	prefix := redistest.Prefix(t)
	open := func() *RedisBreakers {
		r := NewRedisBreakers(client(t), BreakerConfig{}, RedisBreakerOptions{Prefix: prefix, Resync: time.Hour})
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	a, b = open(), open()
	// Both subscribed before the test reports anything.
	for _, r := range []*RedisBreakers{a, b} {
		if err := r.ps.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

// eventually polls cond until it holds or 5s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 5*time.Second, what, cond)
}

func TestRedisBreakers_TrippedOnOnePodSkippedOnAnother(t *testing.T) {
	t.Parallel()
	onEachRedis(t, func(t *testing.T, client newClient) {
		a, b := twoPods(t, client)
		k := ref(1, 1)
		tk := mustAcquire(t, a, k, t0)
		a.Report(tk, Result{Outcome: OutcomeFailure, Reason: "500"}, t0)
		mustRefuse(t, a, k, t0) // locally at once
		eventually(t, "pod B sees the key open", func() bool { return !b.Ready(k, "", t0) })
		if st := b.States(t0); len(st) != 1 || st[0].State != StateOpen || st[0].LastReason != "500" {
			t.Fatalf("B's states %+v", st)
		}

		// A rotated secret is a new breaker: closed on both pods.
		if !b.Ready(ref(1, 2), "", t0) || !a.Ready(ref(1, 2), "", t0) {
			t.Fatal("a new secret version is not fresh")
		}

		// B probes after the backoff and succeeds: closed for A too.
		at := t0.Add(time.Second)
		probe := mustAcquire(t, b, k, at)
		if !probe.Probe {
			t.Fatal("B's attempt after the backoff is not a probe")
		}
		b.Report(probe, Result{Outcome: OutcomeSuccess}, at)
		eventually(t, "pod A sees the key closed", func() bool { return len(a.States(at)) == 0 })
	})
}

func TestRedisBreakers_AuthFailureSharedAndHeldUntilRotation(t *testing.T) {
	t.Parallel()
	onEachRedis(t, func(t *testing.T, client newClient) {
		a, b := twoPods(t, client)
		k := ref(2, 7)
		a.Report(mustAcquire(t, a, k, t0), Result{Outcome: OutcomeAuth, Reason: "401"}, t0)
		eventually(t, "pod B holds the key", func() bool { return !b.Ready(k, "", t0.Add(29*time.Second)) })
		if !b.Ready(ref(2, 8), "", t0) {
			t.Fatal("the rotated secret is held")
		}
		// The hold ends in a probe, not at the next rotation.
		if p := mustAcquire(t, b, k, t0.Add(30*time.Second)); !p.Probe {
			t.Fatal("B's attempt after the hold is not a probe")
		}
	})
}

func TestRedisBreakers_ScopesSharedAndClearedEverywhere(t *testing.T) {
	t.Parallel()
	onEachRedis(t, func(t *testing.T, client newClient) {
		a, b := twoPods(t, client)
		k := ref(4, 1)
		// A model-level hold (with a ':' in the model's name) and a key-level
		// hold of another key, both from pod A.
		a.Report(mustAcquireFor(t, a, k, "llama3:8b", t0), Result{Outcome: OutcomeFailure, Scope: ScopeModel, Reason: "500"}, t0)
		other := ref(5, 1)
		a.Report(mustAcquireFor(t, a, other, "llama3:8b", t0), Result{Outcome: OutcomeAuth, Scope: ScopeKey, Reason: "401"}, t0)
		eventually(t, "pod B holds (key, model) and the other key", func() bool {
			return !b.Ready(k, "llama3:8b", t0) && !b.Ready(other, "", t0)
		})
		if !b.Ready(k, "qwen", t0) || !b.Ready(k, "", t0) {
			t.Fatal("a model-level hold held the key on pod B")
		}
		st := b.States(t0)
		if len(st) != 2 || st[0].Model != "llama3:8b" || st[0].Scope != ScopeModel || st[1].Scope != ScopeKey || st[1].State != StateAuthFailed {
			t.Fatalf("B's states %+v", st)
		}

		// Pod B clears the key-level hold: pod A (and Redis) forget it too.
		got, err := b.Clear(t.Context(), other.ID, "", t0)
		if err != nil || len(got) != 1 || got[0].State != StateAuthFailed {
			t.Fatalf("Clear = %+v, %v", got, err)
		}
		eventually(t, "pod A sees the hold cleared", func() bool { return a.Ready(other, "", t0) })
		// A pod that starts now reads only what is left.
		c := NewRedisBreakers(a.client, BreakerConfig{}, RedisBreakerOptions{Prefix: strings.TrimSuffix(a.hash, "{breakers}:state"), Resync: time.Hour})
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if st := c.States(t0); len(st) != 1 || st[0].Model != "llama3:8b" {
			t.Fatalf("a new pod's states %+v", st)
		}
		// Clearing a hold this pod never saw still reaches Redis and every pod.
		c2 := NewRedisBreakers(a.client, BreakerConfig{}, RedisBreakerOptions{Prefix: strings.TrimSuffix(a.hash, "{breakers}:state"), Resync: time.Hour})
		t.Cleanup(func() { _ = c2.Close() })
		got, err = c2.Clear(t.Context(), k.ID, "llama3:8b", t0)
		if err != nil || len(got) != 1 || got[0].Model != "llama3:8b" {
			t.Fatalf("Clear from a fresh pod = %+v, %v", got, err)
		}
		eventually(t, "pods A and B see the model hold cleared", func() bool {
			return a.Ready(k, "llama3:8b", t0) && b.Ready(k, "llama3:8b", t0)
		})
	})
}

func TestRedisBreakers_ResyncHealsAMissedMessage(t *testing.T) {
	t.Parallel()
	onEachRedis(t, func(t *testing.T, client newClient) {
		prefix := redistest.Prefix(t)
		a := NewRedisBreakers(client(t), BreakerConfig{}, RedisBreakerOptions{Prefix: prefix})
		t.Cleanup(func() { _ = a.Close() })
		k := ref(3, 1)
		a.Report(mustAcquire(t, a, k, t0), Result{Outcome: OutcomeRateLimited, RetryAfter: time.Minute}, t0)
		eventually(t, "the state is written", func() bool { return a.pending.Load() == 0 })

		// A pod that starts later (it missed the message) reads the state.
		c := NewRedisBreakers(client(t), BreakerConfig{}, RedisBreakerOptions{Prefix: prefix, Resync: time.Hour})
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		mustRefuse(t, c, k, t0.Add(59*time.Second))
		if st := c.States(t0); len(st) != 1 || st[0].State != StateCooling {
			t.Fatalf("states %+v", st)
		}
		mustAcquire(t, c, k, t0.Add(time.Minute))
	})
}

// A key held because two models were refused on one pod is held on the
// other; a single model's 401 holds that model only, everywhere.
func TestRedisBreakers_AuthEscalationShared(t *testing.T) {
	t.Parallel()
	onEachRedis(t, func(t *testing.T, client newClient) {
		a, b := twoPods(t, client)
		k := ref(6, 1)
		auth := Result{Outcome: OutcomeAuth, Scope: ScopeModel, Reason: "403"}
		a.Report(mustAcquireFor(t, a, k, "m1", t0), auth, t0)
		eventually(t, "pod B holds (key, m1)", func() bool { return !b.Ready(k, "m1", t0) })
		if !b.Ready(k, "m2", t0) || !b.Ready(k, "", t0) {
			t.Fatal("one model's 403 held the key on pod B")
		}
		a.Report(mustAcquireFor(t, a, k, "m2", t0), auth, t0)
		eventually(t, "pod B holds the key", func() bool { return !b.Ready(k, "", t0) && !b.Ready(k, "m3", t0) })
	})
}

// Five server errors in a row across two pods open the breaker on both.
func TestRedisBreakers_CountsShared(t *testing.T) {
	t.Parallel()
	onEachRedis(t, func(t *testing.T, client newClient) {
		a, b := twoPods(t, client)
		k := ref(7, 1)
		r := Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceServer, Reason: "500"}
		for range 4 {
			a.Report(mustAcquireFor(t, a, k, "m", t0), r, t0)
		}
		mustAcquireFor(t, a, k, "m", t0)
		eventually(t, "pod B counts four", func() bool {
			e, ok := b.local.entryOf(Hold{Ref: k, Model: "m"})
			return ok && e.failures == 4
		})
		b.Report(mustAcquireFor(t, b, k, "m", t0), r, t0)
		mustRefuseFor(t, b, k, "m", t0)
		eventually(t, "pod A sees it open", func() bool { return !a.Ready(k, "m", t0) })
	})
}

// The threshold travels with the ticket: a host at 1 opens on one 500
// reported on pod A, and pod B holds it; a key of a host on the default
// keeps counting on both.
func TestRedisBreakers_TicketThresholdsShared(t *testing.T) {
	t.Parallel()
	onEachRedis(t, func(t *testing.T, client newClient) {
		a, b := twoPods(t, client)
		strict, lenient := ref(8, 1), ref(9, 1)
		r := Result{Outcome: OutcomeFailure, Scope: ScopeModel, Evidence: EvidenceServer, Reason: "500"}
		tk := mustAcquireFor(t, a, strict, "m", t0)
		tk.Thresholds = Thresholds{ServerFailures: 1}
		a.Report(tk, r, t0)
		a.Report(mustAcquireFor(t, a, lenient, "m", t0), r, t0)
		mustRefuseFor(t, a, strict, "m", t0)
		eventually(t, "pod B holds the strict host's key", func() bool { return !b.Ready(strict, "m", t0) })
		eventually(t, "pod B counts the lenient host's one", func() bool {
			e, ok := b.local.entryOf(Hold{Ref: lenient, Model: "m"})
			return ok && e.kind == kindCounting && e.failures == 1
		})
		mustAcquireFor(t, b, lenient, "m", t0)
	})
}

// decodeBreaker reads what other pods (or anything else) wrote in the
// shared hash: it never panics, and what it accepts encodes back to a
// field and value that decode to the same breaker.
func FuzzDecodeBreaker(f *testing.F) {
	for _, seed := range [][2]string{
		{"00000000-0000-0000-0000-000000000001:1", "1|1|1767268800000|1767268800000|500"},
		{"00000000-0000-0000-0000-000000000001:2:llama3:8b", "5|3|0|1767268800000|503"},
		{"00000000-0000-0000-0000-000000000001:1:m", ""},
		{"nope", "9|x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, field, value string) {
		h, e, ok := decodeBreaker(field, value)
		if !ok {
			return
		}
		f2, v2 := encodeBreaker(h, e)
		h2, e2, ok := decodeBreaker(f2, v2)
		if !ok || h2 != h || (e == nil) != (e2 == nil) {
			t.Fatalf("%q=%q decoded to %+v %+v, which encodes to %q=%q and decodes to %+v %+v", field, value, h, e, f2, v2, h2, e2)
		}
		if e != nil && (e2.kind != e.kind || e2.failures != e.failures || e2.reason != e.reason || !e2.until.Equal(e.until)) {
			t.Fatalf("%q=%q: %+v became %+v", field, value, e, e2)
		}
	})
}
