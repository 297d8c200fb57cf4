package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/redistest"
)

// pacingCatalog adds, to the multipod catalog, two token-limited policies:
//
//   - wake: 40 000 total tokens a minute and waits of up to 10 s. A holder
//     asking for max_tokens 32 000 takes most of it; a waiter asking for
//     8 000 does not fit beside it, and fits as soon as the holder settles
//     at its actual count (a few dozen tokens).
//   - retry: 1 000 total tokens per 3 s and waits of up to 300 ms, for a
//     refusal whose Retry-After is checked against when the request fits.
//
// Each role has its own model, so what one learns of its outputs does not
// change another's estimate.
const pacingCatalog = `
kind: RateLimit
spec:
  slug: wake-tokens
  rules:
    - {meter: total_tokens, amount: 40000, window_seconds: 60}
---
kind: RateLimit
spec:
  slug: retry-tokens
  rules:
    - {meter: total_tokens, amount: 1000, window_seconds: 3}
---
kind: Model
spec: {name: wake-hold, provider: openai, max_output_tokens: 32000}
---
kind: Binding
spec: {model: wake-hold, host: mock, shape: openai, upstream_model: wake-hold-upstream}
---
kind: Model
spec: {name: wake-wait, provider: openai, max_output_tokens: 32000}
---
kind: Binding
spec: {model: wake-wait, host: mock, shape: openai, upstream_model: wake-wait-upstream}
---
kind: Model
spec: {name: retry-fill, provider: openai}
---
kind: Binding
spec: {model: retry-fill, host: mock, shape: openai, upstream_model: retry-fill-upstream}
---
kind: Model
spec: {name: retry-ask, provider: openai}
---
kind: Binding
spec: {model: retry-ask, host: mock, shape: openai, upstream_model: retry-ask-upstream}
---
kind: Policy
spec: {slug: wake, all_models: true, host_keys: [mock/good], rate_limit: wake-tokens, max_wait_ms: 10000}
---
kind: Policy
spec: {slug: retry, all_models: true, host_keys: [mock/good], rate_limit: retry-tokens, max_wait_ms: 300}
---
kind: ServiceAccount
spec: {project: mp/app, slug: wake, policy: wake}
---
kind: ServiceAccount
spec: {project: mp/app, slug: retry, policy: retry}
`

// upstreamGate stands before the mock upstream: it holds the requests for
// the held model until release, and notes when each request arrives and
// when its answer is done, by the test's clock.
type upstreamGate struct {
	held string // upstream model whose requests are held

	mu       sync.Mutex
	release  chan struct{} // closed: held requests go on
	arrived  chan string   // the held model's requests, as they arrive
	arrivals map[string][]time.Time
	finishes map[string][]time.Time
}

func newUpstreamGate(held string) *upstreamGate {
	return &upstreamGate{held: held, release: make(chan struct{}), arrived: make(chan string, 16),
		arrivals: map[string][]time.Time{}, finishes: map[string][]time.Time{}}
}

func (g *upstreamGate) front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		model := upstreamModel(body)
		g.mu.Lock()
		g.arrivals[model] = append(g.arrivals[model], at)
		release := g.release
		g.mu.Unlock()
		if model == g.held {
			g.arrived <- model
			<-release
		}
		next.ServeHTTP(w, r)
		g.mu.Lock()
		g.finishes[model] = append(g.finishes[model], time.Now())
		g.mu.Unlock()
	})
}

// open lets the held requests go on; the next ones are held again.
func (g *upstreamGate) open() {
	g.mu.Lock()
	close(g.release)
	g.release = make(chan struct{})
	g.mu.Unlock()
}

// last is the latest time noted for model in m.
func (g *upstreamGate) last(m map[string][]time.Time, model string) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	ts := m[model]
	if len(ts) == 0 {
		return time.Time{}
	}
	return ts[len(ts)-1]
}

func (g *upstreamGate) count(m map[string][]time.Time, model string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(m[model])
}

