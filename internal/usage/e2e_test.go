package usage_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/internal/wire"
)

const (
	relayKey = "sk-wr-usage-test-0123456789abcdef0123"
	// promptMarker is in every prompt; the mock echoes it in every reply.
	// Neither may reach the log.
	promptMarker = "PROMPT-MARKER-7f3a"
)

// capture tees what the mock upstream writes, by the request id Relay
// forwards in X-Request-ID (the rig's hosts list it in forward_headers):
// that is "what the upstream reported".
type capture struct {
	mu     sync.Mutex
	bodies map[string]*bytes.Buffer
}

func (c *capture) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := new(bytes.Buffer)
		c.mu.Lock()
		c.bodies[r.Header.Get("X-Request-ID")] = buf
		c.mu.Unlock()
		h.ServeHTTP(&teeWriter{ResponseWriter: w, c: c, buf: buf}, r)
	})
}

func (c *capture) body(id string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.bodies[id]; b != nil {
		return bytes.Clone(b.Bytes())
	}
	return nil
}

type teeWriter struct {
	http.ResponseWriter
	c   *capture
	buf *bytes.Buffer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.c.mu.Lock()
	t.buf.Write(p)
	t.c.mu.Unlock()
	return t.ResponseWriter.Write(p)
}

func (t *teeWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// rig is Relay (proxy.New with a usage.Writer into a test database) in front
// of the mock upstream, with a catalog of one model per inbound shape.
type rig struct {
	t        *testing.T
	cap      *capture
	st       *store.Store
	w        *usage.Writer
	srv      *httptest.Server
	logs     *syncBuffer
	snap     *snapshot.Snapshot
	ids      map[string]uuid.UUID // team, project, sa, policy, key
	bindings map[string]*snapshot.Binding
	keys     map[string]*snapshot.HostKey // by host slug: the key that answers
}

// e2eFault is the header the rig's mock reads a fault spec from and its
// hosts forward (Relay never forwards the mock's own X-Mock-Fault).
const e2eFault = "X-Test-Fault"

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, cap: &capture{bodies: map[string]*bytes.Buffer{}}, logs: &syncBuffer{},
		ids: map[string]uuid.UUID{}, bindings: map[string]*snapshot.Binding{}, keys: map[string]*snapshot.HostKey{}}
	mock := mockupstream.New(mockupstream.Options{Record: -1, FaultHeader: e2eFault})
	up := httptest.NewServer(r.cap.wrap(mock))
	t.Cleanup(up.Close)

	for _, n := range []string{"team", "project", "sa", "policy", "key"} {
		r.ids[n] = uuid.New()
	}
	policy := &snapshot.Policy{ID: r.ids["policy"], Slug: "p", AllHostKeys: true, Models: map[snapshot.ID]struct{}{},
		KeyStrategy: snapshot.StrategyPrioritized, MaxAttempts: 3,
		Affinity: snapshot.AffinityOff} // "failover" needs the failing key tried first
	d := &snapshot.Data{
		Teams:           []*snapshot.Team{{ID: r.ids["team"], Slug: "team"}},
		Projects:        []*snapshot.Project{{ID: r.ids["project"], TeamID: r.ids["team"], Slug: "proj"}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: r.ids["sa"], ProjectID: r.ids["project"], Slug: "app", PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RelayKeys: []*snapshot.RelayKey{{ID: r.ids["key"], Hash: sha256.Sum256([]byte(relayKey)), DisplayPrefix: relayKey[:10],
			ProjectID: r.ids["project"], ServiceAccountID: r.ids["sa"]}},
	}
	host := func(slug string, secrets ...string) *snapshot.Host {
		h := &snapshot.Host{ID: uuid.New(), Slug: slug, Name: slug, BaseURL: up.URL, Enabled: true, ForwardHeaders: []string{e2eFault, "X-Request-Id"}}
		d.Hosts = append(d.Hosts, h)
		for i, s := range secrets {
			k := &snapshot.HostKey{ID: uuid.New(), HostID: h.ID, Slug: slug + "-key", Secret: snapshot.NewSecret(s),
				SecretVersion: 1, Position: i, Enabled: true, Usable: true}
			if i > 0 {
				k.Slug += "-spare"
			}
			d.HostKeys = append(d.HostKeys, k)
			r.keys[slug] = k
		}
		return h
	}
	oa := host("openai", "sk-up-openai-1")
	an := host("anthropic", "sk-ant-up-1")
	flaky := host("flaky", "sk-up-fault-500", "sk-up-good")
	ge := host("gemini", "gm-up-1")
	pricing := snapshot.Pricing{Input: 2_500_000, CachedInput: 1_250_000, CacheWrite: 3_125_000, Output: 10_000_000, Reasoning: 12_000_000,
		Tiers: []snapshot.PriceTier{{AboveInputTokens: 40, InputPrice: 5_000_000, CachedInputPrice: 2_500_000, CacheWritePrice: 6_250_000, OutputPrice: 15_000_000}}}
	model := func(name string, granted bool, h *snapshot.Host, shape wire.Shape, upstream string) {
		m := &snapshot.Model{ID: uuid.New(), Name: name, Provider: "test", Kind: "chat"}
		d.Models = append(d.Models, m)
		if granted {
			policy.Models[m.ID] = struct{}{}
		}
		b := &snapshot.Binding{ID: uuid.New(), ModelID: m.ID, HostID: h.ID, Shape: shape, UpstreamModel: upstream, Enabled: true, Pricing: pricing}
		d.Bindings = append(d.Bindings, b)
		r.bindings[name] = b
	}
	model("chat", true, oa, wire.ShapeOpenAI, "gpt-4o-cached-cache-write-reasoning")
	model("resp", true, oa, wire.ShapeOpenAIResponses, "gpt-resp-cached-reasoning")
	model("emb", true, oa, wire.ShapeOpenAI, "text-embedding-3-small")
	model("claude", true, an, wire.ShapeAnthropic, "claude-cached-cache-write-thinking")
	model("flaky", true, flaky, wire.ShapeOpenAI, "gpt-4o-mini")
	model("gem", true, ge, wire.ShapeGemini, "gemini-2.5-flash-cached-reasoning")
	model("secret", false, oa, wire.ShapeOpenAI, "gpt-4o")
	r.snap = snapshot.Build(d, 1, time.Now())

	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	r.st = st
	r.w = usage.NewWriter(usage.WriterConfig{Sink: st, Snapshot: func() *snapshot.Snapshot { return r.snap }, FlushInterval: 20 * time.Millisecond})
	t.Cleanup(func() { r.w.Close(context.Background()) }) // closed by the test
	h := proxy.New(proxy.Config{
		Snapshot: func() *snapshot.Snapshot { return r.snap },
		Recorder: r.w,
		Logger:   slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	return r
}

// send posts body as request id and returns the status and response body.
func (r *rig) send(id, path, body string, header map[string]string) (int, string) {
	r.t.Helper()
	req, _ := http.NewRequestWithContext(r.t.Context(), http.MethodPost, r.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+relayKey)
	req.Header.Set("X-Request-ID", id)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sendAndLeave starts a stream, reads events SSE events and hangs up.
func (r *rig) sendAndLeave(id, path, body string, events int, header map[string]string) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(r.t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+relayKey)
	req.Header.Set("X-Request-ID", id)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for seen := 0; seen < events && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data:") {
			seen++
		}
	}
	// Leaving: cancel closes the connection; Relay cancels the upstream.
}

