package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/redis/go-redis/v9"
	"github.com/relay-llm/relay/internal/mockupstream"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/ratelimit"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
)

// multipodCatalog is what the pods serve, applied with `relay apply`: one
// host on the test's mock upstream with a host key that the upstream refuses
// (401) ahead of a good one, a fast and a slow model, and one service
// account per property under test, each with its own policy.
const multipodCatalog = `
kind: Team
spec: {slug: mp, name: Multipod}
---
kind: Project
spec: {team: mp, slug: app}
---
kind: RateLimit
spec:
  slug: fifty
  rules:
    - {meter: requests, amount: 50, window_seconds: 3600}
---
kind: RateLimit
spec:
  slug: two-at-once
  rules:
    - {meter: concurrency, amount: 2}
---
kind: Host
spec: {slug: mock, provider: openai, base_url: "%s"}
---
kind: Model
spec: {name: mp-chat, provider: openai}
---
kind: Model
spec: {name: mp-slow, provider: openai}
---
kind: Binding
spec: {model: mp-chat, host: mock, shape: openai, upstream_model: gpt-4o-mini, input_price: 1000000, output_price: 2000000}
---
kind: Binding
spec: {model: mp-slow, host: mock, shape: openai, upstream_model: gpt-fault-slow-60000}
---
kind: HostKey
spec: {host: mock, slug: good, secret_ref: env:RELAY_SECRET_MULTIPOD_GOOD_KEY, position: 1}
---
kind: HostKey
spec: {host: mock, slug: refused, secret_ref: env:RELAY_SECRET_MULTIPOD_REFUSED_KEY, position: 0}
---
kind: Policy
spec: {slug: open, all_models: true, host_keys: [mock/good]}
---
kind: Policy
spec: {slug: limited, all_models: true, host_keys: [mock/good], rate_limit: fifty, limiter_failure_mode: closed}
---
kind: Policy
spec: {slug: narrow, all_models: true, host_keys: [mock/good], rate_limit: two-at-once}
---
kind: Policy
spec: {slug: both-keys, all_models: true, host_keys: [mock/good, mock/refused], affinity: "off"}
---
kind: ServiceAccount
spec: {project: mp/app, slug: load, policy: open}
---
kind: ServiceAccount
spec: {project: mp/app, slug: limited, policy: limited}
---
kind: ServiceAccount
spec: {project: mp/app, slug: narrow, policy: narrow}
---
kind: ServiceAccount
spec: {project: mp/app, slug: breaker, policy: both-keys}
---
kind: Project
spec: {team: mp, slug: spend}
---
kind: Model
spec: {name: mp-priced, provider: openai}
---
kind: Binding
spec: {model: mp-priced, host: mock, shape: openai, upstream_model: gpt-4o-mini, input_price: 0, output_price: %d}
---
kind: Budget
spec: {project: mp/spend, period: month, amount: %d}
---
kind: Policy
spec: {slug: budgeted, all_models: true, host_keys: [mock/good], limiter_failure_mode: closed}
---
kind: ServiceAccount
spec: {project: mp/spend, slug: spender, policy: budgeted}
`

// The budget case: the project mp/spend may spend exactly what
// multipodBudgetRequests requests of mp-priced cost. Its input is free and a
// request asks for multipodMaxTokens output tokens, which the mock upstream's
// reply (longer than that) always fills: the estimate reserved at admission
// (max_tokens at the output price) and the actual cost settled after are the
// same, 4 tokens × 1,000 per million = 4,000 micro-units, so the count
// admitted does not depend on when settlements land.
const (
	multipodBudgetRequests = 40
	multipodMaxTokens      = 4
	multipodOutputPrice    = 1_000_000_000 // micro-units per million tokens
	multipodRequestCost    = multipodMaxTokens * multipodOutputPrice / 1_000_000
	multipodBudget         = multipodBudgetRequests * multipodRequestCost
)

const (
	multipodGoodKey    = "sk-up-multipod-good"
	multipodRefusedKey = "sk-up-multipod-fault-401" // the mock upstream answers 401 to it
)

// cluster is N relay pods on one Postgres and one Redis, with the mock
// upstream they all send to.
type cluster struct {
	t        *testing.T
	db       string
	env      []string
	upstream *mockupstream.Server
	pods     []*proc
}

