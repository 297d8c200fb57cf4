package profile

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/wire"
)

// Every profile's URL layout: the public path becomes the host's, the
// profile's query joins the call's, and no profile is the plain public API.
func TestURL_LaysOutEachProfile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		prof   string
		base   string
		params map[string]string
		call   Call
		want   string
	}{
		{"", "https://api.openai.com/v1", nil, Call{Shape: wire.ShapeOpenAI, Path: "/v1/chat/completions", Query: "a=1"},
			"https://api.openai.com/v1/chat/completions?a=1"},
		{"azure_openai", "https://res.openai.azure.com/openai/", map[string]string{"api_version": "2024-10-21"},
			Call{Shape: wire.ShapeOpenAI, Path: "/v1/chat/completions", Model: "gpt-4o-prod"},
			"https://res.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"},
		{"azure_openai", "https://res.openai.azure.com/openai", map[string]string{"api_version": "2024-10-21"},
			Call{Shape: wire.ShapeOpenAI, Path: "/v1/embeddings", Model: "emb"},
			"https://res.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-10-21"},
		{"azure_openai", "https://res.openai.azure.com/openai", map[string]string{"api_version": "2025-04-01-preview"},
			Call{Shape: wire.ShapeOpenAIResponses, Path: "/v1/responses", Model: "o4"},
			"https://res.openai.azure.com/openai/responses?api-version=2025-04-01-preview"},
		{"azure_openai_v1", "https://res.openai.azure.com/openai/v1", nil,
			Call{Shape: wire.ShapeOpenAI, Path: "/v1/chat/completions", Model: "gpt-4o"},
			"https://res.openai.azure.com/openai/v1/chat/completions"},
		{"azure_openai_v1", "https://res.openai.azure.com/openai/v1", map[string]string{"api_version": "preview"},
			Call{Shape: wire.ShapeOpenAIResponses, Path: "/v1/responses"},
			"https://res.openai.azure.com/openai/v1/responses?api-version=preview"},
		{"vertex", "https://us-central1-aiplatform.googleapis.com/v1", map[string]string{"project": "p1", "location": "us-central1"},
			Call{Shape: wire.ShapeGemini, Path: "/v1beta/models/gemini-2.0-flash:streamGenerateContent", Query: "alt=sse", Model: "gemini-2.0-flash", Stream: true},
			"https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent?alt=sse"},
		{"vertex", "https://aiplatform.googleapis.com/v1", map[string]string{"project": "p1", "location": "global"},
			Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages", Model: "claude-sonnet-4@20250514"},
			"https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict"},
		{"vertex", "https://aiplatform.googleapis.com/v1", map[string]string{"project": "p1", "location": "global"},
			Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages", Model: "claude-sonnet-4@20250514", Stream: true},
			"https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict"},
		{"vertex", "https://aiplatform.googleapis.com/v1", map[string]string{"project": "p1", "location": "global"},
			Call{Shape: wire.ShapeOpenAI, Path: "/v1/chat/completions", Model: "google/gemini-2.0-flash"},
			"https://aiplatform.googleapis.com/v1/projects/p1/locations/global/endpoints/openapi/chat/completions"},
		{"bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com", map[string]string{"region": "us-east-1"},
			Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages", Model: "anthropic.claude-3-5-sonnet-20240620-v1:0", Stream: true},
			"https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1:0/invoke-with-response-stream"},
		{"ollama", "http://localhost:11434/v1", nil, Call{Shape: wire.ShapeOpenAI, Path: "/v1/chat/completions"},
			"http://localhost:11434/v1/chat/completions"},
	} {
		p := Lookup(tc.prof)
		if tc.prof != "" && p == nil {
			t.Fatalf("no profile %q", tc.prof)
		}
		if got := p.URL(tc.base, tc.params, tc.call); got != tc.want {
			t.Errorf("%s %s:\n got %s\nwant %s", tc.prof, tc.call.Path, got, tc.want)
		}
	}
}

