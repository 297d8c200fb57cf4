package proxy_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/cache"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/snapshot"
)

// semanticFixture is cacheFixture with one semantic domain ("faq",
// threshold 0.85, embedded by emb-test) over an index in Redis.
func semanticFixture(t *testing.T) (*fixture, *cache.RedisIndex) {
	t.Helper()
	f := cacheFixture(t, nil)
	var emb snapshot.ID
	for _, m := range f.data.Models {
		if m.Name == "emb-test" {
			m.Kind, emb = "embedding", m.ID
		}
	}
	f.policy.Cache = &snapshot.ResponseCache{TTL: time.Minute, Scope: snapshot.CacheScopeProject,
		Semantic: []snapshot.SemanticDomain{{Name: "faq", EmbeddingsModel: emb, Threshold: 0.85}}}
	idx := cache.NewRedisIndex(redistest.Client(t, redistest.URL(t)), redistest.Prefix(t))
	f.cfg.Cache = cache.New(cache.Config{Now: f.clock.Now, Index: idx})
	t.Cleanup(func() { _, _ = idx.Purge(context.Background(), cache.SemanticPolicyPattern(f.policy.ID)) })
	return f, idx
}

// inference returns the next record that is not a semantic lookup's
// embeddings request, and those it passed.
func (f *fixture) inference() (event.Record, []event.Record) {
	f.t.Helper()
	var embs []event.Record
	for {
		rec := f.rec.next(f.t)
		if !strings.HasSuffix(rec.Inbound, "embeddings") {
			f.h.WaitCacheFills()
			return rec, embs
		}
		embs = append(embs, rec)
	}
}

func semBody(text string, stream bool) string {
	return `{"model":"gpt-test","temperature":0,"stream":` + strconv.FormatBool(stream) +
		`,"messages":[{"role":"system","content":"You answer geography questions."},{"role":"user","content":` + strconv.Quote(text) + `}]}`
}

