package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/wire"
)

// The field policy as popular clients meet it: what the AI SDK's
// Anthropic provider, the Gemini CLI and opencode send by default reaches
// every binding shape, plain and streamed — each hint carried where the
// binding can carry it, else dropped and named in X-Relay-Dropped-Fields —
// and X-Relay-Strict: true refuses instead, naming where the field was.

// fieldsClient is one client's request as it sends it by default.
type fieldsClient struct {
	name   string
	native wire.Shape
	// path and body for the model (a binding shape) and stream.
	path   func(model string, stream bool) string
	body   func(model, marker string, stream bool) string
	header map[string]string
	// hint is what the default request holds that not every shape
	// carries: the name X-Relay-Dropped-Fields gives it, where strict mode
	// says it was sent, and the shapes that carry it (with what the
	// upstream body then holds).
	hint, sentAt string
	carried      map[wire.Shape][]string
	// gone is what an upstream body that dropped the hint must not hold.
	gone string
}

func streamWord(stream bool) string {
	if stream {
		return "true"
	}
	return "false"
}

var fieldsClients = []fieldsClient{{
	// @ai-sdk/anthropic 4.0 streaming with tools: every tool gets
	// eager_input_streaming (fine-grained tool streaming).
	name: "ai-sdk-anthropic", native: wire.ShapeAnthropic,
	path: func(string, bool) string { return "/v1/messages" },
	body: func(model, marker string, stream bool) string {
		return `{"model":"` + model + `","max_tokens":4096,"stream":` + streamWord(stream) + `,
		"system":[{"type":"text","text":"You are helpful."}],
		"messages":[{"role":"user","content":[{"type":"text","text":"What is the weather in Paris? ` + marker + `"}]}],
		"tools":[{"name":"weather","description":"Get the weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"},"eager_input_streaming":true}],
		"tool_choice":{"type":"auto"}}`
	},
	header: map[string]string{"anthropic-version": "2023-06-01", "x-api-key": relayKey, "Authorization": ""},
	hint:   "tools[].eager_input_streaming", sentAt: "tools[0].eager_input_streaming",
	gone: "eager_input_streaming",
}, {
	// Gemini CLI 0.61: its default generationConfig has topK.
	name: "gemini-cli", native: wire.ShapeGemini,
	path: func(model string, stream bool) string {
		if stream {
			return "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
		}
		return "/v1beta/models/" + model + ":generateContent"
	},
	body: func(_, marker string, _ bool) string {
		return `{"contents":[{"role":"user","parts":[{"text":"List the files here. ` + marker + `"}]}],
		"systemInstruction":{"role":"user","parts":[{"text":"You are an interactive CLI agent."}]},
		"tools":[{"functionDeclarations":[{"name":"list_directory","description":"Lists a directory","parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}],
		"generationConfig":{"temperature":0,"topP":1,"topK":64}}`
	},
	header: map[string]string{"x-goog-api-key": relayKey, "Authorization": "", "x-goog-api-client": "gl-node/20 gemini-cli/0.61.0"},
	hint:   "generationConfig.topK", sentAt: "generationConfig.topK",
	carried: map[wire.Shape][]string{wire.ShapeAnthropic: {`"top_k":64`}},
	gone:    "top_k",
}, {
	// opencode 1.18, OpenAI-compatible provider, a Claude model: cache
	// breakpoints on the first system message and the last messages.
	name: "opencode", native: wire.ShapeOpenAI,
	path: func(string, bool) string { return "/v1/chat/completions" },
	body: func(model, marker string, stream bool) string {
		b := `{"model":"` + model + `","stream":` + streamWord(stream) + `,
		"messages":[{"role":"system","content":"You are opencode.","cache_control":{"type":"ephemeral"}},
			{"role":"user","content":"Read the README. ` + marker + `","cache_control":{"type":"ephemeral"}}],
		"tools":[{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"filePath":{"type":"string"}},"required":["filePath"]}}}],
		"tool_choice":"auto","max_tokens":32000,"temperature":0`
		if stream {
			b += `,"stream_options":{"include_usage":true}`
		}
		return b + `}`
	},
	hint: "cache_control", sentAt: "messages[0].cache_control",
	carried: map[wire.Shape][]string{wire.ShapeAnthropic: {
		`"system":[{"type":"text","text":"You are opencode.","cache_control":{"type":"ephemeral"}}]`,
		`"text":"Read the README. `, // its block ends with the breakpoint, checked below
	}},
	gone: "cache_control",
}}

