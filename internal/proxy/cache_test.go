package proxy_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/cache"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// A relay key of a second project under the same policy.
const otherProjectKey = "sk-wr-test-otherproj-0123456789abcdef"

// cacheFixture is the standard catalog with the response cache on for the
// fixture's policy, and a second project whose key shares the policy.
func cacheFixture(t *testing.T, conf *snapshot.ResponseCache) *fixture {
	t.Helper()
	f := newFixture(t)
	f.standard()
	if conf == nil {
		conf = &snapshot.ResponseCache{TTL: time.Minute}
	}
	f.policy.Cache = conf
	other := &snapshot.Project{ID: f.id(), TeamID: f.data.Teams[0].ID, Slug: "other"}
	sa := &snapshot.ServiceAccount{ID: f.id(), ProjectID: other.ID, Slug: "other-app", PolicyID: f.policy.ID}
	f.data.Projects = append(f.data.Projects, other)
	f.data.ServiceAccounts = append(f.data.ServiceAccounts, sa)
	f.data.RelayKeys = append(f.data.RelayKeys, &snapshot.RelayKey{ID: f.id(), Hash: sha256.Sum256([]byte(otherProjectKey)),
		DisplayPrefix: otherProjectKey[:10], ProjectID: other.ID, ServiceAccountID: sa.ID})
	f.secrets = append(f.secrets, otherProjectKey)
	f.cfg.Cache = cache.New(cache.Config{Now: f.clock.Now})
	return f
}

// settle waits for the last request's record — a miss begins its fill
// before the record goes out — and then for the fills begun so far. It
// returns the record.
func (f *fixture) settle() event.Record {
	f.t.Helper()
	rec := f.rec.next(f.t)
	f.h.WaitCacheFills()
	return rec
}

// cacheCase is one inbound shape's request, whole and streamed.
type cacheCase struct {
	name, path, body string
	// stream is body asking for a stream.
	stream string
	// text reads the answer's text out of a whole body.
	text func(t *testing.T, body string) string
}

func cacheCases() []cacheCase {
	chatText := func(t *testing.T, b string) string {
		var v struct {
			Choices []struct{ Message struct{ Content string } }
		}
		mustJSON(t, b, &v)
		if len(v.Choices) == 0 {
			t.Fatalf("no choices in %s", b)
		}
		return v.Choices[0].Message.Content
	}
	msgText := func(t *testing.T, b string) string {
		var v struct{ Content []struct{ Text string } }
		mustJSON(t, b, &v)
		if len(v.Content) == 0 {
			t.Fatalf("no content in %s", b)
		}
		return v.Content[0].Text
	}
	respText := func(t *testing.T, b string) string {
		var v struct {
			Output []struct {
				Type    string
				Content []struct{ Text string }
			}
		}
		mustJSON(t, b, &v)
		for _, o := range v.Output {
			if o.Type == "message" && len(o.Content) > 0 {
				return o.Content[0].Text
			}
		}
		t.Fatalf("no message in %s", b)
		return ""
	}
	genText := func(t *testing.T, b string) string {
		var v struct {
			Content []struct{ Type, Text string }
		}
		mustJSON(t, b, &v)
		for _, p := range v.Content {
			if p.Type == "text" {
				return p.Text
			}
		}
		t.Fatalf("no text part in %s", b)
		return ""
	}
	return []cacheCase{
		{"chat", "/v1/chat/completions",
			`{"model":"gpt-test","temperature":0,"messages":[{"role":"user","content":"cache me"}]}`,
			`{"model":"gpt-test","temperature":0,"stream":true,"messages":[{"role":"user","content":"cache me"}]}`, chatText},
		{"messages", "/v1/messages",
			`{"model":"claude-test","max_tokens":64,"temperature":0,"messages":[{"role":"user","content":"cache me"}]}`,
			`{"model":"claude-test","max_tokens":64,"temperature":0,"stream":true,"messages":[{"role":"user","content":"cache me"}]}`, msgText},
		{"responses", "/v1/responses",
			`{"model":"resp-test","temperature":0,"input":"cache me"}`,
			`{"model":"resp-test","temperature":0,"stream":true,"input":"cache me"}`, respText},
		{"generate", "/v1/generate",
			`{"model":"claude-test","temperature":0,"messages":[{"role":"user","content":"cache me"}]}`,
			`{"model":"claude-test","temperature":0,"stream":true,"messages":[{"role":"user","content":"cache me"}]}`, genText},
	}
}