// TestSemanticCache_ParaphraseHitsAboveTheThreshold: a paraphrase of an
// earlier question of the project is answered by its entry, whole and
// streamed, naming the similarity and the entry; a question below the
// threshold goes upstream; every lookup's embeddings request is the
// caller's own, recorded.
func TestSemanticCache_ParaphraseHitsAboveTheThreshold(t *testing.T) {
	t.Parallel()
	f, _ := semanticFixture(t)
	f.start()
	resp, first := f.post("/v1/chat/completions", semBody("What is the capital city of France?", false), nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Cache") != "miss" {
		t.Fatalf("first: %d %q: %s", resp.StatusCode, resp.Header.Get("X-Relay-Cache"), first)
	}
	miss, embs := f.inference()
	if len(embs) != 0 {
		t.Fatalf("a request to an empty partition was embedded before it went upstream: %+v", embs)
	}
	// It is embedded once its answer is kept: the caller's own request,
	// after the chat request upstream.
	if emb := f.rec.next(t); emb.Status != 200 || emb.Model != "emb-test" || emb.ClientRequestID != miss.RequestID ||
		emb.ProjectID != miss.ProjectID || emb.Usage.Input == 0 {
		t.Fatalf("the fill's embeddings request: %+v (miss %s)", emb, miss.RequestID)
	}
	if got := f.requests(); len(got) != 2 || strings.HasSuffix(got[0].Path, "/embeddings") || !strings.HasSuffix(got[1].Path, "/embeddings") {
		t.Fatalf("upstream order: %+v, want the chat request, then its embedding", got)
	}

	resp, second := f.post("/v1/chat/completions", semBody("what is the capital of france", false), nil)
	if resp.Header.Get("X-Relay-Cache") != "hit" {
		t.Fatalf("paraphrase: X-Relay-Cache %q: %s", resp.Header.Get("X-Relay-Cache"), second)
	}
	hit, embs := f.inference()
	if len(embs) != 1 || embs[0].Status != 200 || embs[0].ClientRequestID != hit.RequestID {
		t.Fatalf("the lookup's embeddings request: %+v (hit %s)", embs, hit.RequestID)
	}
	sim, err := strconv.ParseFloat(resp.Header.Get("X-Relay-Cache-Similarity"), 64)
	if err != nil || sim < 0.85 || sim >= 1 {
		t.Errorf("X-Relay-Cache-Similarity %q", resp.Header.Get("X-Relay-Cache-Similarity"))
	}
	if !strings.Contains(second, "capital city of France") {
		t.Errorf("the hit is not the first answer: %s", second)
	}
	if hit.Cache != "hit" || hit.CacheDomain != "faq" || hit.CacheEntry != miss.RequestID || hit.CacheSimilarity < 0.85 ||
		!hit.Usage.IsZero() || hit.CacheSaved != miss.Usage || !strings.Contains(string(hit.RouteDetail), `"kind":"semantic","domain":"faq","entry":"`+miss.RequestID+`"`) {
		t.Errorf("hit record: %+v, detail %s", hit, hit.RouteDetail)
	}

	resp, streamed := f.post("/v1/chat/completions", semBody("What is the capital of France?", true), nil)
	if resp.Header.Get("X-Relay-Cache") != "hit" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
		!strings.Contains(streamed, "data: [DONE]") || !strings.Contains(streamed, "capital city") {
		t.Errorf("streamed paraphrase: %q %q: %s", resp.Header.Get("X-Relay-Cache"), resp.Header.Get("Content-Type"), streamed)
	}
	f.inference()

	resp, other := f.post("/v1/chat/completions", semBody("Tell me about the history of France", false), nil)
	if resp.Header.Get("X-Relay-Cache") != "miss" || resp.Header.Get("X-Relay-Cache-Similarity") != "" {
		t.Errorf("below the threshold: %q: %s", resp.Header.Get("X-Relay-Cache"), other)
	}
	f.inference()
	if n := len(chatRequests(f)); n != 2 {
		t.Errorf("upstream saw %d chat requests, want 2", n)
	}
}

func chatRequests(f *fixture) []string {
	var out []string
	for _, r := range f.requests() {
		if !strings.HasSuffix(r.Path, "/embeddings") {
			out = append(out, r.Path)
		}
	}
	return out
}

// TestSemanticCache_NeverCrossesProjects: two projects under one policy
// sending byte-identical requests never share a semantic entry.
func TestSemanticCache_NeverCrossesProjects(t *testing.T) {
	t.Parallel()
	f, _ := semanticFixture(t)
	f.start()
	other := map[string]string{"Authorization": "Bearer " + otherProjectKey}
	body := semBody("How tall is Mont Blanc?", false)
	for i, step := range []struct {
		h    map[string]string
		want string
	}{{nil, "miss"}, {other, "miss"}, {nil, "hit"}, {other, "hit"}} {
		// The hits' turn is a paraphrase: only the semantic cache can
		// answer it.
		if step.want == "hit" {
			body = semBody("how tall is mont blanc", false)
		}
		resp, out := f.post("/v1/chat/completions", body, step.h)
		if got := resp.Header.Get("X-Relay-Cache"); got != step.want {
			t.Errorf("step %d: X-Relay-Cache %q, want %q: %s", i, got, step.want, out)
		}
		rec, _ := f.inference()
		if step.want == "hit" && rec.CacheDomain != "faq" {
			t.Errorf("step %d: not a semantic hit: %+v", i, rec)
		}
	}
	if n := len(chatRequests(f)); n != 2 {
		t.Errorf("upstream saw %d chat requests, want 2", n)
	}
}

// countingIndex counts the calls an Index sees.
type countingIndex struct {
	cache.Index
	calls atomic.Int64
}

func (c *countingIndex) Candidates(ctx context.Context, part string, b []string) ([]cache.Candidate, error) {
	c.calls.Add(1)
	return c.Index.Candidates(ctx, part, b)
}

