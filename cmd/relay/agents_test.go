package main

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/redistest"
)

// agentsCatalog adds, to the multipod catalog, a token-limited policy for
// agent-like callers: 40 000 total tokens per 2 s (the 60 000 per
// minute, scaled down so that a run of seconds spans several windows; one
// max_tokens estimate of 32 000 still fits it, as it fits 60 000).
const agentsCatalog = `
kind: RateLimit
spec:
  slug: agents-tokens
  rules:
    - {meter: total_tokens, amount: 40000, window_seconds: 2}
---
kind: Model
spec: {name: agent-chat, provider: openai}
---
kind: Binding
spec: {model: agent-chat, host: mock, shape: openai, upstream_model: agent-upstream}
---
kind: Policy
spec: {slug: agents, all_models: true, host_keys: [mock/good], rate_limit: agents-tokens, max_wait_ms: 30000}
---
kind: ServiceAccount
spec: {project: mp/app, slug: agents, policy: agents}
`

// TestMultipod_AgentWorkloadWithinTheTokenLimit: three `relay serve`
// processes on one Redis, a token-limited policy, and 50 agent-like
// callers in a closed loop, each asking for max_tokens 32 000 and using a
// few hundred tokens (the mock upstream's answer: a ~1 kB prompt and a
// short reply). Every request is served — no 429 — the mock upstream
// never receives more than the limit's tokens within a window, and once
// the pods have learned the output estimate the throughput is at least
// 90 % of what the limit allows.
func TestMultipod_AgentWorkloadWithinTheTokenLimit(t *testing.T) {
	const (
		limit   = 40_000
		window  = 2 * time.Second
		callers = 50
		run     = 8 * time.Second
		warmup  = 2 * time.Second // learning the estimate; not counted in the throughput
	)
	c := newCluster(t, 3, redistest.URL(t), "100ms")
	c.apply(agentsCatalog)
	key := c.mint("agents")
	body := `{"model":"agent-chat","max_tokens":32000,"messages":[{"role":"user","content":"` +
		strings.Repeat("refactor the parser and run the tests ", 25) + `"}]}`
	tr := &http.Transport{MaxIdleConnsPerHost: callers}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}

	type answer struct {
		status int
		tokens int64
		took   time.Duration
	}
	var mu sync.Mutex
	var answers []answer
	rec := recordWindows(t, c, 200*time.Millisecond)
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for i := range callers {
		base := c.pods[i%len(c.pods)].inference
		wg.Go(func() {
			for time.Now().Before(stop) {
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				a := answer{status: resp.StatusCode, took: time.Since(start)}
				var out struct {
					Usage struct {
						Total int64 `json:"total_tokens"`
					} `json:"usage"`
				}
				if json.Unmarshal(raw, &out) == nil {
					a.tokens = out.Usage.Total
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
				if a.status != http.StatusOK {
					t.Errorf("status %d: %s", a.status, raw)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Every request alike: one prompt, one answer, one token count.
	perReq := answers[0].tokens
	var took []time.Duration
	for _, a := range answers {
		if a.tokens != perReq {
			t.Fatalf("answers of %d and %d tokens; the check below counts requests × tokens", perReq, a.tokens)
		}
		took = append(took, a.took)
	}
	var got []time.Time
	for _, r := range c.upstream.Requests() {
		if r.Model == "agent-upstream" {
			got = append(got, r.ReceivedAt)
		}
	}
	slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
	if len(got) != len(answers) {
		t.Fatalf("the mock received %d requests, the callers got %d answers", len(got), len(answers))
	}
	// Never more than the limit within a window of what the mock
	// received. The pods admit by Redis's clock and the mock sees each
	// request later, by a delay that varies with the load (three pods and
	// 50 callers on two cores): windows 300 ms shorter than the rule's
	// absorb that jitter. The most in a whole window is logged.
	most := func(span time.Duration) int64 {
		var best int64
		for i, j := 0, 0; i < len(got); i++ {
			for got[i].Sub(got[j]) >= span {
				j++
			}
			best = max(best, int64(i-j+1)*perReq)
		}
		return best
	}
	span := window - 300*time.Millisecond
	t.Logf("most tokens the mock received within %v: %d; within %v: %d (limit %d)", span, most(span), window, most(window), limit)
	// The same by the limiter's own record: when Redis admitted each
	// request (its window buckets, settled to the actual counts). By
	// that clock no window holds more than the limit; what the mock sees
	// beyond it is the delay between admission and arrival.
	var admitted []time.Time
	// A bucket read before its settlement lands still holds the
	// reservation's estimate: wait for every one to hold its actual count.
	poll.Until(t, 10*time.Second, "every settlement is in the window's buckets", func() bool {
		admitted = rec.admissions(window, perReq)
		return len(admitted) == len(got)
	})
	rec.close()
	lag := lags(admitted, got)
	t.Logf("admitted by Redis's clock: %d requests, at most %d tokens within %v; admission → arrival at the mock: p50 %v, p99 %v, max %v",
		len(admitted), int64(mostWithin(admitted, window))*perReq, window,
		percentile(lag, 50).Round(time.Millisecond), percentile(lag, 99).Round(time.Millisecond), slices.Max(lag).Round(time.Millisecond))
	if n := int64(mostWithin(admitted, window)) * perReq; len(admitted) != len(got) || n > limit {
		t.Fatalf("the limiter's buckets hold %d requests (the mock received %d), at most %d tokens within %v (limit %d)", len(admitted), len(got), n, window, limit)
	}
	if n := most(span); n > limit {
		t.Fatalf("the mock received %d tokens within %v, over the limit %d", n, span, limit)
	}
	// Throughput after the warm-up, against what the limit allows.
	from, to := got[0].Add(warmup), got[0].Add(run)
	var n int64
	for _, at := range got {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	allowed := float64(limit) * float64(to.Sub(from)) / float64(window)
	share := float64(n*perReq) / allowed
	t.Logf("%d requests of %d tokens served by 3 pods, 0 refused; throughput after %v: %.0f%% of the limit; time to answer p50 %v, p99 %v",
		len(answers), perReq, warmup, 100*share, percentile(took, 50).Round(time.Millisecond), percentile(took, 99).Round(time.Millisecond))
	if share < 0.9 {
		t.Fatalf("throughput %.0f%% of what the limit allows, want at least 90%%", 100*share)
	}
}
