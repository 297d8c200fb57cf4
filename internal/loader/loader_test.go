package loader

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
)

type bundle struct {
	url string
	st  *store.Store
	box *secret.Box
}

func setup(t *testing.T) *bundle {
	t.Helper()
	url := pgtest.NewDB(t)
	return &bundle{url: url, st: openStore(t, url), box: newBox(t)}
}

func openStore(t *testing.T, url string) *store.Store { return openStoreB(t, url) }

func openStoreB(t testing.TB, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func newBoxKey() (*secret.Box, error) {
	key, _ := secret.ParseKey(secret.NewKey())
	return secret.NewBox(key)
}

func newBox(t *testing.T) *secret.Box {
	t.Helper()
	box, err := newBoxKey()
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func (b *bundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := b.st.Pool().Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// seed writes a small catalog: a team, project, policy, service account with a
// relay key, a host with a sealed key and an env-referenced key, a model and
// its binding.
func (b *bundle) seed(t *testing.T) {
	t.Helper()
	sealed, err := b.box.Seal("sk-upstream-sealed")
	if err != nil {
		t.Fatal(err)
	}
	hash := sha256.Sum256([]byte("sk-wr-test"))
	b.exec(t, `
WITH t AS (INSERT INTO teams (slug) VALUES ('acme') RETURNING id),
     p AS (INSERT INTO projects (team_id, slug) SELECT id, 'web' FROM t RETURNING id),
     pol AS (INSERT INTO policies (slug, all_models, all_host_keys) VALUES ('default', true, true) RETURNING id),
     sa AS (INSERT INTO service_accounts (project_id, slug, policy_id) SELECT p.id, 'svc', pol.id FROM p, pol RETURNING id, project_id),
     k AS (INSERT INTO relay_keys (key_hash, display_prefix, project_id, service_account_id) SELECT $1, 'sk-wr-tes', project_id, id FROM sa RETURNING id),
     h AS (INSERT INTO hosts (slug, provider, base_url) VALUES ('mock', 'openai', 'http://127.0.0.1:1') RETURNING id),
     hk1 AS (INSERT INTO host_keys (host_id, slug, secret_ciphertext) SELECT id, 'sealed', $2::bytea FROM h RETURNING id),
     hk2 AS (INSERT INTO host_keys (host_id, slug, secret_ref, position) SELECT id, 'from-env', 'env:LOADER_TEST_KEY', 1 FROM h RETURNING id),
     m AS (INSERT INTO models (name) VALUES ('gpt-test') RETURNING id)
INSERT INTO bindings (model_id, host_id, shape, upstream_model) SELECT m.id, h.id, 'openai', 'gpt-upstream' FROM m, h`,
		hash[:], sealed)
}

func (b *bundle) loader(t *testing.T, st *store.Store, log *slog.Logger) (*Loader, chan *snapshot.Snapshot) {
	t.Helper()
	swaps := make(chan *snapshot.Snapshot, 64)
	l := New(st, b.box, log, Options{
		Debounce: 20 * time.Millisecond,
		Getenv:   func(k string) string { return map[string]string{"LOADER_TEST_KEY": "sk-upstream-env"}[k] },
		OnSwap: func(s *snapshot.Snapshot) {
			select {
			case swaps <- s:
			default:
			}
		},
	})
	return l, swaps
}

func run(t *testing.T, l *Loader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); l.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// waitFor returns the first published snapshot satisfying ok, or fails after 5 s.
func waitFor(t *testing.T, swaps <-chan *snapshot.Snapshot, ok func(*snapshot.Snapshot) bool) *snapshot.Snapshot {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case s := <-swaps:
			if ok(s) {
				return s
			}
		case <-deadline:
			t.Fatal("no matching snapshot within 5s")
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestLoader_LoadsPopulatedCatalog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	var logs bytes.Buffer
	l, _ := b.loader(t, b.st, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if l.Ready() {
		t.Fatal("ready before the first load")
	}
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := l.Current()
	c, res := s.Authenticate(sha256.Sum256([]byte("sk-wr-test")), time.Now())
	if res != snapshot.AuthOK || c.Policy == nil || c.Policy.Slug != "default" {
		t.Fatalf("authenticate: %v %+v", res, c)
	}
	m := s.ModelByName("gpt-test")
	if m == nil || len(s.Bindings(m.ID)) != 1 || s.Bindings(m.ID)[0].UpstreamModel != "gpt-upstream" {
		t.Fatal("model or binding missing")
	}
	keys := s.HostKeys(s.HostBySlug("mock").ID)
	if len(keys) != 2 || keys[0].Secret.Reveal() != "sk-upstream-sealed" || keys[1].Secret.Reveal() != "sk-upstream-env" || !keys[0].Usable {
		t.Fatalf("host keys not resolved: %+v", keys)
	}
	if strings.Contains(logs.String(), "sk-upstream") {
		t.Fatal("a host key reached the log")
	}
}

func TestLoader_UnresolvableHostKeyIsUnusable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	l := New(b.st, b.box, quiet(), Options{}) // no environment: env:LOADER_TEST_KEY is missing
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys := l.Current().HostKeys(l.Current().HostBySlug("mock").ID)
	if keys[1].Usable || !strings.Contains(keys[1].Problem, "LOADER_TEST_KEY") {
		t.Fatalf("env key without its variable: %+v", keys[1])
	}
}

// TestLoader_FollowsWritesFromAnotherConnection runs two loaders on separate
// pools (as two pods would) and checks both pick up a write made elsewhere.
func TestLoader_FollowsWritesFromAnotherConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	l1, swaps1 := b.loader(t, openStore(t, b.url), quiet())
	l2, swaps2 := b.loader(t, openStore(t, b.url), quiet())
	run(t, l1)
	run(t, l2)
	waitFor(t, swaps1, func(*snapshot.Snapshot) bool { return true })
	waitFor(t, swaps2, func(*snapshot.Snapshot) bool { return true })

	b.exec(t, `INSERT INTO models (name) VALUES ('new-model')`)
	for _, sw := range []chan *snapshot.Snapshot{swaps1, swaps2} {
		waitFor(t, sw, func(s *snapshot.Snapshot) bool { return s.ModelByName("new-model") != nil })
	}
	// A revoke propagates too, and the old snapshot object is left intact.
	before := l1.Current()
	b.exec(t, `UPDATE relay_keys SET revoked_at = now()`)
	s := waitFor(t, swaps1, func(s *snapshot.Snapshot) bool {
		_, res := s.Authenticate(sha256.Sum256([]byte("sk-wr-test")), time.Now())
		return res == snapshot.AuthRevoked
	})
	if s.Version() <= before.Version() {
		t.Fatal("version did not increase")
	}
	if _, res := before.Authenticate(sha256.Sum256([]byte("sk-wr-test")), time.Now()); res != snapshot.AuthOK {
		t.Fatal("published snapshot was mutated")
	}
	// Join-table writes reach their owner: removing every grant of a policy.
	b.exec(t, `UPDATE policies SET all_models = false`)
	waitFor(t, swaps2, func(s *snapshot.Snapshot) bool {
		c, _ := s.Authenticate(sha256.Sum256([]byte("sk-wr-test")), time.Now().Add(-time.Hour))
		return c.Policy != nil && !c.Policy.AllModels
	})
	// Deleting a row removes it.
	b.exec(t, `DELETE FROM bindings`)
	waitFor(t, swaps2, func(s *snapshot.Snapshot) bool {
		m := s.ModelByName("gpt-test")
		return m != nil && len(s.Bindings(m.ID)) == 0
	})
}

// TestLoader_RecoversAfterListenerIsTerminated kills the LISTEN connection,
// writes while it is down, and expects the reconnect's full reload to catch it.
func TestLoader_RecoversAfterListenerIsTerminated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	l, swaps := b.loader(t, openStore(t, b.url), quiet())
	run(t, l)
	waitFor(t, swaps, func(*snapshot.Snapshot) bool { return true })

	// Terminate the listener and, in the same statement's transaction, write a
	// row: its notification goes nowhere, since nobody listens any more.
	b.exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`)
	b.exec(t, `INSERT INTO models (name) VALUES ('while-down')`)
	waitFor(t, swaps, func(s *snapshot.Snapshot) bool { return s.ModelByName("while-down") != nil })
	// And it listens again afterwards.
	b.exec(t, `INSERT INTO models (name) VALUES ('after-reconnect')`)
	waitFor(t, swaps, func(s *snapshot.Snapshot) bool { return s.ModelByName("after-reconnect") != nil })
}

// TestLoader_DebouncesBursts checks a burst of writes lands in few swaps.
func TestLoader_DebouncesBursts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	l, swaps := b.loader(t, openStore(t, b.url), quiet())
	l.opts.Debounce = 300 * time.Millisecond
	run(t, l)
	waitFor(t, swaps, func(*snapshot.Snapshot) bool { return true })
	start := l.Version()
	b.exec(t, `INSERT INTO models (name) SELECT 'burst-' || g FROM generate_series(1, 200) g`)
	s := waitFor(t, swaps, func(s *snapshot.Snapshot) bool { return s.ModelByName("burst-200") != nil })
	if s.Version()-start > 2 {
		t.Fatalf("a burst of 200 rows took %d swaps", s.Version()-start)
	}
	if len(s.Models()) != 201 {
		t.Fatalf("models = %d, want 201", len(s.Models()))
	}
}

// TestLoader_FillsRoutingFields checks the routing fields reach the snapshot
// on the first load and after a change, including a fallback list that loses
// a deleted model.
func TestLoader_FillsRoutingFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	b.exec(t, `INSERT INTO models (name, strategy) VALUES ('alt-a', 'latency'), ('alt-b', 'priority')`)
	b.exec(t, `UPDATE models SET strategy = 'weighted',
		fallbacks = ARRAY[(SELECT id FROM models WHERE name = 'alt-a'), (SELECT id FROM models WHERE name = 'alt-b')]
		WHERE name = 'gpt-test'`)
	b.exec(t, `UPDATE bindings SET weight = 5`)
	b.exec(t, `UPDATE policies SET route_strategy = 'cost', affinity = 'binding', budget_fallback = true,
		degrade_after_ms = 1500, degrade_below_priority = -2`)
	l, swaps := b.loader(t, b.st, quiet())
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := l.Current()
	m, a, alt := s.ModelByName("gpt-test"), s.ModelByName("alt-a"), s.ModelByName("alt-b")
	if m.Strategy != snapshot.RouteWeighted || len(m.Fallbacks) != 2 || m.Fallbacks[0] != a.ID || m.Fallbacks[1] != alt.ID {
		t.Fatalf("model: strategy %q, fallbacks %v", m.Strategy, m.Fallbacks)
	}
	if a.Strategy != snapshot.RouteLatency || a.Fallbacks != nil {
		t.Errorf("alt-a: strategy %q, fallbacks %v", a.Strategy, a.Fallbacks)
	}
	if w := s.Bindings(m.ID)[0].Weight; w != 5 {
		t.Errorf("binding weight %d", w)
	}
	c, _ := s.Authenticate(sha256.Sum256([]byte("sk-wr-test")), time.Now())
	if p := c.Policy; p.RouteStrategy != snapshot.RouteCost || p.Affinity != snapshot.AffinityBinding || !p.BudgetFallback {
		t.Errorf("policy: %q %q %v", p.RouteStrategy, p.Affinity, p.BudgetFallback)
	}
	if p := c.Policy; !p.HasDegradeAfter || p.DegradeAfter != 1500*time.Millisecond || !p.HasDegradeBelow || p.DegradeBelowPriority != -2 {
		t.Errorf("policy degrade: %v %v %v %v", p.HasDegradeAfter, p.DegradeAfter, p.HasDegradeBelow, p.DegradeBelowPriority)
	}

	run(t, l)
	b.exec(t, `DELETE FROM models WHERE name = 'alt-a'`)
	waitFor(t, swaps, func(s *snapshot.Snapshot) bool {
		m := s.ModelByName("gpt-test")
		return s.ModelByName("alt-a") == nil && len(m.Fallbacks) == 1 && m.Fallbacks[0] == alt.ID
	})
}

// A host's breaker thresholds reach the snapshot; NULL is 0 (the process
// setting), and a change is picked up by the next swap.
func TestLoader_CarriesHostBreakerThresholds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	b.exec(t, `UPDATE hosts SET breaker_server_failures = 1 WHERE slug = 'mock'`)
	l, swaps := b.loader(t, b.st, quiet())
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := l.Current().HostBySlug("mock"); h.BreakerServerFailures != 1 || h.BreakerNetworkFailures != 0 {
		t.Fatalf("host thresholds %d %d, want 1 0", h.BreakerServerFailures, h.BreakerNetworkFailures)
	}
	run(t, l)
	b.exec(t, `UPDATE hosts SET breaker_server_failures = NULL, breaker_network_failures = 9 WHERE slug = 'mock'`)
	waitFor(t, swaps, func(s *snapshot.Snapshot) bool {
		h := s.HostBySlug("mock")
		return h.BreakerServerFailures == 0 && h.BreakerNetworkFailures == 9
	})
}