func mustJSON(t *testing.T, b string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(b), v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
}

// TestCache_HitInEveryShape: the second byte-identical request of a
// project is answered from the cache, whole and streamed, in the caller's
// shape, without an upstream call, and recorded as a hit with zero usage.
func TestCache_HitInEveryShape(t *testing.T) {
	t.Parallel()
	for _, tc := range cacheCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := cacheFixture(t, nil)
			f.start()
			resp, first := f.post(tc.path, tc.body, nil)
			if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Cache") != "miss" {
				t.Fatalf("first: %d, X-Relay-Cache %q: %s", resp.StatusCode, resp.Header.Get("X-Relay-Cache"), first)
			}
			miss := f.settle()
			resp, second := f.post(tc.path, tc.body, nil)
			if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Cache") != "hit" {
				t.Fatalf("second: %d, X-Relay-Cache %q: %s", resp.StatusCode, resp.Header.Get("X-Relay-Cache"), second)
			}
			if got, want := tc.text(t, second), tc.text(t, first); got != want || want == "" {
				t.Errorf("hit text %q, want %q", got, want)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("upstream saw %d requests, want 1", n)
			}
			hit := f.rec.next(t)
			if hit.Cache != "hit" || !hit.Usage.IsZero() || hit.CacheSaved != miss.Usage || miss.Usage.IsZero() ||
				hit.CacheBindingID != miss.BindingID || hit.Status != 200 {
				t.Errorf("hit record: cache %q usage %+v saved %+v (miss usage %+v) binding %v (miss %v)",
					hit.Cache, hit.Usage, hit.CacheSaved, miss.Usage, hit.CacheBindingID, miss.BindingID)
			}
			// The same request streamed is the same entry, replayed as the
			// caller's stream.
			resp, streamed := f.post(tc.path, tc.stream, nil)
			if resp.Header.Get("X-Relay-Cache") != "hit" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("streamed: X-Relay-Cache %q, Content-Type %q", resp.Header.Get("X-Relay-Cache"), resp.Header.Get("Content-Type"))
			}
			if !strings.Contains(streamed, "data: ") {
				t.Errorf("streamed hit is not an event stream: %s", streamed)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("upstream saw %d requests, want 1", n)
			}
		})
	}
}

// TestCache_NeverCrossesProjects: two projects under one policy sending
// byte-identical requests never share an entry, in any inbound shape.
func TestCache_NeverCrossesProjects(t *testing.T) {
	t.Parallel()
	for _, tc := range cacheCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := cacheFixture(t, nil)
			f.start()
			if resp, b := f.post(tc.path, tc.body, nil); resp.Header.Get("X-Relay-Cache") != "miss" {
				t.Fatalf("first: X-Relay-Cache %q: %s", resp.Header.Get("X-Relay-Cache"), b)
			}
			f.settle()
			other := map[string]string{"Authorization": "Bearer " + otherProjectKey}
			if resp, b := f.post(tc.path, tc.body, other); resp.StatusCode != 200 || resp.Header.Get("X-Relay-Cache") != "miss" {
				t.Fatalf("other project: %d, X-Relay-Cache %q: %s", resp.StatusCode, resp.Header.Get("X-Relay-Cache"), b)
			}
			if n := len(f.requests()); n != 2 {
				t.Errorf("upstream saw %d requests, want 2: the other project was served the first's entry", n)
			}
			f.settle()
			// Each project now hits its own entry.
			for _, h := range []map[string]string{nil, other} {
				if resp, b := f.post(tc.path, tc.body, h); resp.Header.Get("X-Relay-Cache") != "hit" {
					t.Errorf("X-Relay-Cache %q: %s", resp.Header.Get("X-Relay-Cache"), b)
				}
			}
		})
	}
}

