package ratelimit

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
)

const chatBody = `{"model":"gpt-test","messages":[{"role":"user","content":"hello"}]}`

// relay is a proxy in front of a mock upstream with a limiter.
type relay struct {
	mock *mockupstream.Server
	cat  *catalog
	srv  *httptest.Server
}

func newRelay(t *testing.T) *relay {
	t.Helper()
	mock := mockupstream.New(mockupstream.Options{})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	return &relay{mock: mock, cat: newCatalog(up.URL)}
}

// start serves the proxy with the catalog as it stands and cfg's limiter
// and breakers.
func (r *relay) start(t *testing.T, cfg proxy.Config) {
	t.Helper()
	snap := r.cat.build()
	cfg.Snapshot = func() *snapshot.Snapshot { return snap }
	r.srv = httptest.NewServer(proxy.New(cfg))
	t.Cleanup(r.srv.Close)
}

func (r *relay) post(t *testing.T, path, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, r.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testRelayKey)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return &http.Response{}, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestProxy_BurstReachesTheProviderAsARamp(t *testing.T) {
	t.Parallel()
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			rl := newRelay(t)
			c := rl.cat
			c.hostKey.TierRateLimitID = c.limit("tier", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 10, Window: time.Second}).ID
			c.policy.MaxWait = 10 * time.Second
			opts := Options{} // the default slack: 50ms per window
			if raceDetector {
				opts.SpacingSlack = 250 * time.Millisecond
			}
			l := be.open(t, 1, opts)[0]
			rl.start(t, proxy.Config{Limiter: l})

			// One request first: the connections to the upstream are up, as
			// they are in a running Relay. Then a burst.
			if resp, body := rl.post(t, "/v1/chat/completions", chatBody, nil); resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			const n = 30
			var wg sync.WaitGroup
			var got tally
			for range n - 1 {
				wg.Go(func() {
					resp, body := rl.post(t, "/v1/chat/completions", chatBody, nil)
					if resp.StatusCode != 200 {
						t.Errorf("%d %s", resp.StatusCode, body)
					}
					got.add(resp.Status)
				})
			}
			wg.Wait()
			reqs := rl.mock.Requests()
			if len(reqs) != n {
				t.Fatalf("the upstream saw %d requests, want %d (%v)", len(reqs), n, got.codes)
			}
			at := make([]time.Time, len(reqs))
			for i, r := range reqs {
				at[i] = r.ReceivedAt
			}
			sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
			for i := 10; i < len(at); i++ {
				if d := at[i].Sub(at[i-10]); d < time.Second {
					t.Fatalf("11 requests reached the upstream within %v (#%d to #%d)", d, i-10, i)
				}
			}
			t.Logf("%d requests over %v", n, at[n-1].Sub(at[0]).Round(time.Millisecond))
		})
	}
}

func TestProxy_RefusalsInTheCallersShape(t *testing.T) {
	t.Parallel()
	rl := newRelay(t)
	c := rl.cat
	c.policy.RateLimitID = c.limit("one", snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1, Window: time.Minute}).ID
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	rl.start(t, proxy.Config{Limiter: l})

	if resp, body := rl.post(t, "/v1/chat/completions", chatBody, nil); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, body := rl.post(t, "/v1/chat/completions", chatBody, nil)
	var oa struct {
		Error struct{ Type, Code, Message string }
	}
	_ = json.Unmarshal([]byte(body), &oa)
	if resp.StatusCode != 429 || oa.Error.Code != "rate_limited" || oa.Error.Type != "rate_limit_error" || !strings.Contains(oa.Error.Message, `"one"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "60" && ra != "61" { // the window's bucket rounds up
		t.Errorf("Retry-After %q", ra)
	}
	if resp.Header.Get("X-Ratelimit-Limit-Requests") != "1" || resp.Header.Get("X-Ratelimit-Remaining-Requests") != "0" || resp.Header.Get("X-Ratelimit-Reset-Requests") == "" {
		t.Errorf("headers %v", resp.Header)
	}

	resp, body = rl.post(t, "/anthropic/v1/messages", `{"model":"gpt-test","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"anthropic-version": "2023-06-01"})
	var an struct {
		Type  string
		Error struct{ Type string }
	}
	_ = json.Unmarshal([]byte(body), &an)
	if resp.StatusCode != 429 || an.Type != "error" || an.Error.Type != "rate_limit_error" {
		t.Fatalf("anthropic shape: %d %s", resp.StatusCode, body)
	}
}

func TestProxy_BudgetExceeded(t *testing.T) {
	t.Parallel()
	rl := newRelay(t)
	c := rl.cat
	c.budget(snapshot.Budget{TeamID: c.team.ID, Period: "day", Amount: 1})
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	rl.start(t, proxy.Config{Limiter: l})
	resp, body := rl.post(t, "/v1/chat/completions", chatBody, nil)
	if resp.StatusCode != 429 || !strings.Contains(body, `"budget_exceeded"`) || !strings.Contains(body, "team") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// ctxMark marks the context of requests the round-trip hook counts.
type ctxMark struct{}

// tripCounter counts Redis commands (a pipeline is one round trip) made
// with a marked context: those on the request path. A new connection's
// handshake (HELLO, CLIENT SETINFO) is counted apart: the pool pays it
// once per connection, not per request.
type tripCounter struct {
	trips, reserves, handshakes atomic.Int64
}

func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select", "cluster": // cluster: the client's slot map
		return true
	}
	return false
}

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// reserve reports whether cmd runs the script in reserve mode.
func reserve(cmd redis.Cmder) bool {
	a := cmd.Args()
	if len(a) > 3 && (a[0] == "evalsha" || a[0] == "eval") {
		if n, ok := a[2].(int); ok && len(a) > 3+n && a[3+n] == "r" {
			return true
		}
	}
	return false
}

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(ctxMark{}) != nil {
			if handshake(cmd) {
				c.handshakes.Add(1)
				return next(ctx, cmd)
			}
			c.trips.Add(1)
			if reserve(cmd) {
				c.reserves.Add(1)
			}
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts a pipeline as one round trip: its commands
// leave together (on a cluster, to each master in parallel), and one
// reservation however many scripts it holds.
func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(ctxMark{}) != nil {
			if len(cmds) > 0 && handshake(cmds[0]) {
				c.handshakes.Add(1)
			} else {
				c.trips.Add(1)
				if slices.ContainsFunc(cmds, reserve) {
					c.reserves.Add(1)
				}
			}
		}
		return next(ctx, cmds)
	}
}

