package ratelimit

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
)

// failureSetup is two policies over one private Redis: the catalog's own
// (fail open) and a second (fail closed) with a relay key of its own.
type failureSetup struct {
	srv          *redistest.Server
	cat          *catalog
	snap         *snapshot.Snapshot
	closedCaller *snapshot.Caller
	a, b         *Limiter // two pods
}

func newFailureSetup(t *testing.T) *failureSetup {
	t.Helper()
	f := &failureSetup{srv: redistest.Start(t), cat: newCatalog("http://unused")}
	c := f.cat
	rl := c.limit("four", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 4, Window: time.Hour})
	c.policy.RateLimitID = rl.ID
	closed := &snapshot.Policy{ID: c.id(), Slug: "strict", AllModels: true, AllHostKeys: true, RateLimitID: rl.ID, LimiterFailureMode: "closed"}
	const closedKey = "sk-wr-test-closed-0123456789abcdef"
	c.data.Policies = append(c.data.Policies, closed)
	c.data.RelayKeys = append(c.data.RelayKeys, &snapshot.RelayKey{ID: c.id(), Hash: sha256.Sum256([]byte(closedKey)),
		ProjectID: c.project.ID, ServiceAccountID: c.data.ServiceAccounts[0].ID, PolicyID: closed.ID})
	f.snap = c.build()
	cl, _ := f.snap.Authenticate(sha256.Sum256([]byte(closedKey)), time.Now())
	f.closedCaller = &cl
	prefix := redistest.Prefix(t)
	open := func() *Limiter {
		l := New(Options{Redis: client(t, f.srv.URL()), Prefix: prefix,
			Timeout: 100 * time.Millisecond, RetryDown: 50 * time.Millisecond})
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	f.a, f.b = open(), open()
	// Both pods heartbeat, then A reads the pod count: its local share
	// while Redis is down is a half.
	f.b.renew()
	f.a.renew()
	if n := f.a.Stats().Pods; n != 2 {
		t.Fatalf("pods %d, want 2", n)
	}
	return f
}

// admit runs one first attempt, failing the test if it takes longer than
// a generous bound: nothing may hang on Redis.
func (f *failureSetup) admit(t *testing.T, l *Limiter, closed bool) error {
	t.Helper()
	a := f.cat.admission(t, f.snap, 10, 1)
	if closed {
		a.Caller = f.closedCaller
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := attempt(ctx, l, a, nil, f.cat.binding)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("admission took %v with Redis unavailable", d)
	}
	return err
}

func TestLimiter_RedisDownFailsOpenOrClosedAndRecovers(t *testing.T) {
	t.Parallel()
	f := newFailureSetup(t)
	if err := f.admit(t, f.a, false); err != nil {
		t.Fatal(err)
	}

	f.srv.Stop()
	// Fail open: a local share of 4 / 2 pods = 2, then refused.
	for i := range 2 {
		if err := f.admit(t, f.a, false); err != nil {
			t.Fatalf("fail-open admission %d: %v", i, err)
		}
	}
	if err := f.admit(t, f.a, false); code(err) != "rate_limited" {
		t.Fatalf("the local share let a third through: %v", err)
	}
	// Fail closed: 503 limiter_unavailable.
	err := f.admit(t, f.a, true)
	if code(err) != "limiter_unavailable" {
		t.Fatalf("fail-closed: %v", err)
	}
	st := f.a.Stats()
	if st.FailOpen != 3 || st.FailClosed != 1 || st.StoreErrors == 0 || st.RedisAvailable {
		t.Fatalf("stats while down %+v", st)
	}

	// Redis comes back (empty, its script cache too): counting resumes
	// there without anyone's help.
	f.srv.Restart()
	eventually(t, "the limiter uses Redis again", func() bool {
		return f.admit(t, f.b, true) == nil
	})
	if !f.b.Stats().RedisAvailable {
		t.Fatal("pod B still thinks Redis is down")
	}
}

func TestLimiter_RedisTooSlowIsBoundedByTheTimeout(t *testing.T) {
	t.Parallel()
	f := newFailureSetup(t)
	f.srv.Pause(1500 * time.Millisecond)
	start := time.Now()
	if err := f.admit(t, f.a, true); code(err) != "limiter_unavailable" {
		t.Fatalf("fail-closed while Redis is paused: %v", err)
	}
	if err := f.admit(t, f.a, false); err != nil {
		t.Fatalf("fail-open while Redis is paused: %v", err)
	}
	t.Logf("two admissions with Redis paused took %v (timeout 100ms)", time.Since(start).Round(time.Millisecond))
	eventually(t, "Redis answers again", func() bool { return f.admit(t, f.b, true) == nil })
}

func TestLimiter_WithoutRedisIsOnePodsMemory(t *testing.T) {
	t.Parallel()
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	if _, ok := l.primary.(*Memory); !ok || l.redis != nil || l.fallback != nil {
		t.Fatalf("primary %T", l.primary)
	}
	var _ admission.KeyLimiter = l
}