// TestCache_ScopeNarrowsToTheRelayKeyOrHeader: a policy that narrows the
// scope keeps entries apart by relay key, or by the header's value.
func TestCache_ScopeNarrowsToTheRelayKeyOrHeader(t *testing.T) {
	t.Parallel()
	const body = `{"model":"gpt-test","seed":7,"messages":[{"role":"user","content":"scoped"}]}`
	f := cacheFixture(t, &snapshot.ResponseCache{TTL: time.Minute, Scope: snapshot.CacheScopeHeader, ScopeHeader: "X-Tenant"})
	f.start()
	a, b := map[string]string{"X-Tenant": "a"}, map[string]string{"X-Tenant": "b"}
	for i, step := range []struct {
		h    map[string]string
		want string
	}{{a, "miss"}, {b, "miss"}, {a, "hit"}, {b, "hit"}} {
		resp, out := f.post("/v1/chat/completions", body, step.h)
		if got := resp.Header.Get("X-Relay-Cache"); got != step.want {
			t.Errorf("step %d: X-Relay-Cache %q, want %q: %s", i, got, step.want, out)
		}
		f.settle()
	}
}

// TestCache_CallerControls: Cache-Control and X-Relay-Cache decide whether
// the cache is read and filled; the answer says what happened.
func TestCache_CallerControls(t *testing.T) {
	t.Parallel()
	const body = `{"model":"gpt-test","temperature":0,"messages":[{"role":"user","content":"controls"}]}`
	f := cacheFixture(t, nil)
	f.start()
	steps := []struct {
		h        map[string]string
		want     string
		upstream int // requests the upstream has seen after the step
	}{
		{map[string]string{"Cache-Control": "no-store"}, "bypass", 1}, // neither read nor filled
		{map[string]string{"X-Relay-Cache": "bypass"}, "bypass", 2},
		{nil, "miss", 3},
		{nil, "hit", 3},
		{map[string]string{"Cache-Control": "no-cache"}, "miss", 4}, // not read, filled again
		{map[string]string{"X-Relay-Cache": "refresh"}, "miss", 5},
		{map[string]string{"X-Relay-Cache": "bypass"}, "bypass", 6},
		{nil, "hit", 6},
	}
	for i, s := range steps {
		resp, out := f.post("/v1/chat/completions", body, s.h)
		if got := resp.Header.Get("X-Relay-Cache"); got != s.want {
			t.Errorf("step %d: X-Relay-Cache %q, want %q: %s", i, got, s.want, out)
		}
		if n := len(f.requests()); n != s.upstream {
			t.Errorf("step %d: upstream saw %d requests, want %d", i, n, s.upstream)
		}
		f.settle()
	}
	st := f.h.CacheStats()
	if st.Hits != 2 || st.Bypasses != 3 || st.Fills != 3 || st.FillBytes == 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestCache_NondeterministicIsNotCached: a request that samples (no
// temperature 0, no seed) and an answer that calls tools are not kept,
// unless the policy says so.
func TestCache_NondeterministicIsNotCached(t *testing.T) {
	t.Parallel()
	sampling := `{"model":"gpt-test","messages":[{"role":"user","content":"sample"}]}`
	tools := `{"model":"gpt-test","temperature":0,"messages":[{"role":"user","content":"weather?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		f := cacheFixture(t, nil)
		f.start()
		for range 2 {
			if resp, b := f.post("/v1/chat/completions", sampling, nil); resp.Header.Get("X-Relay-Cache") != "off" {
				t.Errorf("sampling: X-Relay-Cache %q: %s", resp.Header.Get("X-Relay-Cache"), b)
			}
			f.settle()
			if resp, b := f.post("/v1/chat/completions", tools, nil); resp.Header.Get("X-Relay-Cache") != "miss" {
				t.Errorf("tools: X-Relay-Cache %q: %s", resp.Header.Get("X-Relay-Cache"), b)
			}
			f.settle()
		}
		if n := len(f.requests()); n != 4 {
			t.Errorf("upstream saw %d requests, want 4", n)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		t.Parallel()
		f := cacheFixture(t, &snapshot.ResponseCache{TTL: time.Minute, Nondeterministic: true})
		f.start()
		for i, want := range []string{"miss", "hit"} {
			for _, body := range []string{sampling, tools} {
				if resp, b := f.post("/v1/chat/completions", body, nil); resp.Header.Get("X-Relay-Cache") != want {
					t.Errorf("round %d: X-Relay-Cache %q, want %q: %s", i, resp.Header.Get("X-Relay-Cache"), want, b)
				}
				f.settle()
			}
		}
	})
}

// TestCache_EntriesExpireAndAreBounded: an entry answers for its TTL, and
// an answer larger than the policy's maximum is never kept.
func TestCache_EntriesExpireAndAreBounded(t *testing.T) {
	t.Parallel()
	const body = `{"model":"gpt-test","temperature":0,"messages":[{"role":"user","content":"ttl"}]}`
	f := cacheFixture(t, &snapshot.ResponseCache{TTL: time.Minute})
	f.start()
	for i, want := range []string{"miss", "hit"} {
		if resp, _ := f.post("/v1/chat/completions", body, nil); resp.Header.Get("X-Relay-Cache") != want {
			t.Errorf("step %d: %q, want %q", i, resp.Header.Get("X-Relay-Cache"), want)
		}
		f.settle()
	}
	f.clock.Advance(2 * time.Minute)
	if resp, _ := f.post("/v1/chat/completions", body, nil); resp.Header.Get("X-Relay-Cache") != "miss" {
		t.Errorf("after the TTL: %q, want miss", resp.Header.Get("X-Relay-Cache"))
	}

	small := cacheFixture(t, &snapshot.ResponseCache{TTL: time.Minute, MaxEntryBytes: 64})
	small.start()
	for range 2 {
		if resp, _ := small.post("/v1/chat/completions", body, nil); resp.Header.Get("X-Relay-Cache") != "miss" {
			t.Errorf("over the entry limit: %q, want miss", resp.Header.Get("X-Relay-Cache"))
		}
		small.settle()
	}
	if st := small.h.CacheStats(); st.Fills != 0 || st.TooLarge == 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestCache_OffSaysOff: a policy without a cache answers X-Relay-Cache: off
// and keeps nothing.
func TestCache_OffSaysOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.cfg.Cache = cache.New(cache.Config{})
	f.start()
	for range 2 {
		resp, _ := f.post("/v1/chat/completions", `{"model":"gpt-test","temperature":0,"messages":[{"role":"user","content":"x"}]}`, nil)
		if got := resp.Header.Get("X-Relay-Cache"); got != "off" {
			t.Errorf("X-Relay-Cache %q, want off", got)
		}
	}
	if st := f.h.CacheStats(); st != (cache.Stats{}) {
		t.Errorf("stats %+v", st)
	}
}

// TestCache_PurgePolicy: purging a policy's entries makes the next request
// a miss.
func TestCache_PurgePolicy(t *testing.T) {
	t.Parallel()
	const body = `{"model":"gpt-test","temperature":0,"messages":[{"role":"user","content":"purge"}]}`
	f := cacheFixture(t, nil)
	f.start()
	f.post("/v1/chat/completions", body, nil)
	f.settle()
	n, err := f.h.Cache().PurgePolicy(t.Context(), f.policy.ID)
	if err != nil || n != 1 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	if resp, _ := f.post("/v1/chat/completions", body, nil); resp.Header.Get("X-Relay-Cache") != "miss" {
		t.Errorf("after purge: %q, want miss", resp.Header.Get("X-Relay-Cache"))
	}
}

// TestCache_SDKsAccumulateTheSameAnswer: a cached answer replayed as a
// stream reads to the official SDKs exactly as the original did — text,
// tool calls and usage — whichever binding shape produced it.
func TestCache_SDKsAccumulateTheSameAnswer(t *testing.T) {
	t.Parallel()
	f := cacheFixture(t, &snapshot.ResponseCache{TTL: time.Minute, Nondeterministic: true})
	f.start()
	ctx := t.Context()

	weather := openai.ChatCompletionToolUnionParam{OfFunction: &openai.ChatCompletionFunctionToolParam{
		Function: shared.FunctionDefinitionParam{Name: "get_weather", Parameters: shared.FunctionParameters{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}}
	// Chat through the OpenAI binding and through the Anthropic one
	// (translated): both answers replay to openai-go.
	for _, model := range []string{"gpt-test", "claude-test"} {
		for _, p := range []openai.ChatCompletionNewParams{
			{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream me back")}},
			{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Paris?")}, Tools: []openai.ChatCompletionToolUnionParam{weather}},
		} {
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			var got [2]openai.ChatCompletionAccumulator
			var states [2]string
			for i := range 2 {
				var hr *http.Response
				s := f.openai().Chat.Completions.NewStreaming(ctx, p, oaopt.WithResponseInto(&hr))
				for s.Next() {
					got[i].AddChunk(s.Current())
				}
				if err := s.Err(); err != nil {
					t.Fatalf("%s stream %d: %v", model, i, err)
				}
				states[i] = hr.Header.Get("X-Relay-Cache")
				f.settle()
			}
			if states != [2]string{"miss", "hit"} {
				t.Fatalf("%s: X-Relay-Cache %v, want [miss hit]", model, states)
			}
			a, b := got[0].ChatCompletion, got[1].ChatCompletion
			if len(a.Choices) != 1 || len(b.Choices) != 1 {
				t.Fatalf("%s: choices %d and %d", model, len(a.Choices), len(b.Choices))
			}
			am, bm := a.Choices[0].Message, b.Choices[0].Message
			if am.Content != bm.Content || len(am.ToolCalls) != len(bm.ToolCalls) || a.Choices[0].FinishReason != b.Choices[0].FinishReason {
				t.Errorf("%s: replay %q %d calls %q, original %q %d calls %q", model, bm.Content, len(bm.ToolCalls), b.Choices[0].FinishReason, am.Content, len(am.ToolCalls), a.Choices[0].FinishReason)
			}
			for i := range min(len(am.ToolCalls), len(bm.ToolCalls)) {
				x, y := am.ToolCalls[i], bm.ToolCalls[i]
				if x.ID != y.ID || x.Function.Name != y.Function.Name || x.Function.Arguments != y.Function.Arguments {
					t.Errorf("%s: tool call %d replayed %+v, original %+v", model, i, y, x)
				}
			}
			if a.Usage.PromptTokens != b.Usage.PromptTokens || a.Usage.CompletionTokens != b.Usage.CompletionTokens || a.Usage.PromptTokens == 0 {
				t.Errorf("%s: usage replayed %+v, original %+v", model, b.Usage, a.Usage)
			}
			if am.Content == "" && len(am.ToolCalls) == 0 {
				t.Errorf("%s: empty answer", model)
			}
		}
	}

	// Messages through the Anthropic binding and through the OpenAI one.
	for _, model := range []string{"claude-test", "gpt-test"} {
		p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 128,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather in Rome?"))},
			Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
				InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}}}}
		var got [2]anthropic.Message
		for i := range 2 {
			s := f.anthropic().Messages.NewStreaming(ctx, p)
			for s.Next() {
				if err := got[i].Accumulate(s.Current()); err != nil {
					t.Fatalf("%s accumulate %d: %v", model, i, err)
				}
			}
			if err := s.Err(); err != nil {
				t.Fatalf("%s stream %d: %v", model, i, err)
			}
			f.settle()
		}
		a, b := got[0], got[1]
		if len(a.Content) == 0 || len(a.Content) != len(b.Content) || a.StopReason != b.StopReason {
			t.Fatalf("%s: replay %d blocks %q, original %d blocks %q", model, len(b.Content), b.StopReason, len(a.Content), a.StopReason)
		}
		for i := range a.Content {
			x, y := a.Content[i], b.Content[i]
			if x.Type != y.Type || x.Text != y.Text || x.ID != y.ID || x.Name != y.Name || string(x.Input) != string(y.Input) {
				t.Errorf("%s: block %d replayed %+v, original %+v", model, i, y, x)
			}
		}
		if a.Usage.InputTokens != b.Usage.InputTokens || a.Usage.OutputTokens != b.Usage.OutputTokens || a.Usage.InputTokens == 0 {
			t.Errorf("%s: usage replayed %+v, original %+v", model, b.Usage, a.Usage)
		}
	}
	if st := f.h.CacheStats(); st.Hits != 6 {
		t.Errorf("hits %d, want 6", st.Hits)
	}
}

// TestCache_SharedThroughRedis: two Relays on one Redis share entries (a
// pod fills, another hits), and keep projects apart there too.
func TestCache_SharedThroughRedis(t *testing.T) {
	t.Parallel()
	store := cache.NewRedis(redistest.Client(t, redistest.URL(t)), redistest.Prefix(t))
	const body = `{"model":"gpt-test","temperature":0,"messages":[{"role":"user","content":"pods"}]}`
	a := cacheFixture(t, nil)
	a.cfg.Cache = cache.New(cache.Config{Store: store})
	a.start()
	b := cacheFixture(t, nil)
	// The same catalog ids, so both pods see one policy and project.
	b.data, b.policy = a.data, a.policy
	b.cfg.Cache = cache.New(cache.Config{Store: store})
	b.start()
	t.Cleanup(func() { _, _ = store.Purge(context.Background(), cache.PolicyPattern(a.policy.ID)) })
	if resp, _ := a.post("/v1/chat/completions", body, nil); resp.Header.Get("X-Relay-Cache") != "miss" {
		t.Fatalf("pod a: %q", resp.Header.Get("X-Relay-Cache"))
	}
	a.settle()
	if resp, _ := b.post("/v1/chat/completions", body, map[string]string{"Authorization": "Bearer " + otherProjectKey}); resp.Header.Get("X-Relay-Cache") != "miss" {
		t.Errorf("pod b, other project: %q, want miss", resp.Header.Get("X-Relay-Cache"))
	}
	poll.Until(t, 5*time.Second, "pod b hits pod a's entry", func() bool {
		resp, _ := b.post("/v1/chat/completions", body, nil)
		return resp.Header.Get("X-Relay-Cache") == "hit"
	})
}

// spentLimiter refuses model "dear" on budget while spent is set.
type spentLimiter struct{ spent atomic.Bool }

func (l *spentLimiter) Admit(_ context.Context, a *admission.Admission) (func(wire.Usage), error) {
	if l.spent.Load() && a.Model.Name == "dear" {
		return nil, &wire.Error{Kind: wire.ErrBudgetExceeded, Msg: "The daily budget of this project is spent."}
	}
	return func(wire.Usage) {}, nil
}

// TestCache_BudgetFallbackIsNotKeptForTheModelAsked: a request the budget
// sends to a cheaper fallback is answered by that model, and its answer is
// not kept under the model the caller asked for: once the budget renews,
// the same request goes to that model.
func TestCache_BudgetFallbackIsNotKeptForTheModelAsked(t *testing.T) {
	t.Parallel()
	f := routeFixture(t)
	h := f.host("h")
	f.key(h, "k", "sk-up-k-secret")
	dear, cheap := f.model("dear", true), f.model("cheap", true)
	dear.Fallbacks = []snapshot.ID{cheap.ID}
	f.bind(dear, h, wire.ShapeOpenAI, "dear-upstream").Pricing = snapshot.Pricing{Input: 10_000_000, Output: 30_000_000}
	f.bind(cheap, h, wire.ShapeOpenAI, "cheap-upstream").Pricing = snapshot.Pricing{Input: 1_000_000, Output: 2_000_000}
	f.policy.BudgetFallback = true
	f.policy.Cache = &snapshot.ResponseCache{TTL: time.Minute}
	f.cfg.Cache = cache.New(cache.Config{Now: f.clock.Now})
	l := &spentLimiter{}
	l.spent.Store(true)
	f.cfg.Limiter = l
	f.start()
	const body = `{"model":"dear","temperature":0,"messages":[{"role":"user","content":"hi"}]}`
	resp, out := f.post("/v1/chat/completions", body, nil)
	if resp.StatusCode != 200 || !strings.Contains(out, "cheap-upstream") {
		t.Fatalf("over budget: %d %s", resp.StatusCode, out)
	}
	f.settle()
	l.spent.Store(false)
	resp, out = f.post("/v1/chat/completions", body, nil)
	if resp.Header.Get("X-Relay-Cache") != "miss" || !strings.Contains(out, "dear-upstream") {
		t.Errorf("budget renewed: X-Relay-Cache %q: %s", resp.Header.Get("X-Relay-Cache"), out)
	}
	f.settle()
}