// reported parses the usage the mock sent for a request, in its own shape,
// without Relay's parser, and normalises it to wire.Usage's meaning.
func reported(t *testing.T, shape wire.Shape, raw []byte) wire.Usage {
	t.Helper()
	type chat struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens     int64 `json:"cached_tokens"`
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
	type responses struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens     int64 `json:"cached_tokens"`
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	}
	type anthropic struct {
		InputTokens         *int64 `json:"input_tokens"`
		OutputTokens        *int64 `json:"output_tokens"`
		CacheRead           *int64 `json:"cache_read_input_tokens"`
		CacheWrite          *int64 `json:"cache_creation_input_tokens"`
		OutputTokensDetails *struct {
			ThinkingTokens int64 `json:"thinking_tokens"`
		} `json:"output_tokens_details"`
	}
	type gemini struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	}
	// Gemini's candidatesTokenCount leaves out thoughts; wire.Usage.Output
	// does not.
	fromGemini := func(g gemini) wire.Usage {
		return wire.Usage{Input: g.PromptTokenCount, Output: g.CandidatesTokenCount + g.ThoughtsTokenCount,
			CacheRead: g.CachedContentTokenCount, Reasoning: g.ThoughtsTokenCount}
	}
	var u wire.Usage
	var a struct{ in, out, read, write, thinking int64 }
	fromChat := func(c chat) wire.Usage {
		return wire.Usage{Input: c.PromptTokens, Output: c.CompletionTokens, CacheRead: c.PromptTokensDetails.CachedTokens,
			CacheWrite: c.PromptTokensDetails.CacheWriteTokens, Reasoning: c.CompletionTokensDetails.ReasoningTokens}
	}
	fromResponses := func(c responses) wire.Usage {
		return wire.Usage{Input: c.InputTokens, Output: c.OutputTokens, CacheRead: c.InputTokensDetails.CachedTokens,
			CacheWrite: c.InputTokensDetails.CacheWriteTokens, Reasoning: c.OutputTokensDetails.ReasoningTokens}
	}
	mergeAnthropic := func(x anthropic) {
		set := func(dst *int64, v *int64) {
			if v != nil {
				*dst = *v
			}
		}
		set(&a.in, x.InputTokens)
		set(&a.out, x.OutputTokens)
		set(&a.read, x.CacheRead)
		set(&a.write, x.CacheWrite)
		if x.OutputTokensDetails != nil {
			a.thinking = x.OutputTokensDetails.ThinkingTokens
		}
	}
	decode := func(b []byte, v any) {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("mock body %s: %v", b, err)
		}
	}
	if len(raw) > 0 && raw[0] == '{' { // a whole body
		switch shape {
		case wire.ShapeOpenAI:
			var b struct{ Usage chat }
			decode(raw, &b)
			return fromChat(b.Usage)
		case wire.ShapeOpenAIResponses:
			var b struct{ Usage responses }
			decode(raw, &b)
			return fromResponses(b.Usage)
		case wire.ShapeAnthropic:
			var b struct{ Usage anthropic }
			decode(raw, &b)
			mergeAnthropic(b.Usage)
		case wire.ShapeGemini:
			var b struct{ UsageMetadata gemini }
			decode(raw, &b)
			return fromGemini(b.UsageMetadata)
		}
	} else { // an event stream
		for _, ev := range strings.Split(string(raw), "\n\n") {
			var data string
			for _, line := range strings.Split(ev, "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					data = d
				}
			}
			if data == "" || data == "[DONE]" {
				continue
			}
			switch shape {
			case wire.ShapeOpenAI:
				var c struct{ Usage *chat }
				decode([]byte(data), &c)
				if c.Usage != nil {
					u = fromChat(*c.Usage)
				}
			case wire.ShapeOpenAIResponses:
				var c struct {
					Type     string
					Response struct{ Usage *responses }
				}
				decode([]byte(data), &c)
				if c.Type == "response.completed" && c.Response.Usage != nil {
					u = fromResponses(*c.Response.Usage)
				}
			case wire.ShapeAnthropic:
				var c struct {
					Type    string
					Message struct{ Usage *anthropic }
					Usage   *anthropic
				}
				decode([]byte(data), &c)
				if c.Message.Usage != nil {
					mergeAnthropic(*c.Message.Usage)
				}
				if c.Usage != nil {
					mergeAnthropic(*c.Usage)
				}
			case wire.ShapeGemini:
				var c struct{ UsageMetadata *gemini }
				decode([]byte(data), &c)
				if c.UsageMetadata != nil {
					u = fromGemini(*c.UsageMetadata) // each chunk carries the totals so far
				}
			}
		}
		if shape != wire.ShapeAnthropic {
			return u
		}
	}
	// Anthropic's input_tokens leave out the cache; wire.Usage.Input does not.
	return wire.Usage{Input: a.in + a.read + a.write, Output: a.out, CacheRead: a.read, CacheWrite: a.write, Reasoning: a.thinking}
}

