package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// callerHeaders is what a curious or hostile caller sends besides its
// relay key: the SDKs' own protocol and telemetry headers, and headers
// that would pick the operator's billing project, organisation or
// credential, claim an origin, change the body's framing, or make the
// mock fail on the shared key.
var callerHeaders = map[string]string{
	"User-Agent":                "claude-cli/2.1.332 (external, sdk-cli)",
	"Accept":                    "application/json",
	"Anthropic-Beta":            "claude-code-20250219,interleaved-thinking-2025-05-14",
	"Openai-Beta":               "responses=v1",
	"X-Client-Request-Id":       "client-req-1",
	"X-Stainless-Os":            "Linux",
	"X-Stainless-Retry-Count":   "0",
	"X-Goog-Api-Client":         "google-genai-sdk/1.30.0 gl-node/v22",
	"X-Goog-User-Project":       "someone-elses-billing-project",
	"Api-Key":                   "azure-credential",
	"Ocp-Apim-Subscription-Key": "apim-credential",
	"Openai-Organization":       "org-caller",
	"Openai-Project":            "proj_caller",
	"X-Forwarded-For":           "10.0.0.1",
	"X-Forwarded-Host":          "internal.example",
	"Forwarded":                 "for=10.0.0.1",
	"X-Real-Ip":                 "10.0.0.1",
	"X-Custom-Thing":            "anything",
	"X-App":                     "cli",
	"Accept-Language":           "*",
	"Cookie":                    "session=1",
	"Traceparent":               "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	"X-Mock-Fault":              "500",
	"X-Relay-Debug":             "1",
	"Anthropic-Dangerous-Direct-Browser-Access": "true",
}

// Every head Relay sends carries these, whatever the caller sent.
// (Traceparent: callerHeaders sends one, and every shape forwards it.)
var baseUpstreamHeaders = []string{"Host", "User-Agent", "Accept", "Content-Type", "Content-Length", "Traceparent"}

// allowedByShape is what the binding's shape lets through of callerHeaders,
// besides the base set and the host key's auth header.
var allowedByShape = map[wire.Shape][]string{
	wire.ShapeOpenAI:          {"Authorization", "Openai-Beta", "X-Client-Request-Id", "X-Stainless-Os", "X-Stainless-Retry-Count"},
	wire.ShapeOpenAIResponses: {"Authorization", "Openai-Beta", "X-Client-Request-Id", "X-Stainless-Os", "X-Stainless-Retry-Count"},
	wire.ShapeAnthropic:       {"X-Api-Key", "Anthropic-Version", "Anthropic-Beta", "X-Stainless-Os", "X-Stainless-Retry-Count"},
	wire.ShapeGemini:          {"X-Goog-Api-Key", "X-Goog-Api-Client"},
}

// tapped is a fixture whose hosts are reached through a byte tap.
func tapped(t *testing.T) (*fixture, *mockupstream.Tap) {
	t.Helper()
	f := newFixture(t)
	u, err := url.Parse(f.up.URL)
	if err != nil {
		t.Fatal(err)
	}
	tap, err := mockupstream.NewTap(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tap.Close)
	return f, tap
}

func tapHeads(t *testing.T, tap *mockupstream.Tap) []mockupstream.TapHead {
	t.Helper()
	heads, err := tap.Heads()
	if err != nil {
		t.Fatal(err)
	}
	return heads
}

func canonicalNames(h mockupstream.TapHead) []string {
	var out []string
	for _, n := range h.Names() {
		out = append(out, http.CanonicalHeaderKey(n))
	}
	slices.Sort(out)
	return out
}

