package ratelimit

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

const testRelayKey = "sk-wr-test-ratelimit-0123456789abcdef"

// catalog is a small snapshot: one team, project, relay key, policy,
// model, host, host key and binding. Tests shape it before build.
type catalog struct {
	n       byte
	seed    byte // tells catalogs' IDs apart (0: the default)
	data    snapshot.Data
	team    *snapshot.Team
	project *snapshot.Project
	key     *snapshot.RelayKey
	policy  *snapshot.Policy
	model   *snapshot.Model
	host    *snapshot.Host
	hostKey *snapshot.HostKey
	binding *snapshot.Binding
}

func (c *catalog) id() uuid.UUID {
	c.n++
	return uuid.UUID{0x7a, c.n, c.seed}
}

func newCatalog(baseURL string) *catalog { return newSeededCatalog(baseURL, 0) }

// newSeededCatalog is newCatalog with IDs of its own: catalogs of different
// seeds name different policies, host keys and budgets.
func newSeededCatalog(baseURL string, seed byte) *catalog {
	c := &catalog{seed: seed}
	c.team = &snapshot.Team{ID: c.id(), Slug: "team"}
	c.project = &snapshot.Project{ID: c.id(), TeamID: c.team.ID, Slug: "proj"}
	c.policy = &snapshot.Policy{ID: c.id(), Slug: "pol", AllModels: true, AllHostKeys: true,
		KeyStrategy: snapshot.StrategyPrioritized, MaxAttempts: 3, LimiterFailureMode: "open",
		Affinity: snapshot.AffinityOff} // the tests walk keys in position order
	sa := &snapshot.ServiceAccount{ID: c.id(), ProjectID: c.project.ID, Slug: "app", PolicyID: c.policy.ID}
	c.key = &snapshot.RelayKey{ID: c.id(), Hash: sha256.Sum256([]byte(testRelayKey)), ProjectID: c.project.ID, ServiceAccountID: sa.ID}
	c.model = &snapshot.Model{ID: c.id(), Name: "gpt-test", Kind: "chat", MaxOutputTokens: 1000}
	c.host = &snapshot.Host{ID: c.id(), Slug: "mock", BaseURL: baseURL, Enabled: true}
	c.hostKey = &snapshot.HostKey{ID: c.id(), HostID: c.host.ID, Slug: "k1", Secret: snapshot.NewSecret("sk-up-test"),
		SecretVersion: 1, Enabled: true, Usable: true}
	c.binding = &snapshot.Binding{ID: c.id(), ModelID: c.model.ID, HostID: c.host.ID, Shape: wire.ShapeOpenAI,
		UpstreamModel: "gpt-4o-mini", Enabled: true,
		Pricing: snapshot.Pricing{Input: 1_000_000, Output: 2_000_000, Reasoning: 2_000_000}}
	c.data = snapshot.Data{
		Teams: []*snapshot.Team{c.team}, Projects: []*snapshot.Project{c.project},
		ServiceAccounts: []*snapshot.ServiceAccount{sa}, Policies: []*snapshot.Policy{c.policy},
		RelayKeys: []*snapshot.RelayKey{c.key}, Models: []*snapshot.Model{c.model},
		Hosts: []*snapshot.Host{c.host}, HostKeys: []*snapshot.HostKey{c.hostKey},
		Bindings: []*snapshot.Binding{c.binding},
	}
	return c
}

// limit adds a rate limit with the given rules.
func (c *catalog) limit(slug string, rules ...snapshot.Rule) *snapshot.RateLimit {
	rl := &snapshot.RateLimit{ID: c.id(), Slug: slug}
	for i := range rules {
		r := rules[i]
		r.ID, r.RateLimitID = c.id(), rl.ID
		rl.Rules = append(rl.Rules, &r)
	}
	c.data.RateLimits = append(c.data.RateLimits, rl)
	return rl
}

func (c *catalog) budget(b snapshot.Budget) *snapshot.Budget {
	b.ID = c.id()
	c.data.Budgets = append(c.data.Budgets, &b)
	return &b
}

func (c *catalog) build() *snapshot.Snapshot { return snapshot.Build(&c.data, 1, time.Now()) }

// caller is how the snapshot authenticates the catalog's relay key.
func (c *catalog) caller(t testing.TB, snap *snapshot.Snapshot) *snapshot.Caller {
	t.Helper()
	cl, res := snap.Authenticate(c.key.Hash, time.Now())
	if res != snapshot.AuthOK {
		t.Fatalf("authenticate: %v", res)
	}
	return &cl
}

// admission is a chat request of bodyBytes asking for maxTokens.
func (c *catalog) admission(t testing.TB, snap *snapshot.Snapshot, bodyBytes int, maxTokens int64) *admission.Admission {
	return &admission.Admission{Caller: c.caller(t, snap), Model: snap.Model(c.model.ID), Snapshot: snap,
		Inbound: wire.InboundChat, BodyBytes: bodyBytes, MaxTokens: maxTokens, Header: http.Header{}}
}

// backend is one way to run limiters: open returns n limiters ("pods")
// sharing their counters.
type backend struct {
	name  string
	redis bool
	open  func(t *testing.T, n int, opts Options) []*Limiter
}

func backends() []backend {
	return []backend{
		{"memory", false, func(t *testing.T, n int, opts Options) []*Limiter {
			if n != 1 {
				t.Fatal("memory counters are one pod's")
			}
			l := New(opts)
			t.Cleanup(func() { _ = l.Close() })
			return []*Limiter{l}
		}},
		{"redis", true, func(t *testing.T, n int, opts Options) []*Limiter {
			return openRedis(t, redistest.URL(t), n, opts)
		}},
		// The same suites on a 3-master Redis Cluster (cluster_test.go).
		{"redis-cluster", true, func(t *testing.T, n int, opts Options) []*Limiter {
			return openRedis(t, clusterURL(t), n, opts)
		}},
	}
}

// openRedis opens n limiters ("pods") on the Redis at url, under one
// prefix of t's own.
func openRedis(t *testing.T, url string, n int, opts Options) []*Limiter {
	prefix := redistest.Prefix(t)
	var out []*Limiter
	for range n {
		o := opts
		o.Redis, o.Prefix = client(t, url), prefix
		if o.Timeout == 0 {
			// These tests are about exactness, not Redis being slow
			// (miniredis, the race detector): never fall back.
			o.Timeout = 5 * time.Second
		}
		l := New(o)
		t.Cleanup(func() { _ = l.Close() })
		out = append(out, l)
	}
	return out
}

// attempt reserves and admits one request's first attempt.
func attempt(ctx context.Context, l *Limiter, a *admission.Admission, key *snapshot.HostKey, b *snapshot.Binding) (admission.Reservation, error) {
	r, err := l.Reserve(a)
	if err != nil {
		return nil, err
	}
	return r, r.Attempt(ctx, key, b)
}

// code is the error code a limiter error becomes.
func code(err error) string {
	if err == nil {
		return ""
	}
	var we *wire.Error
	if !errors.As(err, &we) {
		return "not a wire error: " + err.Error()
	}
	_, c := wire.Classify(err)
	return c
}

// tally counts outcomes of concurrent calls.
type tally struct {
	mu    sync.Mutex
	codes map[string]int
}

func (t *tally) add(c string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.codes == nil {
		t.codes = map[string]int{}
	}
	t.codes[c]++
}

// flush waits for every settlement handed over so far.
func flush(t *testing.T, ls ...*Limiter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, l := range ls {
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}

// client is a limiter's Redis client for url, closed when t ends.
func client(t testing.TB, url string) redis.UniversalClient {
	t.Helper()
	c, err := NewRedisClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
