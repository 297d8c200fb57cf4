package proxy_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

const chatBody = `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`
const messagesBody = `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`

func TestProxy_Authentication(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	tests := []struct {
		name   string
		header map[string]string
		code   string
		msg    string
	}{
		{"missing", map[string]string{"Authorization": ""}, "missing_api_key", "Missing relay key"},
		{"unknown", map[string]string{"Authorization": "Bearer sk-wr-nope"}, "invalid_api_key", "unknown credential"},
		{"revoked", map[string]string{"Authorization": "Bearer " + revokedKey}, "invalid_api_key", "revoked"},
		{"expired", map[string]string{"Authorization": "Bearer " + expiredKey}, "invalid_api_key", "expired"},
		{"unknown x-api-key", map[string]string{"Authorization": "", "X-Api-Key": "sk-wr-nope"}, "invalid_api_key", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.post("/v1/chat/completions", chatBody, tt.header)
			e := decodeError(t, body)
			if resp.StatusCode != 401 || e.Error.Code != tt.code || e.Error.Type != "authentication_error" || !strings.Contains(e.Error.Message, tt.msg) {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
			resp, body = f.post("/v1/messages", messagesBody, tt.header)
			e = decodeError(t, body)
			if resp.StatusCode != 401 || e.Type != "error" || e.Error.Type != "authentication_error" || e.RequestID != resp.Header.Get("X-Relay-Request-Id") {
				t.Errorf("anthropic shape: %d %s", resp.StatusCode, body)
			}
		})
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("unauthenticated requests reached the upstream %d times", n)
	}

	t.Run("x-relay-key and x-api-key work", func(t *testing.T) {
		for _, h := range []map[string]string{
			{"Authorization": "", "X-Relay-Key": relayKey},
			{"Authorization": "", "X-Api-Key": relayKey},
		} {
			if resp, body := f.post("/v1/chat/completions", chatBody, h); resp.StatusCode != 200 {
				t.Errorf("%v: %d %s", h, resp.StatusCode, body)
			}
		}
	})

	t.Run("SDK errors", func(t *testing.T) {
		_, err := f.openai(oaopt.WithAPIKey(revokedKey)).Chat.Completions.New(t.Context(), chatParams("gpt-test"))
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 401 || oe.Code != "invalid_api_key" {
			t.Errorf("openai SDK error %v", err)
		}
		c := f.anthropic()
		_, err = c.Messages.New(t.Context(), messageParams("claude-test"), anthopt.WithAPIKey(expiredKey))
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(ae.RawJSON(), `"authentication_error"`) {
			t.Errorf("anthropic SDK error %v", err)
		}
	})
}

