package proxy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/wire"
)

// trustEndpoint is one inbound shape served by passthrough in the standard
// catalog; members completes a minimal request after its model.
type trustEndpoint struct {
	path, model, upstream, members string
	anthropic                      bool
}

var trustEndpoints = []trustEndpoint{
	{"/v1/chat/completions", "gpt-test", "gpt-4o-mini", `"messages":[{"role":"user","content":"hi"}]`, false},
	{"/v1/messages", "claude-test", "claude-sonnet-cached-cache-write", `"max_tokens":64,"messages":[{"role":"user","content":"hi"}]`, true},
	{"/v1/embeddings", "emb-test", "text-embedding-3-small", `"input":"hi"`, false},
	{"/v1/responses", "resp-test", "gpt-4o-reasoning", `"input":"hi"`, false},
}

// setupTrust serves the standard catalog, plus a model the policy does not
// grant and one whose upstream model name is its own.
func setupTrust(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.standard()
	oa := f.data.Hosts[0]
	f.bind(f.model("secret-test", false), oa, wire.ShapeOpenAI, "gpt-secret")
	f.bind(f.model("same-name", true), oa, wire.ShapeOpenAI, "same-name")
	f.start()
	return f
}

// A second spelling of a member Relay decides on would let the caller be
// authorised and billed for one value while the upstream, which unescapes
// names and keeps the last duplicate, acts on another. Relay refuses it in
// the caller's shape, naming the member, and nothing reaches the upstream.
func TestTrust_RefusesSecondSpellingOfReadMembers(t *testing.T) {
	t.Parallel()
	f := setupTrust(t)
	cases := []struct {
		name, extra, param string
	}{
		{"escaped duplicate model", `,"mod\u0065l":"secret-test"`, "model"},
		{"case variant model", `,"Model":"secret-test"`, "model"},
		{"escaped duplicate stream", `,"stream":false,"str\u0065am":true`, "stream"},
		{"duplicate include_usage", `,"stream":true,"stream_options":{"include_usage":true,"include_\u0075sage":false}`, "stream_options.include_usage"},
		{"escaped duplicate max_tokens", `,"max_completion_tokens":1,"max_completion_t\u006fkens":100000`, "max_completion_tokens"},
	}
	for _, ep := range trustEndpoints {
		for _, c := range cases {
			t.Run(ep.path+"/"+c.name, func(t *testing.T) {
				body := `{"model":"` + ep.model + `",` + ep.members + c.extra + `}`
				resp, raw := f.post(ep.path, body, nil)
				e := decodeError(t, raw)
				want := `"` + c.param + `"`
				if resp.StatusCode != 400 || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, want) {
					t.Fatalf("%s: %d %s", body, resp.StatusCode, raw)
				}
				if ep.anthropic {
					if e.Type != "error" || e.RequestID == "" {
						t.Errorf("not Anthropic's error shape: %s", raw)
					}
				} else if e.Error.Code != "invalid_request" || e.Error.Param == nil || *e.Error.Param != c.param {
					t.Errorf("not OpenAI's error object naming %s: %s", c.param, raw)
				}
			})
		}
	}
	t.Run("message", func(t *testing.T) {
		_, raw := f.post("/v1/chat/completions", `{"model":"gpt-test","messages":[],"mod\u0065l":"secret-test"}`, nil)
		if e := decodeError(t, raw); !strings.HasPrefix(e.Error.Message, `Duplicate member "model" in request body`) {
			t.Errorf("message %q", e.Error.Message)
		}
	})
	if n := len(f.requests()); n != 0 {
		t.Errorf("refused requests reached the upstream %d times: %+v", n, f.requests())
	}
}

// A member name spelled with escapes, and a model value spelled with
// escapes, are read as the upstream reads them; the upstream receives the
// binding's upstream model name, spliced in plain, for the model Relay
// authorised and priced.
func TestTrust_EscapedSpellingsRouteAsAuthorised(t *testing.T) {
	t.Parallel()
	f := setupTrust(t)
	for _, ep := range trustEndpoints {
		for _, model := range []string{`"mod\u0065l":"` + ep.model + `"`, `"model":"` + escapeFirst(ep.model) + `"`} {
			t.Run(ep.path+"/"+model, func(t *testing.T) {
				f.mock.Reset()
				body := `{` + model + `,` + ep.members + `}`
				resp, raw := f.post(ep.path, body, nil)
				rec := f.rec.next(t)
				if resp.StatusCode != 200 {
					t.Fatalf("%s: %d %s", body, resp.StatusCode, raw)
				}
				if rec.Model != ep.model || rec.Usage.Input == 0 {
					t.Errorf("record model %q usage %+v", rec.Model, rec.Usage)
				}
				up := f.waitFor(func(mockupstream.Request) bool { return true })
				var sent map[string]any
				if err := json.Unmarshal(up.Body, &sent); err != nil || up.Model != ep.upstream || sent["model"] != ep.upstream ||
					!strings.Contains(string(up.Body), `:"`+ep.upstream+`"`) {
					t.Errorf("upstream got model %q in %s", up.Model, up.Body)
				}
			})
		}
	}
	t.Run("same upstream name, escaped", func(t *testing.T) {
		f.mock.Reset()
		resp, raw := f.post("/v1/chat/completions", `{"model":"s\u0061me-name","messages":[{"role":"user","content":"hi"}]}`, nil)
		f.rec.next(t)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		up := f.waitFor(func(mockupstream.Request) bool { return true })
		if !strings.HasPrefix(string(up.Body), `{"model":"same-name",`) {
			t.Errorf("upstream body %s", up.Body)
		}
	})
	t.Run("escaped stream is a stream, and metered", func(t *testing.T) {
		f.mock.Reset()
		resp, raw := f.post("/v1/chat/completions", `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"str\u0065am":true}`, nil)
		rec := f.rec.next(t)
		if resp.StatusCode != 200 || !strings.Contains(raw, "data: [DONE]") {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		up := f.waitFor(func(mockupstream.Request) bool { return true })
		if !up.Stream || !strings.Contains(string(up.Body), `"stream_options":{"include_usage":true}`) {
			t.Errorf("upstream body %s", up.Body)
		}
		if !rec.Stream || rec.Usage.Input == 0 || rec.Usage.Output == 0 {
			t.Errorf("record stream %v usage %+v", rec.Stream, rec.Usage)
		}
	})
}

// escapeFirst spells the first letter of s as a \u escape.
func escapeFirst(s string) string {
	const hex = "0123456789abcdef"
	return `\u00` + string(hex[s[0]>>4]) + string(hex[s[0]&0xf]) + s[1:]
}