// done reports whether body is a complete answer in the client's shape.
func fieldsDone(c fieldsClient, stream bool, body string) bool {
	switch {
	case c.native == wire.ShapeAnthropic && stream:
		return strings.Contains(body, "event: message_stop")
	case c.native == wire.ShapeAnthropic:
		return strings.Contains(body, `"type":"message"`)
	case c.native == wire.ShapeGemini:
		return strings.Contains(body, `"finishReason"`)
	case stream:
		return strings.Contains(body, "data: [DONE]")
	}
	return strings.Contains(body, `"chat.completion"`)
}

func TestFields_ClientDefaultsOnEveryShape(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, c := range fieldsClients {
		for _, shape := range allShapes {
			for _, stream := range []bool{false, true} {
				name := c.name + "/" + string(shape) + "/plain"
				if stream {
					name = c.name + "/" + string(shape) + "/stream"
				}
				t.Run(name, func(t *testing.T) {
					marker := "mk-" + strings.ReplaceAll(name, "/", "-")
					resp, body := f.post(c.path(string(shape), stream), c.body(string(shape), marker, stream), c.header)
					if resp.StatusCode != http.StatusOK || !fieldsDone(c, stream, body) {
						t.Fatalf("%d %s", resp.StatusCode, body)
					}
					up := f.waitFor(func(r mockupstream.Request) bool { return strings.Contains(string(r.Body), marker) })
					dropped := "," + resp.Header.Get("X-Relay-Dropped-Fields") + ","
					upBody := string(up.Body)
					switch want, carried := c.carried[shape]; {
					case shape == c.native:
						if dropped != ",," {
							t.Errorf("passed through, yet X-Relay-Dropped-Fields %q", dropped)
						}
					case carried:
						if strings.Contains(dropped, ","+c.hint+",") {
							t.Errorf("carried, yet named dropped: %q", dropped)
						}
						for _, w := range want {
							if !strings.Contains(upBody, w) {
								t.Errorf("upstream body lacks %s: %s", w, upBody)
							}
						}
					default:
						if !strings.Contains(dropped, ","+c.hint+",") {
							t.Errorf("X-Relay-Dropped-Fields %q does not name %s", dropped, c.hint)
						}
						if strings.Contains(upBody, c.gone) {
							t.Errorf("upstream body holds %s: %s", c.gone, upBody)
						}
					}
				})
			}
		}
	}
}

// opencode's breakpoint on its last user message lands on that message's
// (only) block for an anthropic binding.
func TestFields_ChatMessageCacheControlOnAnthropic(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	c := fieldsClients[2]
	resp, body := f.post(c.path("anthropic", false), c.body("anthropic", "mk-last-block", false), c.header)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	up := f.waitFor(func(r mockupstream.Request) bool { return strings.Contains(string(r.Body), "mk-last-block") })
	want := `{"type":"text","text":"Read the README. mk-last-block","cache_control":{"type":"ephemeral"}}`
	if !strings.Contains(string(up.Body), want) {
		t.Errorf("upstream body lacks %s: %s", want, up.Body)
	}
}

// X-Relay-Strict: true refuses a hint the binding would drop, naming the
// place the caller sent it; a binding that carries it (or passes it
// through) still answers.
func TestFields_StrictRefusesWhatWouldBeDropped(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, c := range fieldsClients {
		for _, shape := range allShapes {
			t.Run(c.name+"/"+string(shape), func(t *testing.T) {
				h := map[string]string{"X-Relay-Strict": "true"}
				for k, v := range c.header {
					h[k] = v
				}
				marker := "mk-strict-" + c.name + "-" + string(shape)
				resp, body := f.post(c.path(string(shape), true), c.body(string(shape), marker, true), h)
				if _, carried := c.carried[shape]; carried || shape == c.native {
					if resp.StatusCode != http.StatusOK || !fieldsDone(c, true, body) {
						t.Fatalf("%d %s", resp.StatusCode, body)
					}
					return
				}
				if resp.StatusCode != http.StatusBadRequest {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				// Anthropic's error shape has no param or code: its message
				// names the place.
				if !strings.Contains(body, `\"`+c.sentAt+`\"`) ||
					c.native != wire.ShapeAnthropic && (!strings.Contains(body, `"param":"`+c.sentAt+`"`) || !strings.Contains(body, "unsupported_feature")) {
					t.Errorf("the refusal does not name %s as unsupported_feature: %s", c.sentAt, body)
				}
				for _, r := range f.requests() {
					if strings.Contains(string(r.Body), marker) {
						t.Errorf("a refused request reached the upstream: %s", r.Body)
					}
				}
			})
		}
	}
}