func (c *countingIndex) Populated(ctx context.Context, part string) (bool, error) {
	c.calls.Add(1)
	return c.Index.Populated(ctx, part)
}

func (c *countingIndex) Put(ctx context.Context, part, id string, b []string, vec, val []byte, ttl time.Duration) error {
	c.calls.Add(1)
	return c.Index.Put(ctx, part, id, b, vec, val, ttl)
}

// TestSemanticCache_OffMakesNoIndexCall: a policy whose cache has no
// domain, or a request no domain takes, never reaches the index nor
// embeds anything.
func TestSemanticCache_OffMakesNoIndexCall(t *testing.T) {
	t.Parallel()
	f, idx := semanticFixture(t)
	f.policy.Cache.Semantic[0].Metadata = map[string]string{"app": "faq"}
	counting := &countingIndex{Index: idx}
	f.cfg.Cache = cache.New(cache.Config{Now: f.clock.Now, Index: counting})
	f.start()
	for range 2 {
		f.post("/v1/chat/completions", semBody("untagged question", false), nil)
		f.inference()
	}
	if n := counting.calls.Load(); n != 0 {
		t.Errorf("a request no domain takes made %d index calls", n)
	}
	for _, r := range f.requests() {
		if strings.HasSuffix(r.Path, "/embeddings") {
			t.Errorf("a request no domain takes was embedded")
		}
	}
	tagged := `{"model":"gpt-test","temperature":0,"metadata":{"app":"faq"},"messages":[{"role":"user","content":"tagged question"}]}`
	f.post("/v1/chat/completions", tagged, nil)
	f.inference()
	if n := counting.calls.Load(); n != 2 { // a look at its empty partition, and a fill
		t.Errorf("a tagged request made %d index calls, want 2", n)
	}
}

// TestSemanticCache_EveryShape: in every inbound shape a paraphrase is a
// streamed hit for its project and a miss for another project sending
// the same bytes.
func TestSemanticCache_EveryShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"model":"gpt-test","temperature":0,"stream":%s,"messages":[{"role":"user","content":%q}]}`},
		{"messages", "/v1/messages", `{"model":"claude-test","max_tokens":64,"temperature":0,"stream":%s,"system":"geo","messages":[{"role":"user","content":%q}]}`},
		{"responses", "/v1/responses", `{"model":"resp-test","temperature":0,"stream":%s,"input":%q}`},
		{"generate", "/v1/generate", `{"model":"claude-test","temperature":0,"stream":%s,"messages":[{"role":"user","content":%q}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, _ := semanticFixture(t)
			f.start()
			body := func(stream bool, text string) string {
				return fmt.Sprintf(tc.body, strconv.FormatBool(stream), text)
			}
			if resp, b := f.post(tc.path, body(false, "Which river flows through Paris?"), nil); resp.StatusCode != 200 || resp.Header.Get("X-Relay-Cache") != "miss" {
				t.Fatalf("first: %d %q: %s", resp.StatusCode, resp.Header.Get("X-Relay-Cache"), b)
			}
			f.inference()
			para := body(true, "which river flows through paris")
			resp, b := f.post(tc.path, para, nil)
			if resp.Header.Get("X-Relay-Cache") != "hit" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || !strings.Contains(b, "data: ") {
				t.Errorf("paraphrase: %q %q: %s", resp.Header.Get("X-Relay-Cache"), resp.Header.Get("Content-Type"), b)
			}
			f.inference()
			other := map[string]string{"Authorization": "Bearer " + otherProjectKey}
			if resp, b := f.post(tc.path, para, other); resp.StatusCode != 200 || resp.Header.Get("X-Relay-Cache") != "miss" {
				t.Errorf("other project: %d %q: %s", resp.StatusCode, resp.Header.Get("X-Relay-Cache"), b)
			}
			f.inference()
		})
	}
}