// TestProxy_OneRedisRoundTripPerRequest counts the Redis round trips on the
// request path: one per request, on one Redis (one script call for every
// counter) and on a Redis Cluster (one script per owner — policy, host key,
// budget — sent together in one pipeline).
func TestProxy_OneRedisRoundTripPerRequest(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"redis", "redis-cluster"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			oneRoundTripPerRequest(t, backend)
		})
	}
}

func oneRoundTripPerRequest(t *testing.T, backend string) {
	rl := newRelay(t)
	c := rl.cat
	c.policy.RateLimitID = c.limit("policy",
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1000, Window: time.Minute},
		snapshot.Rule{Meter: snapshot.MeterTotalTokens, Amount: 10_000_000, Window: time.Minute},
		snapshot.Rule{Meter: snapshot.MeterConcurrency, Amount: 100}).ID
	c.hostKey.TierRateLimitID = c.limit("tier",
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 1000, Window: time.Second},
		snapshot.Rule{Meter: snapshot.MeterInputTokens, Amount: 10_000_000, Window: time.Minute}).ID
	c.budget(snapshot.Budget{ProjectID: c.project.ID, Period: "month", Amount: 1 << 40})

	url, prefix := redistest.URL(t), redistest.Prefix(t)
	if backend == "redis-cluster" {
		url = clusterURL(t)
	}
	rc := client(t, url)
	trips := &tripCounter{}
	rc.AddHook(trips)
	l := New(Options{Redis: rc, Prefix: prefix, Timeout: 5 * time.Second})
	t.Cleanup(func() { _ = l.Close() })
	breakers := keypool.NewRedisBreakers(rc, keypool.BreakerConfig{}, keypool.RedisBreakerOptions{Prefix: prefix})
	t.Cleanup(func() { _ = breakers.Close() })
	snap := c.build()
	h := proxy.New(proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }, Limiter: l, Breakers: breakers})
	rl.srv = httptest.NewUnstartedServer(h)
	rl.srv.Config.BaseContext = func(net.Listener) context.Context { return context.WithValue(context.Background(), ctxMark{}, true) }
	rl.srv.Start()
	t.Cleanup(rl.srv.Close)

	const n = 50
	for range n {
		if resp, body := rl.post(t, "/v1/chat/completions", chatBody, nil); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	if got, res := trips.trips.Load(), trips.reserves.Load(); got != n || res != n {
		t.Fatalf("%d round trips (%d reservations) on the request path for %d requests, want %d", got, res, n, n)
	}
	t.Logf("Redis round trips per request on the request path: %.2f (plus %d connection handshakes)", float64(trips.trips.Load())/n, trips.handshakes.Load())
	flush(t, l)
	if st := l.Stats(); st.SettleErrors != 0 || st.FailOpen != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestProxy_FailoverReservesTheNextKeysTier(t *testing.T) {
	t.Parallel()
	rl := newRelay(t)
	c := rl.cat
	c.hostKey.Secret = snapshot.NewSecret("sk-up-fault-500-first") // the mock answers 500
	tier := c.limit("tier",
		snapshot.Rule{Meter: snapshot.MeterRequests, Amount: 5, Window: time.Minute},
		snapshot.Rule{Meter: snapshot.MeterInputTokens, Amount: 1_000_000, Window: time.Minute})
	c.hostKey.TierRateLimitID = tier.ID
	second := &snapshot.HostKey{ID: c.id(), HostID: c.host.ID, Slug: "k2", Secret: snapshot.NewSecret("sk-up-second"),
		SecretVersion: 1, Position: 1, Enabled: true, Usable: true, TierRateLimitID: tier.ID}
	c.data.HostKeys = append(c.data.HostKeys, second)
	l := New(Options{})
	t.Cleanup(func() { _ = l.Close() })
	rl.start(t, proxy.Config{Limiter: l, RetryBackoff: time.Millisecond})

	resp, body := rl.post(t, "/v1/chat/completions", chatBody, nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Attempts") != "2" {
		t.Fatalf("%d %s (attempts %s)", resp.StatusCode, body, resp.Header.Get("X-Relay-Attempts"))
	}
	flush(t, l)
	level := func(k *snapshot.HostKey, rule *snapshot.Rule) int64 {
		v, err := l.primary.Peek(t.Context(), []Counter{ruleCounter(tierKey(k.ID, tier.ID), rule, snapshot.ID{}, 0, "", time.Minute)}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return v.Used[0]
	}
	reqs, toks := tier.Rules[0], tier.Rules[1]
	if level(c.hostKey, reqs) != 1 || level(c.hostKey, toks) != 0 {
		t.Errorf("failed key: %d requests, %d tokens; want 1 and 0 (the estimate given back)", level(c.hostKey, reqs), level(c.hostKey, toks))
	}
	if level(second, reqs) != 1 || level(second, toks) == 0 {
		t.Errorf("answering key: %d requests, %d tokens", level(second, reqs), level(second, toks))
	}
}