// Rewrites keep member order and bytes, drop and rename members, add
// defaults the body lacks and rename message roles; a call they do not
// apply to keeps its body.
func TestBody_Rewrites(t *testing.T) {
	t.Parallel()
	chat := Call{Shape: wire.ShapeOpenAI, Path: "/v1/chat/completions"}
	for _, tc := range []struct {
		prof string
		call Call
		in   string
		want string
	}{
		{"vertex", Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages"},
			`{"model":"claude","max_tokens":5,"stream":true,"messages":[]}`,
			`{"max_tokens":5,"stream":true,"messages":[],"anthropic_version":"vertex-2023-10-16"}`},
		{"vertex", Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages"},
			`{"anthropic_version":"vertex-2023-10-16","messages":[]}`,
			`{"anthropic_version":"vertex-2023-10-16","messages":[]}`},
		{"mistral", chat,
			`{"model":"m","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"hi \u00e9"}],"max_completion_tokens":9,"stream":true,"stream_options":{"include_usage":true}}`,
			`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi \u00e9"}],"max_tokens":9,"stream":true}`},
		{"mistral", chat, `{"max_tokens":1,"max_completion_tokens":9}`, `{"max_tokens":9}`},
		{"mistral", Call{Shape: wire.ShapeOpenAI, Path: "/v1/embeddings"}, `{"model":"e","input":"x"}`, `{"model":"e","input":"x"}`},
		{"vllm", chat, `{"messages":[{"role":"developer","content":"x"}]}`, `{"messages":[{"role":"developer","content":"x"}]}`},
		// Claude Code's betas: the ones Bedrock serves move into the
		// body, in order and once each; the rest are left out.
		{"bedrock", Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages", Header: http.Header{"Anthropic-Beta": {
			"claude-code-20250219,interleaved-thinking-2025-05-14, fine-grained-tool-streaming-2025-05-14", "interleaved-thinking-2025-05-14,context-1m-2025-08-07"}}},
			`{"model":"claude","max_tokens":5,"messages":[]}`,
			`{"max_tokens":5,"messages":[],"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14","fine-grained-tool-streaming-2025-05-14","context-1m-2025-08-07"]}`},
		{"bedrock", Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages", Header: http.Header{"Anthropic-Beta": {"claude-code-20250219,oauth-2025-04-20"}}},
			`{"model":"claude","messages":[]}`,
			`{"messages":[],"anthropic_version":"bedrock-2023-05-31"}`},
		{"bedrock", Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages", Header: http.Header{"Anthropic-Beta": {"context-1m-2025-08-07"}}},
			`{"anthropic_beta":["output-128k-2025-02-19"],"messages":[]}`,
			`{"anthropic_beta":["output-128k-2025-02-19"],"messages":[],"anthropic_version":"bedrock-2023-05-31"}`},
	} {
		p := Lookup(tc.prof)
		got, err := p.Body(nil, []byte(tc.in), tc.call)
		if err != nil {
			t.Fatalf("%s: %v", tc.prof, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.prof, got, tc.want)
		}
	}
	if _, err := Lookup("mistral").Body(nil, []byte(`[1]`), chat); err == nil {
		t.Error("a body that is not an object was rewritten")
	}
	if !Lookup("mistral").Drops(chat, "stream_options") || Lookup("vllm").Drops(chat, "stream_options") {
		t.Error("Drops(stream_options) is wrong")
	}
}

// The betas Bedrock's allow-list leaves out are named, once each and in
// order, for X-Relay-Dropped-Fields; a body with its own anthropic_beta
// reads no header and names nothing.
func TestDroppedHeaders_NameWhatTheAllowListLeavesOut(t *testing.T) {
	t.Parallel()
	msgs := func(h ...string) Call {
		return Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages", Header: http.Header{"Anthropic-Beta": h}}
	}
	for _, tc := range []struct {
		prof, body string
		call       Call
		want       string
	}{
		{"bedrock", `{"messages":[]}`, msgs("claude-code-20250219, interleaved-thinking-2025-05-14", "oauth-2025-04-20,claude-code-20250219"),
			"anthropic-beta:claude-code-20250219,anthropic-beta:oauth-2025-04-20"},
		{"bedrock", `{"messages":[]}`, msgs("interleaved-thinking-2025-05-14"), ""},
		{"bedrock", `{"messages":[]}`, msgs(" , "), ""},
		{"bedrock", `{"anthropic_beta":[],"messages":[]}`, msgs("claude-code-20250219"), ""},
		{"bedrock", `{"messages":[]}`, Call{Shape: wire.ShapeAnthropic, Path: "/v1/messages"}, ""},
		{"vertex", `{"messages":[]}`, msgs("claude-code-20250219"), ""},
	} {
		if got := Lookup(tc.prof).DroppedHeaders([]byte(tc.body), tc.call); got != tc.want {
			t.Errorf("%s %s %v: %q, want %q", tc.prof, tc.body, tc.call.Header, got, tc.want)
		}
	}
}

// Every OpenAI-compatible profile whose server sends stream usage only
// when asked (UsageWhenAsked) lets Relay ask: it does not drop
// stream_options, so the proxy's include_usage reaches the server.
func TestCompat_StreamUsageIsAskedForWhereItMustBe(t *testing.T) {
	t.Parallel()
	chat := Call{Shape: wire.ShapeOpenAI, Path: "/v1/chat/completions", Stream: true}
	for _, p := range All() {
		if p.Serves(wire.ShapeOpenAI) && p.Answer.StreamUsage == UsageWhenAsked && p.Drops(chat, "stream_options") {
			t.Errorf("%s sends stream usage only when asked, but drops stream_options", p.Name)
		}
	}
}