func newCluster(t *testing.T, pods int, redisURL, debounce string, extraEnv ...string) *cluster {
	t.Helper()
	return newClusterBefore(t, pods, redisURL, debounce, nil, extraEnv...)
}

// newClusterBefore is newCluster with the upstream's requests going
// through front first (nil: none), to hold or time them. extraEnv is added
// to every pod's environment.
func newClusterBefore(t *testing.T, pods int, redisURL, debounce string, front func(http.Handler) http.Handler, extraEnv ...string) *cluster {
	t.Helper()
	up := mockupstream.New(mockupstream.Options{Record: 100_000})
	var h http.Handler = up
	if front != nil {
		h = front(up)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c := &cluster{t: t, db: pgtest.NewDB(t), upstream: up, env: []string{
		"RELAY_DEMO=false",
		"RELAY_MASTER_KEY=" + secret.NewKey(),
		"RELAY_ADMIN_TOKEN=" + e2eAdminToken,
		"RELAY_REDIS_URL=" + redisURL,
		"RELAY_REDIS_PREFIX=" + redistest.Prefix(t),
		"RELAY_SNAPSHOT_DEBOUNCE=" + debounce,
		// Exactness, not a slow Redis: two cores serving 200 callers at
		// once can take longer than the default 100 ms bound.
		"RELAY_REDIS_TIMEOUT=2s",
		"RELAY_SECRET_MULTIPOD_GOOD_KEY=" + multipodGoodKey,
		"RELAY_SECRET_MULTIPOD_REFUSED_KEY=" + multipodRefusedKey,
	}}
	c.env = append(c.env, extraEnv...)
	start := time.Now()
	c.pods = make([]*proc, pods)
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() { c.pods[i] = startRelay(t, c.db, false, c.env...) })
	}
	wg.Wait()
	for _, p := range c.pods {
		waitReady(t, p.inference)
	}
	c.apply(fmt.Sprintf(multipodCatalog, ts.URL, multipodOutputPrice, multipodBudget))
	t.Logf("%d pods up and the catalog applied in %s", pods, time.Since(start))
	return c
}

// start adds a pod and waits until it is ready.
func (c *cluster) start() *proc {
	c.t.Helper()
	p := startRelay(c.t, c.db, false, c.env...)
	waitReady(c.t, p.inference)
	c.pods = append(c.pods, p)
	return p
}