func TestUsage_LedgerMatchesWhatTheUpstreamReported(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	start := time.Now()
	prompt := "Count my tokens, " + promptMarker + ", please."
	chat := `{"model":"chat","messages":[{"role":"user","content":"` + prompt + `"}]`
	anth := `{"model":"claude","max_tokens":200,"messages":[{"role":"user","content":"` + prompt + `"}]`
	anthHeader := map[string]string{"anthropic-version": "2023-06-01"}

	type want struct {
		model    string
		status   int
		kind     string
		stream   bool
		inbound  string
		attempts int
		zero     bool // no usage reported
	}
	cases := map[string]want{}
	run := func(id string, w want, f func()) {
		f()
		cases[id] = w
	}
	run("chat", want{model: "chat", status: 200, inbound: "openai_chat"}, func() {
		if s, b := r.send("chat", "/v1/chat/completions", chat+`}`, nil); s != 200 {
			t.Fatalf("chat: %d %s", s, b)
		}
	})
	run("chat-stream", want{model: "chat", status: 200, stream: true, inbound: "openai_chat"}, func() {
		r.send("chat-stream", "/v1/chat/completions", chat+`,"stream":true,"stream_options":{"include_usage":true}}`, nil)
	})
	run("chat-stream-injected", want{model: "chat", status: 200, stream: true, inbound: "openai_chat"}, func() {
		// The caller did not ask for usage: Relay asks for it and holds it back.
		if _, b := r.send("chat-stream-injected", "/v1/chat/completions", chat+`,"stream":true}`, nil); strings.Contains(b, `"usage":{`) {
			t.Errorf("the caller got usage it did not ask for")
		}
	})
	run("responses", want{model: "resp", status: 200, inbound: "openai_responses"}, func() {
		r.send("responses", "/v1/responses", `{"model":"resp","input":"`+prompt+`"}`, nil)
	})
	run("responses-stream", want{model: "resp", status: 200, stream: true, inbound: "openai_responses"}, func() {
		r.send("responses-stream", "/v1/responses", `{"model":"resp","stream":true,"input":"`+prompt+`"}`, nil)
	})
	run("embeddings", want{model: "emb", status: 200, inbound: "openai_embeddings"}, func() {
		r.send("embeddings", "/v1/embeddings", `{"model":"emb","input":"`+prompt+`"}`, nil)
	})
	run("messages", want{model: "claude", status: 200, inbound: "anthropic_messages"}, func() {
		r.send("messages", "/v1/messages", anth+`}`, anthHeader)
	})
	run("messages-stream", want{model: "claude", status: 200, stream: true, inbound: "anthropic_messages"}, func() {
		r.send("messages-stream", "/v1/messages", anth+`,"stream":true}`, anthHeader)
	})
	run("messages-stream-left", want{model: "claude", status: 499, kind: "client_canceled", stream: true, inbound: "anthropic_messages"}, func() {
		// message_start (with the input usage), then the caller leaves.
		h := map[string]string{"anthropic-version": "2023-06-01", e2eFault: "stall-3"}
		r.sendAndLeave("messages-stream-left", "/v1/messages", anth+`,"stream":true}`, 3, h)
	})
	run("chat-stream-left", want{model: "chat", status: 499, kind: "client_canceled", stream: true, inbound: "openai_chat", zero: true}, func() {
		r.sendAndLeave("chat-stream-left", "/v1/chat/completions", chat+`,"stream":true}`, 2, map[string]string{e2eFault: "stall-3"})
	})
	run("failover", want{model: "flaky", status: 200, inbound: "openai_chat", attempts: 2}, func() {
		r.send("failover", "/v1/chat/completions", `{"model":"flaky","messages":[{"role":"user","content":"`+prompt+`"}]}`, nil)
	})
	run("refused", want{model: "secret", status: 404, kind: "model_not_found", inbound: "openai_chat", attempts: -1, zero: true}, func() {
		r.send("refused", "/v1/chat/completions", `{"model":"secret","messages":[]}`, nil)
	})
	// Not authenticated: no Record, so no row.
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/v1/chat/completions", strings.NewReader(chat+`}`))
	req.Header.Set("X-Request-ID", "unauthenticated")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}

	r.srv.Close() // waits for every handler, so every Record is in
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	if st := r.w.Stats(); st.Written != uint64(len(cases)) || st.Dropped != 0 || st.Lost != 0 {
		t.Fatalf("writer stats %+v, want %d written", st, len(cases))
	}

	rows, err := r.st.ListUsageEvents(ctx, store.UsageEventsPage{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(cases) {
		t.Fatalf("%d rows, want %d", len(rows), len(cases))
	}
	var total wire.Usage
	var totalCost int64
	for _, row := range rows {
		// The ledger keys the event by Relay's own id; the case's name is
		// the caller's X-Request-ID, kept as an attribute.
		id := clientID(t, row)
		w, ok := cases[id]
		if !ok {
			t.Errorf("unexpected row %q", id)
			continue
		}
		t.Run(id, func(t *testing.T) {
			b := r.bindings[w.model]
			got := wire.Usage{Input: row.InputTokens, Output: row.OutputTokens, CacheRead: row.CachedReadTokens,
				CacheWrite: row.CacheWriteTokens, Reasoning: row.ReasoningTokens}
			var exp wire.Usage
			if w.attempts >= 0 {
				exp = reported(t, b.Shape, r.cap.body(id))
			}
			if got != exp {
				t.Errorf("usage %+v, the upstream reported %+v", got, exp)
			}
			if w.zero != exp.IsZero() {
				t.Errorf("usage %+v: zero = %v, want %v", exp, exp.IsZero(), w.zero)
			}
			if w.model == "chat" && !w.zero && (exp.CacheRead == 0 || exp.CacheWrite == 0 || exp.Reasoning == 0) ||
				w.model == "claude" && !w.stream && (exp.CacheRead == 0 || exp.Reasoning == 0) {
				t.Errorf("the mock did not report cached and reasoning tokens: %+v", exp)
			}
			if want := pricing.Cost(&b.Pricing, exp); row.Cost != want {
				t.Errorf("cost %d, want %d", row.Cost, want)
			}
			if int(row.Status) != w.status || row.ErrorKind != w.kind || row.Stream != w.stream || row.InboundShape != w.inbound || row.Model != w.model {
				t.Errorf("row %+v, want %+v", row, w)
			}
			attempts := max(w.attempts, 1)
			if w.attempts < 0 {
				attempts = 0
			}
			if int(row.Attempts) != attempts {
				t.Errorf("attempts %d, want %d", row.Attempts, attempts)
			}
			if *row.RelayKeyID != r.ids["key"] || *row.ProjectID != r.ids["project"] || *row.TeamID != r.ids["team"] ||
				*row.ServiceAccountID != r.ids["sa"] || *row.PolicyID != r.ids["policy"] || row.UserID != nil || row.InferenceTokenID != nil {
				t.Errorf("attribution %+v", row)
			}
			if attempts > 0 {
				host := map[string]string{"chat": "openai", "resp": "openai", "emb": "openai", "claude": "anthropic", "flaky": "flaky"}[w.model]
				if row.BindingID == nil || *row.BindingID != b.ID || *row.HostID != b.HostID || *row.HostKeyID != r.keys[host].ID || row.UpstreamShape != string(b.Shape) {
					t.Errorf("routing %+v", row)
				}
			} else if row.BindingID != nil || row.HostID != nil || row.HostKeyID != nil {
				t.Errorf("a refused request has routing: %+v", row)
			}
			if row.CreatedAt.Before(start.Add(-time.Millisecond)) || row.CreatedAt.After(end) || row.TTFBMs > row.TotalMs {
				t.Errorf("times %v ttfb %d total %d", row.CreatedAt, row.TTFBMs, row.TotalMs)
			}
		})
		total.Input += row.InputTokens
		total.Output += row.OutputTokens
		total.CacheRead += row.CachedReadTokens
		total.Reasoning += row.ReasoningTokens
		totalCost += row.Cost
	}

	// The rollups hold the ledger's sums, per group and in total.
	sum, err := usage.Summarize(ctx, r.st, usage.SummaryRequest{From: start.Add(-2 * time.Hour), To: end.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Rows) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	tot := sum.Rows[0].Totals
	if tot.Requests != int64(len(cases)) || tot.Errors != 3 || tot.InputTokens != total.Input || tot.OutputTokens != total.Output ||
		tot.CachedReadTokens != total.CacheRead || tot.ReasoningTokens != total.Reasoning || tot.Cost != totalCost {
		t.Errorf("summary %+v, ledger %+v cost %d", tot, total, totalCost)
	}
	assertRollupsMatchLedger(t, r.st)

	if logs := r.logs.String(); strings.Contains(logs, promptMarker) || !strings.Contains(logs, "route=") {
		t.Errorf("the log holds prompt or completion text, or no route:\n%s", logs)
	}
}

// assertRollupsMatchLedger compares the rollups of both grains, detailed and
// coarse, with sums over the ledger itself, group by group.
func assertRollupsMatchLedger(t *testing.T, st *store.Store) {
	t.Helper()
	const q = `
WITH ledger AS (
    SELECT g.grain, g.detailed, date_trunc(g.grain, created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS bucket,
        coalesce(project_id, '00000000-0000-0000-0000-000000000000') AS project_id,
        coalesce(team_id, '00000000-0000-0000-0000-000000000000') AS team_id,
        CASE WHEN g.detailed THEN coalesce(relay_key_id, '00000000-0000-0000-0000-000000000000')
             ELSE '00000000-0000-0000-0000-000000000000' END AS relay_key_id,
        CASE WHEN g.detailed THEN coalesce(host_id, '00000000-0000-0000-0000-000000000000')
             ELSE '00000000-0000-0000-0000-000000000000' END AS host_id,
        model, CASE WHEN g.detailed THEN status ELSE 0 END AS status,
        count(*) AS requests, count(*) FILTER (WHERE status >= 400) AS errors,
        sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cached_read_tokens) AS cached_read_tokens,
        sum(cache_write_tokens) AS cache_write_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost) AS cost
    FROM usage_events CROSS JOIN (VALUES ('hour', true), ('day', true), ('hour', false), ('day', false)) AS g (grain, detailed)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
), rollups AS (
    SELECT grain, detailed, bucket, project_id, team_id, relay_key_id, host_id, model, status, requests, errors,
        input_tokens::numeric, output_tokens::numeric, cached_read_tokens::numeric, cache_write_tokens::numeric,
        reasoning_tokens::numeric, cost::numeric
    FROM usage_rollups
)
SELECT (SELECT count(*) FROM (SELECT * FROM ledger EXCEPT SELECT * FROM rollups) x)
     + (SELECT count(*) FROM (SELECT * FROM rollups EXCEPT SELECT * FROM ledger) y),
       (SELECT count(*) FROM rollups)`
	var diff, n int
	if err := st.Pool().QueryRow(t.Context(), q).Scan(&diff, &n); err != nil {
		t.Fatal(err)
	}
	if diff != 0 || n == 0 {
		t.Errorf("rollups and ledger differ in %d groups (%d rollup rows)", diff, n)
	}
}

// clientID is the caller's X-Request-ID of a ledger row, after checking
// that the row's own id is the one Relay minted.
func clientID(t *testing.T, row store.UsageEvent) string {
	t.Helper()
	if row.ClientRequestID == nil || !strings.HasPrefix(row.RequestID, "req_") || row.RequestID == *row.ClientRequestID {
		t.Fatalf("row ids: request_id %q, client_request_id %v", row.RequestID, row.ClientRequestID)
	}
	return *row.ClientRequestID
}