func TestProxy_RequestErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	off := f.host("dead-keys")
	f.key(off, "off-1", "sk-up-disabled-secret", func(k *snapshot.HostKey) { k.Enabled = false })
	f.key(off, "bad-1", "sk-up-unusable-secret", func(k *snapshot.HostKey) { k.Usable = false; k.Problem = "env var unset" })
	f.bind(f.model("keyless", true), off, wire.ShapeOpenAI, "x")
	f.model("not-granted", false)
	f.cfg.MaxBodyBytes = 4096
	f.start()
	big := `{"model":"gpt-test","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`

	tests := []struct {
		name   string
		method string
		path   string
		body   string
		header map[string]string
		status int
		code   string // OpenAI code; for Anthropic-shaped answers the error.type
		msg    string
	}{
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"nope","messages":[]}`, nil, 404, "model_not_found", `"nope"`},
		{"unknown pinned host", "POST", "/v1/chat/completions", `{"model":"gpt-test@nowhere","messages":[]}`, nil, 404, "model_not_found", `"gpt-test@nowhere" does not exist`},
		{"not granted", "POST", "/v1/chat/completions", `{"model":"not-granted","messages":[]}`, nil, 404, "model_not_found", `"not-granted" does not exist`},
		{"no policy", "POST", "/v1/chat/completions", chatBody, map[string]string{"Authorization": "Bearer " + noPolicyKey}, 404, "model_not_found", `"gpt-test" does not exist`},
		{"shape not served", "POST", "/v1/embeddings", `{"model":"claude-test","input":"hi"}`, nil, 400, "shape_not_supported", "openai_embeddings"},
		{"responses state unknown", "POST", "/v1/responses", `{"model":"claude-test","input":"hi","previous_response_id":"resp_1"}`, nil, 404, "not_found", "'resp_1' not found"},
		{"responses conversation unknown", "POST", "/v1/responses", `{"model":"claude-test","input":"hi","conversation":"conv_1"}`, nil, 404, "not_found", "Conversation with id 'conv_1' not found"},
		{"untranslatable anthropic", "POST", "/v1/messages", `{"model":"gpt-test","max_tokens":1,"messages":[]}`, nil, 400, "invalid_request_error", `"messages"`},
		{"no usable key", "POST", "/v1/chat/completions", `{"model":"keyless","messages":[]}`, nil, 503, "no_usable_host_key", "keyless"},
		{"malformed json", "POST", "/v1/chat/completions", `{"model":"gpt-test",`, nil, 400, "invalid_request", "malformed JSON"},
		{"malformed json anthropic", "POST", "/v1/messages", `{"model":`, nil, 400, "invalid_request_error", "malformed JSON"},
		{"not an object", "POST", "/v1/embeddings", `["gpt-test"]`, nil, 400, "invalid_request", "not a JSON object"},
		{"missing model", "POST", "/v1/responses", `{"input":"hi"}`, nil, 400, "invalid_request", `"model"`},
		{"too large", "POST", "/v1/chat/completions", big, nil, 413, "request_too_large", "4096"},
		{"too large anthropic", "POST", "/anthropic/v1/messages", big, nil, 413, "request_too_large", "4096"},
		{"unknown path", "POST", "/v1/assistants", chatBody, nil, 404, "not_found", "/v1/assistants"},
		{"wrong method", "GET", "/v1/chat/completions", "", nil, 405, "method_not_allowed", "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(tt.method, tt.path, tt.body, tt.header)
			e := decodeError(t, body)
			code := e.Error.Code
			if e.Type == "error" {
				code = e.Error.Type
			}
			if resp.StatusCode != tt.status || code != tt.code || !strings.Contains(e.Error.Message, tt.msg) {
				t.Errorf("got %d %s", resp.StatusCode, body)
			}
			if resp.Header.Get("X-Relay-Request-Id") == "" || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v", resp.Header)
			}
		})
	}

	t.Run("too large without content length", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+"/v1/chat/completions", strings.NewReader(big))
		req.ContentLength = -1 // chunked: the limit must hold while reading
		req.Header.Set("Authorization", "Bearer "+relayKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
	if n := len(f.requests()); n != 0 {
		t.Errorf("rejected requests reached the upstream %d times", n)
	}
}

// TestProxy_RequestIDHeader: X-Relay-Request-ID is always Relay's own id,
// minted per request; a caller's X-Request-ID never becomes it (callers
// choose theirs, and two may send the same one).
func TestProxy_RequestIDHeader(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	seen := map[string]bool{}
	for _, sent := range []string{"trace:abc-123_x.y", "trace:abc-123_x.y", "has space", strings.Repeat("a", 129), "semi;colon", ""} {
		resp, _ := f.post("/v1/chat/completions", chatBody, map[string]string{"X-Request-ID": sent})
		got := resp.Header.Get("X-Relay-Request-Id")
		if got == sent || !strings.HasPrefix(got, "req_") || len(got) != 36 || seen[got] {
			t.Errorf("X-Request-ID %q gave X-Relay-Request-ID %q", sent, got)
		}
		seen[got] = true
		wantClient := "" // kept only when sane
		if sent == "trace:abc-123_x.y" {
			wantClient = sent
		}
		if rec := f.rec.next(t); rec.RequestID != got || rec.ClientRequestID != wantClient {
			t.Errorf("X-Request-ID %q: record ids %q, client %q", sent, rec.RequestID, rec.ClientRequestID)
		}
	}
}