// cli runs a relay subcommand against the first pod's control plane.
func (c *cluster) cli(stdin string, args ...string) string {
	c.t.Helper()
	cmd := exec.Command(relayBin, args...)
	cmd.Env = append(os.Environ(), "RELAY_URL="+c.pods[0].control, "RELAY_ADMIN_TOKEN="+e2eAdminToken)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		c.t.Fatalf("relay %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

func (c *cluster) apply(yaml string) { c.cli(yaml, "apply", "-f", "-") }

// mint mints a relay key for a service account of mp/app and waits until
// every running pod accepts it.
func (c *cluster) mint(serviceAccount string) string {
	c.t.Helper()
	return c.mintIn("mp/app", serviceAccount)
}

// mintIn is mint for a service account of another project.
func (c *cluster) mintIn(project, serviceAccount string) string {
	c.t.Helper()
	key := c.cli("", "keys", "mint", "--project", project, "--service-account", serviceAccount)
	for _, p := range c.pods {
		if p.cmd.ProcessState == nil {
			eventually(c.t, p.inference, key, 200)
		}
	}
	return key
}

// podChat sends one non-streaming chat request; it returns the status and the
// request id Relay answered with (0 and "" when the pod did not answer).
func podChat(base, key, model string) (int, string) {
	status, id, _ := podPost(base, key, `{"model":"`+model+`","messages":[{"role":"user","content":"multipod"}]}`)
	return status, id
}

// podPost sends one chat request body; it returns the status, the request id
// and the answer (0, "" and nil when the pod did not answer).
func podPost(base, key, body string) (int, string, []byte) {
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, "", nil
	}
	return resp.StatusCode, resp.Header.Get("X-Relay-Request-Id"), answer
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// multipodEnv reads an integer knob of the figure run.
func multipodEnv(t *testing.T, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	return def
}

// TestMultipod_SharedPostgresAndRedis runs three `relay serve` processes on
// one Postgres and one Redis and checks, with figures in the log, what a
// deployment of several pods relies on: writes reach every pod, limits and
// budgets are exact across pods, a breaker hold taken by one pod is honoured by the
// others, a pod killed mid-load loses no other pod's usage events and its
// concurrency leases are bounded by their TTL, and a pod started later
// serves from Postgres alone.
//
// The figure run (docs/scale-out.md):
//
//	RELAY_MULTIPOD_WRITES=200 go test -count=1 -run Multipod -v ./cmd/relay/
//	RELAY_MULTIPOD_WRITES=200 RELAY_MULTIPOD_DEBOUNCE=1s go test -count=1 -run Multipod -v ./cmd/relay/
//
// RELAY_MULTIPOD_LEASE_WAIT=1 also waits out the concurrency leases of the
// killed pod (the lease TTL, 60 s).
func TestMultipod_SharedPostgresAndRedis(t *testing.T) {
	multipod(t, redistest.URL(t))
}

// TestMultipod_RedisCluster is the same on a 3-master Redis Cluster
// (skipped without redis-server, except on CI).
//
//	go test -count=1 -run Multipod_RedisCluster -v ./cmd/relay/
func TestMultipod_RedisCluster(t *testing.T) {
	multipod(t, redistest.StartCluster(t).URL())
}

func multipod(t *testing.T, redisURL string) {
	debounce := os.Getenv("RELAY_MULTIPOD_DEBOUNCE")
	if debounce == "" {
		debounce = "100ms"
	}
	c := newCluster(t, 3, redisURL, debounce)
	ctx := context.Background()
	st, err := store.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)

	t.Run("WriteReachesEveryPod", func(t *testing.T) {
		api := adminClient(t, c.pods[0].control)
		sas, err := api.ListServiceAccountsWithResponse(ctx, &models.ListServiceAccountsParams{})
		if err != nil || sas.JSON200 == nil || len(sas.JSON200.Items) == 0 {
			t.Fatalf("list service accounts: %v", err)
		}
		sa := sas.JSON200.Items[0]
		n := multipodEnv(t, "RELAY_MULTIPOD_WRITES", 20)
		var lat []time.Duration
		for range n {
			start := time.Now()
			created, err := api.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: sa.ProjectID, ServiceAccountID: &sa.ID})
			if err != nil || created.JSON201 == nil {
				t.Fatalf("create relay key: %v", err)
			}
			for _, p := range c.pods {
				poll.Until(t, 10*time.Second, "a new relay key on "+p.inference, func() bool {
					return modelsStatus(t, p.inference, created.JSON201.Secret) == 200
				})
			}
			lat = append(lat, time.Since(start))
		}
		t.Logf("control write → accepted by all 3 pods, debounce %s, %d writes: p50 %s, p99 %s, max %s",
			debounce, n, percentile(lat, 50), percentile(lat, 99), percentile(lat, 100))
	})

	t.Run("RateLimitExactAcrossPods", func(t *testing.T) {
		key := c.mint("limited")
		const callers = 200
		statuses := make([]int, callers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-start
				statuses[i], _ = podChat(c.pods[i%len(c.pods)].inference, key, "mp-chat")
			})
		}
		close(start)
		wg.Wait()
		counts := map[int]int{}
		for _, s := range statuses {
			counts[s]++
		}
		t.Logf("%d concurrent callers over 3 pods, limit 50 requests: %v", callers, counts)
		if counts[200] != 50 || counts[429] != callers-50 {
			t.Fatalf("admitted %d, refused %d; want exactly 50 and %d", counts[200], counts[429], callers-50)
		}
	})

	t.Run("BudgetExactAcrossPods", func(t *testing.T) {
		key := c.mintIn("mp/spend", "spender")
		const callers = 200
		body := fmt.Sprintf(`{"model":"mp-priced","max_tokens":%d,"messages":[{"role":"user","content":"multipod budget"}]}`, multipodMaxTokens)
		statuses := make([]int, callers)
		ids := make([]string, callers)
		answers := make([][]byte, callers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-start
				statuses[i], ids[i], answers[i] = podPost(c.pods[i%len(c.pods)].inference, key, body)
			})
		}
		close(start)
		wg.Wait()
		counts := map[int]int{}
		var admitted []string
		for i, s := range statuses {
			counts[s]++
			switch {
			case s == 200:
				admitted = append(admitted, ids[i])
			case s == 429 && !strings.Contains(string(answers[i]), "budget_exceeded"):
				t.Fatalf("a 429 that is not budget_exceeded: %s", answers[i])
			}
		}
		t.Logf("%d concurrent callers over 3 pods, budget %d micro-units = %d requests of %d: %v",
			callers, multipodBudget, multipodBudgetRequests, multipodRequestCost, counts)
		if counts[200] != multipodBudgetRequests || counts[429] != callers-multipodBudgetRequests {
			t.Fatalf("admitted %d, refused %d; want exactly %d and %d",
				counts[200], counts[429], multipodBudgetRequests, callers-multipodBudgetRequests)
		}
		// The ledger prices the admitted requests at what was reserved: the
		// whole budget, spent and not more (usage cost is in nano-units).
		var events, cost int64
		poll.Until(t, 15*time.Second, "the admitted requests in usage_events", func() bool {
			if err := st.Pool().QueryRow(ctx, `SELECT count(DISTINCT request_id), coalesce(sum(cost), 0) FROM usage_events WHERE request_id = ANY($1)`,
				admitted).Scan(&events, &cost); err != nil {
				t.Fatal(err)
			}
			return events == int64(len(admitted))
		})
		if cost != multipodBudget*1000 {
			t.Fatalf("the ledger's cost of the admitted requests is %d nano-units, want the budget (%d)", cost, multipodBudget*1000)
		}
	})

	t.Run("BreakerHoldHonouredByOtherPods", func(t *testing.T) {
		key := c.mint("breaker")
		refused := func() int {
			n := 0
			for _, r := range c.upstream.Requests() {
				if bearer := r.Header.Get("Authorization"); bearer == "Bearer "+multipodRefusedKey {
					n++
				}
			}
			return n
		}
		// The first pod tries the refused key first (position 0), takes
		// the hold and answers through the good key.
		if s, _ := podChat(c.pods[0].inference, key, "mp-chat"); s != 200 {
			t.Fatalf("chat through the first pod: %d", s)
		}
		if n := refused(); n != 1 {
			t.Fatalf("the upstream saw the refused key %d times, want 1", n)
		}
		held := time.Now()
		for _, p := range c.pods[1:] {
			// A 401 holds (key, mp-chat's upstream model), not the key's own
			// breaker the metric shows: the control API lists both.
			took := poll.Until(t, 10*time.Second, "the hold on "+p.control, func() bool { return authHeld(t, p.control) })
			t.Logf("hold taken by pod 1 visible on %s after %s", p.control, took)
		}
		t.Logf("hold honoured by both other pods %s after the first pod answered", time.Since(held))
		for i := range 20 {
			if s, _ := podChat(c.pods[1+i%2].inference, key, "mp-chat"); s != 200 {
				t.Fatalf("chat through pod %d: %d", 2+i%2, s)
			}
		}
		if n := refused(); n != 1 {
			t.Fatalf("the other pods sent %d requests to the held key", n-1)
		}
	})

	t.Run("KilledPodLosesNoOtherPodsUsage", func(t *testing.T) {
		load, narrow := c.mint("load"), c.mint("narrow")
		victim := c.pods[2]
		var mu sync.Mutex
		// The victim holds both concurrency slots of the narrow policy
		// with requests the slow model keeps open.
		for range 2 {
			go podChat(victim.inference, narrow, "mp-slow")
		}
		rdb, err := ratelimit.NewRedisClient(redisURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		prefix := envValue(c.env, "RELAY_REDIS_PREFIX")
		var leaseKey string
		poll.Until(t, 10*time.Second, "two leases in Redis", func() bool {
			var keys []string
			// KEYS answers for one node: ask every master.
			if cc, ok := rdb.(*redis.ClusterClient); ok {
				_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
					ks, _ := n.Keys(ctx, prefix+"*:lease").Result()
					mu.Lock()
					keys = append(keys, ks...)
					mu.Unlock()
					return nil
				})
			} else {
				keys, _ = rdb.Keys(ctx, prefix+"*:lease").Result()
			}
			for _, k := range keys {
				if rdb.ZCard(ctx, k).Val() == 2 {
					leaseKey = k
					return true
				}
			}
			return false
		})

		// Load on all three pods; the victim is killed part-way.
		type answer struct {
			pod int
			id  string
		}
		var answered []answer
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 6 {
			pod := w % 3
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if s, id := podChat(c.pods[pod].inference, load, "mp-chat"); s == 200 {
						mu.Lock()
						answered = append(answered, answer{pod, id})
						mu.Unlock()
					}
				}
			})
		}
		poll.Until(t, 10*time.Second, "load under way", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(answered) >= 60
		})
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		_ = victim.cmd.Wait()
		mu.Lock()
		atKill := len(answered)
		mu.Unlock()
		poll.Until(t, 10*time.Second, "more load after the kill", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(answered) >= atKill+60
		})
		close(stop)
		wg.Wait()

		want := map[string]bool{}
		perPod := [3]int{}
		for _, a := range answered {
			perPod[a.pod]++
			if a.pod != 2 {
				want[a.id] = true
			}
		}
		ids := make([]string, 0, len(want))
		for id := range want {
			ids = append(ids, id)
		}
		var found int
		took := poll.Until(t, 15*time.Second, "usage events of the surviving pods", func() bool {
			if err := st.Pool().QueryRow(ctx, `SELECT count(DISTINCT request_id) FROM usage_events WHERE request_id = ANY($1)`, ids).Scan(&found); err != nil {
				t.Fatal(err)
			}
			return found == len(ids)
		})
		var victimRows int
		victimIDs := []string{}
		for _, a := range answered {
			if a.pod == 2 {
				victimIDs = append(victimIDs, a.id)
			}
		}
		_ = st.Pool().QueryRow(ctx, `SELECT count(DISTINCT request_id) FROM usage_events WHERE request_id = ANY($1)`, victimIDs).Scan(&victimRows)
		t.Logf("answered per pod %v; surviving pods' %d answers all in usage_events (%s after the load); killed pod: %d of %d recorded",
			perPod, len(ids), took, victimRows, len(victimIDs))

		// The dead pod's leases still fill the narrow policy, and expire
		// within the lease TTL of their last renewal: nothing renews them.
		if s, _ := podChat(c.pods[0].inference, narrow, "mp-chat"); s != 429 {
			t.Fatalf("narrow policy right after the kill: %d, want 429 (the dead pod's leases)", s)
		}
		const leaseTTL = time.Minute
		for _, z := range rdb.ZRangeWithScores(ctx, leaseKey, 0, -1).Val() {
			if expiry := time.UnixMilli(int64(z.Score)); expiry.After(killed.Add(leaseTTL)) {
				t.Fatalf("a lease of the dead pod expires at %s, after kill + TTL (%s)", expiry, killed.Add(leaseTTL))
			}
		}
		if os.Getenv("RELAY_MULTIPOD_LEASE_WAIT") != "" {
			poll.Until(t, leaseTTL+30*time.Second, "the dead pod's leases to expire", func() bool {
				s, _ := podChat(c.pods[0].inference, narrow, "mp-chat")
				return s == 200
			})
			t.Logf("the narrow policy admits again %s after the kill", time.Since(killed).Round(100*time.Millisecond))
		}
		c.pods = c.pods[:2]
	})

	t.Run("LatePodConvergesFromPostgres", func(t *testing.T) {
		key := c.mint("load")
		start := time.Now()
		late := c.start()
		if s, _ := podChat(late.inference, key, "mp-chat"); s != 200 {
			t.Fatalf("chat through the late pod: %d", s)
		}
		t.Logf("a pod started after the catalog and the key serves them %s after its start", time.Since(start))
	})
}

// authHeld reports whether the pod's GET /api/breakers lists a hold for a
// 401/403 (only the refused key answers one).
func authHeld(t *testing.T, control string) bool {
	req, _ := http.NewRequest(http.MethodGet, control+"/api/breakers", nil)
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"auth_failed"`)
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}