// TestSemanticCache_EmbeddingRefusedIsAMiss: a domain whose embeddings
// model the caller's policy does not grant looks nothing up; the request
// is served as an exact miss.
func TestSemanticCache_EmbeddingRefusedIsAMiss(t *testing.T) {
	t.Parallel()
	f, _ := semanticFixture(t)
	delete(f.policy.Models, f.policy.Cache.Semantic[0].EmbeddingsModel)
	f.start()
	resp, b := f.post("/v1/chat/completions", semBody("Is this embedded?", false), nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Cache") != "miss" {
		t.Fatalf("%d %q: %s", resp.StatusCode, resp.Header.Get("X-Relay-Cache"), b)
	}
	f.inference()
	if emb := f.rec.next(t); !strings.HasSuffix(emb.Inbound, "embeddings") || emb.Status == 200 {
		t.Fatalf("the fill's refused embeddings request: %+v", emb)
	}
	// A paraphrase has no vector to be found by: a miss, not an error.
	resp, b = f.post("/v1/chat/completions", semBody("is this embedded", false), nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Cache") != "miss" {
		t.Errorf("paraphrase with no embedding: %d %q: %s", resp.StatusCode, resp.Header.Get("X-Relay-Cache"), b)
	}
	f.inference()
}

// TestSemanticCache_DomainWithoutItsModelIsPassedOver: a domain whose
// embeddings model left the catalog does not stop the next domain that
// takes the request from serving it.
func TestSemanticCache_DomainWithoutItsModelIsPassedOver(t *testing.T) {
	t.Parallel()
	f, _ := semanticFixture(t)
	good := f.policy.Cache.Semantic[0]
	gone := good
	gone.Name, gone.EmbeddingsModel = "gone", snapshot.MCPToolScope(good.EmbeddingsModel, "gone") // in no catalog
	f.policy.Cache.Semantic = []snapshot.SemanticDomain{gone, good}
	f.start()
	if resp, b := f.post("/v1/chat/completions", semBody("Which sea borders Croatia?", false), nil); resp.Header.Get("X-Relay-Cache") != "miss" {
		t.Fatalf("first: %q: %s", resp.Header.Get("X-Relay-Cache"), b)
	}
	f.inference()
	resp, b := f.post("/v1/chat/completions", semBody("which sea borders croatia", false), nil)
	if resp.Header.Get("X-Relay-Cache") != "hit" {
		t.Errorf("paraphrase past a domain with no model: X-Relay-Cache %q: %s", resp.Header.Get("X-Relay-Cache"), b)
	}
	if rec, _ := f.inference(); rec.CacheDomain != "faq" {
		t.Errorf("not the faq domain's hit: %+v", rec)
	}
}

// TestSemanticCache_ToolCallsAreNeverFilled: under nondeterministic an
// answer that calls tools is kept for the same request exactly, but never
// by similarity: its arguments answer that request's turn only.
func TestSemanticCache_ToolCallsAreNeverFilled(t *testing.T) {
	t.Parallel()
	f, _ := semanticFixture(t)
	f.policy.Cache.Nondeterministic = true
	f.start()
	body := func(text string) string {
		return `{"model":"gpt-test","temperature":0,"messages":[{"role":"user","content":` + strconv.Quote(text) + `}],` +
			`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`
	}
	for i, step := range []struct{ text, want string }{
		{"What is the weather in Paris?", "miss"},
		{"What is the weather in Paris?", "hit"},
		{"what is the weather in paris", "miss"},
	} {
		resp, b := f.post("/v1/chat/completions", body(step.text), nil)
		if got := resp.Header.Get("X-Relay-Cache"); got != step.want {
			t.Errorf("step %d: X-Relay-Cache %q, want %q: %s", i, got, step.want, b)
		}
		if i == 0 && !strings.Contains(b, `"tool_calls"`) {
			t.Fatalf("the answer calls no tool: %s", b)
		}
		if rec, _ := f.inference(); rec.CacheDomain != "" {
			t.Errorf("step %d: a semantic hit on a tool call: %+v", i, rec)
		}
	}
}