// Check names the first problem: the profile, or the parameter.
func TestCheck_NamesTheProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		prof   string
		params map[string]string
		field  string
	}{
		{"nope", nil, "profile"},
		{"azure_openai", nil, "profile_params.api_version"},
		{"azure_openai", map[string]string{"api_version": "v", "x": "y"}, "profile_params.x"},
		{"azure_openai", map[string]string{"api_version": "v", "token_url": "ftp://x"}, "profile_params.token_url"},
		{"vertex", map[string]string{"project": "a b", "location": "l"}, "profile_params.project"},
		{"bedrock", map[string]string{"region": "us-east-1"}, "profile_params.access_key_id"},
		{"", map[string]string{"a": "b"}, "profile_params.a"},
	} {
		var ce *CheckError
		if err := Check(tc.prof, tc.params); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Check(%q, %v) = %v, want a problem with %s", tc.prof, tc.params, err, tc.field)
		}
	}
	for _, ok := range []struct {
		prof   string
		params map[string]string
	}{
		{"", nil},
		{"azure_openai", map[string]string{"api_version": "2024-10-21"}},
		{"azure_openai_v1", map[string]string{"tenant_id": "t", "client_id": "c"}},
		{"vertex", map[string]string{"project": "p", "location": "global"}},
		{"ollama", nil},
	} {
		if err := Check(ok.prof, ok.params); err != nil {
			t.Errorf("Check(%q, %v) = %v", ok.prof, ok.params, err)
		}
	}
	// Every row serves a shape and names its parameters once.
	for _, p := range All() {
		if len(p.Shapes) == 0 || p.Title == "" || p.Doc == "" {
			t.Errorf("%s: no shapes, title or doc", p.Name)
		}
		seen := map[string]bool{}
		for _, x := range p.Params {
			if seen[x.Name] {
				t.Errorf("%s: parameter %s twice", p.Name, x.Name)
			}
			seen[x.Name] = true
		}
	}
}

// One fetch per token however many calls want it at once; a token near
// its end is refreshed in the background once while calls keep using it;
// a failed fetch is not retried by every call.
func TestTokens_OneFetchPerExpiry(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	tk := newTokens(Config{Now: clock, Logger: slog.New(slog.DiscardHandler), TokenTimeout: defaultTokenTimeout}, "test")
	var fetches atomic.Int32
	release := make(chan struct{})
	fetch := func(context.Context) (string, time.Duration, error) {
		n := fetches.Add(1)
		<-release
		return "tok" + string(rune('0'+n)), 100 * time.Second, nil
	}
	k := tokenKey{key: "k"}
	var wg sync.WaitGroup
	got := make([]string, 50)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := tk.get(context.Background(), k, fetch)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	// Every caller is waiting on the one fetch before it ends.
	poll.Until(t, 10*time.Second, "the first fetch", func() bool { return fetches.Load() > 0 })
	close(release)
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for 50 concurrent calls, want 1", n)
	}
	for _, v := range got {
		if v != "tok1" {
			t.Fatalf("a call got %q", v)
		}
	}
	// At 80 s (past three quarters) calls still get tok1 and one refresh runs.
	advance(80 * time.Second)
	for range 20 {
		if v, _ := tk.get(context.Background(), k, fetch); v != "tok1" && v != "tok2" {
			t.Fatalf("during refresh a call got %q", v)
		}
	}
	poll.Until(t, 10*time.Second, "the refreshed token", func() bool {
		v, _ := tk.get(context.Background(), k, fetch)
		return v == "tok2"
	})
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after the refresh, want 2", n)
	}

	// A refusing endpoint: the calls that find no good token share one
	// failed fetch and fail at once until the backoff passes.
	bad := tokenKey{key: "bad"}
	var refusals atomic.Int32
	refuse := func(context.Context) (string, time.Duration, error) {
		refusals.Add(1)
		return "", 0, &CredentialError{Reason: "token endpoint answered 401 invalid_client", Refused: true}
	}
	for range 10 {
		var ce *CredentialError
		if _, err := tk.get(context.Background(), bad, refuse); !errors.As(err, &ce) || !ce.Refused {
			t.Fatalf("refused fetch gave %v", err)
		}
	}
	if n := refusals.Load(); n != 1 {
		t.Errorf("%d fetches to a refusing endpoint within its backoff, want 1", n)
	}
	advance(2 * time.Second)
	_, _ = tk.get(context.Background(), bad, refuse)
	if n := refusals.Load(); n != 2 {
		t.Errorf("%d fetches after the backoff, want 2", n)
	}
}

// docs/profiles.md has a section or table row for every profile.
func TestRegistry_MatchesTheDocs(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range All() {
		if !strings.Contains(string(doc), "### "+p.Name+"\n") && !strings.Contains(string(doc), "| "+p.Name+" |") {
			t.Errorf("docs/profiles.md does not describe %s", p.Name)
		}
		for _, x := range p.Params {
			if !strings.Contains(string(doc), "`"+x.Name+"`") && p.Name != "azure_openai_v1" {
				t.Errorf("docs/profiles.md does not name %s's parameter %s", p.Name, x.Name)
			}
		}
	}
}