// What leaves Relay for each binding shape, passed through or translated,
// is exactly the base set, the host key's auth header and what the
// shape forwards; the caller's X-Mock-Fault never reaches the mock.
func TestOutboundHeaders_ExactlyTheAllowedSet(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, body string
		shape            wire.Shape
	}{
		{"openai passthrough", "/v1/chat/completions", chatFor("m"), wire.ShapeOpenAI},
		{"openai_responses passthrough", "/v1/responses", `{"model":"m","input":"hi"}`, wire.ShapeOpenAIResponses},
		{"openai_responses translated", "/v1/chat/completions", chatFor("m"), wire.ShapeOpenAIResponses},
		{"anthropic passthrough", "/v1/messages", `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, wire.ShapeAnthropic},
		{"anthropic translated", "/v1/chat/completions", chatFor("m"), wire.ShapeAnthropic},
		{"gemini passthrough", "/gemini/v1beta/models/m:generateContent", gemHello, wire.ShapeGemini},
		{"gemini translated", "/v1/chat/completions", chatFor("m"), wire.ShapeGemini},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, tap := tapped(t)
			h := f.host("up", func(h *snapshot.Host) { h.BaseURL = tap.URL() })
			f.key(h, "k", "sk-up-shared-secret-1")
			upstream := "gpt-4o-mini"
			switch tc.shape {
			case wire.ShapeAnthropic:
				upstream = "claude-sonnet"
			case wire.ShapeGemini:
				upstream = "gemini-2.5-flash"
			}
			f.bind(f.model("m", true), h, tc.shape, upstream)
			f.start()

			resp, body := f.post(tc.path, tc.body, callerHeaders)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			heads := tapHeads(t, tap)
			if len(heads) != 1 {
				t.Fatalf("%d heads crossed the tap", len(heads))
			}
			want := append(slices.Clone(baseUpstreamHeaders), allowedByShape[tc.shape]...)
			slices.Sort(want)
			if got := canonicalNames(heads[0]); !slices.Equal(got, want) {
				t.Errorf("upstream head names\n got %v\nwant %v\n%s", got, want, heads[0].Raw)
			}
			if got := heads[0].Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			for _, v := range []string{"someone-elses", "azure-credential", "org-caller", "10.0.0.1", relayKey} {
				if strings.Contains(string(heads[0].Raw), v) {
					t.Errorf("the upstream head holds %q:\n%s", v, heads[0].Raw)
				}
			}
		})
	}
}

// Claude Code's betas and version reach an anthropic binding as sent.
func TestOutboundHeaders_ClaudeCodeBetasReachAnthropic(t *testing.T) {
	t.Parallel()
	f, tap := tapped(t)
	h := f.host("anthropic", func(h *snapshot.Host) { h.BaseURL = tap.URL() })
	f.key(h, "k", "sk-ant-up-shared-1")
	f.bind(f.model("claude-test", true), h, wire.ShapeAnthropic, "claude-sonnet")
	f.start()
	betas := "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27"
	resp, body := f.post("/v1/messages", messagesBody, map[string]string{
		"Authorization": "", "X-Api-Key": relayKey, "Anthropic-Version": "2023-06-01", "Anthropic-Beta": betas,
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	head := tapHeads(t, tap)[0]
	if head.Get("Anthropic-Beta") != betas || head.Get("Anthropic-Version") != "2023-06-01" || head.Get("X-Api-Key") != "sk-ant-up-shared-1" {
		t.Errorf("upstream head:\n%s", head.Raw)
	}
}

// A header the operator lists on the host goes through; one it may not
// list never does, even if the snapshot somehow holds it.
func TestOutboundHeaders_HostForwardHeaders(t *testing.T) {
	t.Parallel()
	f, tap := tapped(t)
	h := f.host("openai", func(h *snapshot.Host) {
		h.BaseURL = tap.URL()
		h.ForwardHeaders = []string{"X-Custom-Thing", "X-Goog-User-Project", "X-Mock-Fault"}
	})
	f.key(h, "k", "sk-up-shared-secret-1")
	f.bind(f.model("m", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
	f.start()
	resp, body := f.post("/v1/chat/completions", chatFor("m"), callerHeaders)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	head := tapHeads(t, tap)[0]
	if head.Get("X-Custom-Thing") != "anything" || head.Get("X-Goog-User-Project") != "" || head.Get("X-Mock-Fault") != "" {
		t.Errorf("upstream head:\n%s", head.Raw)
	}
}

// Tenant B's X-Mock-Fault does not make the shared key fail: the mock
// never sees it, and tenant A's next call succeeds on the same key.
func TestOutboundHeaders_TenantFaultHeaderNeverReachesTheMock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.mock = mockupstream.New(mockupstream.Options{}) // reads X-Mock-Fault
	f.up = httptest.NewServer(f.mock)
	t.Cleanup(f.up.Close)
	h := f.host("openai")
	f.key(h, "shared", "sk-up-shared-key")
	m := f.model("gpt-test", true)
	f.bind(m, h, wire.ShapeOpenAI, "gpt-4o-mini")
	b := f.tenant("sk-wr-test-tenant-b-0123456789abcdef", m)
	f.start()
	hb := map[string]string{"X-Mock-Fault": "fault-500"}
	for k, v := range b {
		hb[k] = v
	}
	for i := range 3 {
		if resp, body := f.post("/v1/chat/completions", chatBody, hb); resp.StatusCode != http.StatusOK {
			t.Fatalf("tenant B call %d: %d %s", i, resp.StatusCode, body)
		}
	}
	for _, r := range f.requests() {
		if r.Header.Get("X-Mock-Fault") != "" || r.Fault != "" {
			t.Errorf("the mock saw a fault: %q %q", r.Header.Get("X-Mock-Fault"), r.Fault)
		}
	}
	if resp, body := f.post("/v1/chat/completions", chatBody, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("tenant A: %d %s", resp.StatusCode, body)
	}
}

// The provider's headers that describe the shared host key (its rate-limit
// state, organisation and project) reach no caller, passed through or
// translated, streamed or not; its request id does.
func TestResponseHeaders_SharedKeyStateStaysBehind(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	cases := []struct{ name, path, body, requestID string }{
		{"openai", "/v1/chat/completions", chatBody, "X-Request-Id"},
		{"openai stream", "/v1/chat/completions", `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "X-Request-Id"},
		{"anthropic", "/v1/messages", messagesBody, "Request-Id"},
		{"anthropic stream", "/v1/messages", `{"model":"claude-test","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "Request-Id"},
		{"translated to anthropic", "/v1/chat/completions", chatFor("claude-test"), ""},
		{"anthropic 400 passed on", "/v1/messages", `{"model":"claude-test","messages":[{"role":"user","content":"hi"}]}`, "Request-Id"},
	}
	for _, tc := range cases {
		resp, body := f.post(tc.path, tc.body, nil)
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
		for name := range resp.Header {
			l := strings.ToLower(name)
			if strings.HasPrefix(l, "x-ratelimit-") || strings.HasPrefix(l, "anthropic-ratelimit-") ||
				l == "openai-organization" || l == "openai-project" || l == "anthropic-organization-id" {
				t.Errorf("%s: the caller got %s: %v", tc.name, name, resp.Header[name])
			}
		}
		if tc.requestID != "" && resp.Header.Get(tc.requestID) == "" {
			t.Errorf("%s: no %s: %v", tc.name, tc.requestID, resp.Header)
		}
	}
}

// More header fields, or more header bytes, than any SDK sends are
// refused with 431 in the caller's shape before anything goes upstream.
func TestHeaderBounds_RefusedInCallersShape(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	many := map[string]string{}
	for i := range 120 {
		many["X-Filler-"+strings.Repeat("a", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	big := map[string]string{"X-Big": strings.Repeat("b", 70<<10)}
	cases := []struct {
		name, path, body string
		header           map[string]string
		anthropic        bool
	}{
		{"many on chat", "/v1/chat/completions", chatBody, many, false},
		{"big on chat", "/v1/chat/completions", chatBody, big, false},
		{"many on messages", "/v1/messages", messagesBody, many, true},
		{"big on messages", "/v1/messages", messagesBody, big, true},
	}
	for _, tc := range cases {
		resp, body := f.post(tc.path, tc.body, tc.header)
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
		e := decodeError(t, body)
		if tc.anthropic && (e.Type != "error" || e.Error.Type != "invalid_request_error") ||
			!tc.anthropic && e.Error.Code != "request_headers_too_large" {
			t.Errorf("%s: error body %s", tc.name, body)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
	// Within bounds is served.
	if resp, body := f.post("/v1/chat/completions", chatBody, map[string]string{"X-Big": strings.Repeat("b", 32<<10)}); resp.StatusCode != http.StatusOK {
		t.Errorf("within bounds: %d %s", resp.StatusCode, body)
	}
}