// upstreamModel is the "model" member of a chat request body.
func upstreamModel(body []byte) string {
	const key = `"model":"`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return ""
	}
	rest := body[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// scrapeGauge reads one unlabelled sample from a pod's /metrics (-1 when
// absent).
func scrapeGauge(t *testing.T, control, name string) float64 {
	t.Helper()
	resp, err := http.Get(control + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	return -1
}

// chatBody is a chat request for model with a prompt of about promptBytes
// bytes.
func chatBody(model string, maxTokens int, promptBytes int, tag string) string {
	prompt := tag + " " + strings.Repeat("pace ", max(0, promptBytes-len(tag)-1)/5)
	return fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, model, maxTokens, prompt)
}

// podDo sends body to a pod's chat endpoint; it returns the status, the
// headers and the answer.
func podDo(t *testing.T, base, key, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil, ""
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

// TestMultipod_PacingAcrossProcesses runs two `relay serve` processes on
// one Redis and checks pacing where it crosses processes:
//
//   - a settlement on pod A wakes a request waiting for tokens on pod B,
//     within tens of milliseconds (p50/p99 in the log);
//
//   - a request refused on pod B because its wait would pass max_wait_ms
//     gets a Retry-After within ±100 ms of when it actually fits: asked
//     again earlier it is refused, asked again just before that time it is
//     admitted at that time, and not before.
//
//     go test -count=1 -run TestMultipod_PacingAcrossProcesses -v ./cmd/relay/
func TestMultipod_PacingAcrossProcesses(t *testing.T) {
	gate := newUpstreamGate("wake-hold-upstream")
	c := newClusterBefore(t, 2, redistest.URL(t), "100ms", gate.front)
	c.apply(pacingCatalog)
	a, b := c.pods[0], c.pods[1]

	t.Run("settlement wakes another pod's waiter", func(t *testing.T) {
		key := c.mint("wake")
		// 20 rounds: each role's model learns its output estimate from
		// the 20th sample on, and round k is admitted with k-1 samples.
		const rounds = 20
		var delays []time.Duration
		for i := range rounds {
			held := make(chan string, 1)
			go func() {
				status, h, raw := podDo(t, a.inference, key, chatBody("wake-hold", 32000, 40, fmt.Sprintf("hold %d", i)))
				if status != http.StatusOK {
					t.Errorf("holder: %d %s", status, raw)
				}
				held <- fmt.Sprintf("%d, %s of %s tokens left", status, h.Get("X-Ratelimit-Remaining-Tokens"), h.Get("X-Ratelimit-Limit-Tokens"))
			}()
			select {
			case <-gate.arrived:
			case <-time.After(30 * time.Second):
				t.Fatal("the holder did not reach the upstream")
			}
			waited := make(chan string, 1)
			go func() {
				status, h, raw := podDo(t, b.inference, key, chatBody("wake-wait", 8000, 40, fmt.Sprintf("wait %d", i)))
				if status != http.StatusOK {
					t.Errorf("waiter: %d %s", status, raw)
				}
				waited <- fmt.Sprintf("%d, %s of %s tokens left", status, h.Get("X-Ratelimit-Remaining-Tokens"), h.Get("X-Ratelimit-Limit-Tokens"))
			}()
			var early string
			poll.Until(t, 30*time.Second, "the waiter queues on pod B", func() bool {
				select {
				case early = <-waited:
					return true
				default:
				}
				return scrapeGauge(t, b.control, "relay_pacing_queue_length") == 1
			})
			if early != "" || gate.count(gate.arrivals, "wake-wait-upstream") != i {
				gate.open()
				t.Fatalf("round %d: the waiter was answered (%s) while the holder (%s) held the tokens", i, early, <-held)
			}
			gate.open()
			<-held
			<-waited
			if t.Failed() {
				return
			}
			settled := gate.last(gate.finishes, "wake-hold-upstream")
			admitted := gate.last(gate.arrivals, "wake-wait-upstream")
			delays = append(delays, admitted.Sub(settled))
		}
		p50, p99 := percentile(delays, 50), percentile(delays, 99)
		t.Logf("holder's answer done on pod A → waiter's request at the upstream from pod B, %d rounds: p50 %v, p99 %v",
			rounds, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond))
		// Without the wake-up, the waiter asks again only at its poll
		// (every 250 ms): half the rounds would take over 100 ms.
		if p50 > 100*time.Millisecond {
			t.Fatalf("wake delay p50 %v, want tens of milliseconds", p50)
		}
	})

	t.Run("Retry-After is when the request fits", func(t *testing.T) {
		key := c.mint("retry")
		// Pod A fills the window: ~900 tokens settled, of 1 000.
		if status, _, raw := podDo(t, a.inference, key, chatBody("retry-fill", 16, 3600, "fill")); status != http.StatusOK {
			t.Fatalf("fill: %d %s", status, raw)
		}
		ask := chatBody("retry-ask", 16, 400, "ask")
		// Pod B: ~120 tokens do not fit until the fill leaves the window
		// (~3 s); it waits its 300 ms and is refused.
		status, h, raw := podDo(t, b.inference, key, ask)
		refused := time.Now()
		if status != http.StatusTooManyRequests {
			t.Fatalf("ask: %d %s, want 429", status, raw)
		}
		ms, err := strconv.ParseInt(h.Get("Retry-After-Ms"), 10, 64)
		if err != nil || ms <= 0 {
			t.Fatalf("Retry-After-Ms %q", h.Get("Retry-After-Ms"))
		}
		if s, _ := strconv.ParseInt(h.Get("Retry-After"), 10, 64); s < (ms+999)/1000 || s > ms/1000+1 {
			t.Fatalf("Retry-After %q, want Retry-After-Ms %d in whole seconds, rounded up", h.Get("Retry-After"), ms)
		}
		fits := refused.Add(time.Duration(ms) * time.Millisecond)
		t.Logf("refused on pod B with Retry-After-Ms %d", ms)

		// Earlier than the wait allows: refused again, on pod A, and its
		// Retry-After names the same moment.
		time.Sleep(time.Until(fits.Add(-600 * time.Millisecond))) // a moment on the window's clock, not a goroutine
		status, h, raw = podDo(t, a.inference, key, ask)
		if status != http.StatusTooManyRequests {
			t.Fatalf("asked 600 ms before Retry-After: %d %s, want 429", status, raw)
		}
		ms2, _ := strconv.ParseInt(h.Get("Retry-After-Ms"), 10, 64)
		if off := time.Now().Add(time.Duration(ms2) * time.Millisecond).Sub(fits); off.Abs() > 100*time.Millisecond {
			t.Fatalf("pod A's Retry-After points %v from pod B's", off)
		}

		// 150 ms before: admitted, but only once it fits — it waits, and
		// reaches the upstream within 100 ms of Retry-After.
		time.Sleep(time.Until(fits.Add(-150 * time.Millisecond)))
		sent := time.Now()
		if status, _, raw := podDo(t, b.inference, key, ask); status != http.StatusOK {
			t.Fatalf("asked 150 ms before Retry-After: %d %s, want 200", status, raw)
		}
		at := gate.last(gate.arrivals, "retry-ask-upstream")
		t.Logf("asked %v before Retry-After, admitted %v after it", fits.Sub(sent).Round(time.Millisecond), at.Sub(fits).Round(time.Millisecond))
		if off := at.Sub(fits); off.Abs() > 100*time.Millisecond {
			t.Fatalf("admitted %v from Retry-After, want within ±100ms", off)
		}
	})
}
