package proxy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/wire"
)

// What real agents send, as they send it: Claude Code's Messages requests
// and Codex's Responses requests (their shapes taken from captured
// traffic), and a multi-turn Chat conversation that pushes each answer back
// as the openai JS SDK does, through a model of every binding shape.

var allShapes = []wire.Shape{wire.ShapeAnthropic, wire.ShapeOpenAI, wire.ShapeGemini, wire.ShapeOpenAIResponses}

// claudeCodeBody is a Claude Code turn: a billing line and a cached system
// prompt, a system turn after the first user message, a deferred tool,
// adaptive thinking with its display omitted, an effort, context
// management and metadata.user_id.
func claudeCodeBody(model string) string {
	return `{"model":"` + model + `","max_tokens":32000,"stream":true,
	"metadata":{"user_id":"{\"device_id\":\"d1\",\"session_id\":\"s1\"}"},
	"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2"},{"type":"text","text":"You are a Claude agent.","cache_control":{"type":"ephemeral"}}],
	"messages":[
		{"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"Say hello.","cache_control":{"type":"ephemeral"}}]},
		{"role":"system","content":[{"type":"text","text":"# Environment\nPlatform: linux"}]}],
	"tools":[{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}},
		{"name":"DeferredToolPlaceholder","description":"later","input_schema":{"type":"object"},"defer_loading":true}],
	"thinking":{"type":"adaptive","display":"omitted"},
	"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
	"output_config":{"effort":"high"}}`
}

var claudeCodeHeaders = map[string]string{
	"anthropic-version": "2023-06-01",
	"anthropic-beta":    "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27",
	"x-api-key":         relayKey,
	"Authorization":     "",
}

func TestClients_ClaudeCodeOnEveryShape(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, shape := range allShapes {
		t.Run(string(shape), func(t *testing.T) {
			resp, body := f.post("/v1/messages?beta=true", claudeCodeBody(string(shape)), claudeCodeHeaders)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "event: message_stop") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			dropped := resp.Header.Get("X-Relay-Dropped-Fields")
			up := f.waitFor(func(r mockupstream.Request) bool {
				return strings.HasPrefix(r.Model, upstreamNames[shape]+"-cached") && r.Stream
			})
			if shape == wire.ShapeAnthropic {
				// Passed through: the beta query, the betas, the system turn.
				if dropped != "" || up.RawQuery != "beta=true" || up.Header.Get("Anthropic-Beta") != claudeCodeHeaders["anthropic-beta"] ||
					!strings.Contains(string(up.Body), `"role":"system"`) || !strings.Contains(string(up.Body), `"context_management"`) {
					t.Errorf("dropped %q, upstream %s?%s %v %s", dropped, up.Path, up.RawQuery, up.Header, up.Body)
				}
				return
			}
			for _, want := range []string{"context_management", "tools[].defer_loading", "cache_control"} {
				if !strings.Contains(","+dropped+",", ","+want+",") {
					t.Errorf("X-Relay-Dropped-Fields %q lacks %s", dropped, want)
				}
			}
			if up.Header.Get("Anthropic-Beta") != "" || strings.Contains(string(up.Body), "context_management") ||
				strings.Contains(string(up.Body), "defer_loading") || !strings.Contains(string(up.Body), "Platform: linux") {
				t.Errorf("upstream %v %s", up.Header, up.Body)
			}
		})
	}
}

// codexBody is a Codex turn: developer messages, a function tool, a
// namespace of function tools, the hosted web search it offers by
// default, a reasoning summary without an effort, and its client hints.
func codexBody(model string) string {
	return `{"model":"` + model + `","stream":true,"store":false,"tool_choice":"auto","parallel_tool_calls":true,
	"instructions":"You are Codex.",
	"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions>read-only</permissions>"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"Say hello."}]}],
	"tools":[{"type":"function","name":"exec_command","description":"Run","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}},
		{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents","tools":[{"type":"function","name":"close_agent","description":"Close","strict":false,"parameters":{"type":"object","properties":{}}}]},
		{"type":"web_search","external_web_access":false}],
	"reasoning":{"summary":"auto"},"include":["reasoning.encrypted_content"],
	"prompt_cache_key":"01a2","client_metadata":{"x-codex-installation-id":"i1","turn_id":"t1"}}`
}

func TestClients_CodexOnEveryShape(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, shape := range allShapes {
		t.Run(string(shape), func(t *testing.T) {
			resp, body := f.post("/v1/responses", codexBody(string(shape)), map[string]string{"originator": "codex_exec"})
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "event: response.completed") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			dropped := resp.Header.Get("X-Relay-Dropped-Fields")
			up := f.waitFor(func(r mockupstream.Request) bool {
				return strings.HasPrefix(r.Model, upstreamNames[shape]+"-cached") && r.Stream
			})
			if shape == wire.ShapeOpenAIResponses {
				if dropped != "" || !strings.Contains(string(up.Body), `"namespace"`) {
					t.Errorf("dropped %q, upstream %s", dropped, up.Body)
				}
				return
			}
			for _, want := range []string{"client_metadata", "tools[].type=web_search"} {
				if !strings.Contains(","+dropped+",", ","+want+",") {
					t.Errorf("X-Relay-Dropped-Fields %q lacks %s", dropped, want)
				}
			}
			if !strings.Contains(string(up.Body), "close_agent") || strings.Contains(string(up.Body), "client_metadata") {
				t.Errorf("upstream %s", up.Body)
			}
		})
	}
}

// A Chat conversation on a translated model, each answer pushed back
// verbatim (annotations, refusal: null and all) as the openai JS SDK's
// examples do, for three turns.
func TestClients_ChatAnswersPushedBack(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, shape := range chatTargets {
		t.Run(string(shape), func(t *testing.T) {
			msgs := []json.RawMessage{json.RawMessage(`{"role":"user","content":"Hello"}`)}
			for turn := 0; turn < 3; turn++ {
				req, _ := json.Marshal(map[string]any{"model": string(shape), "messages": msgs})
				resp, body := f.post("/v1/chat/completions", string(req), nil)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("turn %d: %d %s", turn, resp.StatusCode, body)
				}
				var c struct {
					Choices []struct {
						Message json.RawMessage `json:"message"`
					} `json:"choices"`
				}
				if err := json.Unmarshal([]byte(body), &c); err != nil || len(c.Choices) != 1 || !strings.Contains(string(c.Choices[0].Message), `"annotations":[]`) {
					t.Fatalf("turn %d: %s", turn, body)
				}
				if d := resp.Header.Get("X-Relay-Dropped-Fields"); d != "" {
					t.Errorf("turn %d: an empty annotations list is no loss, yet %q", turn, d)
				}
				msgs = append(msgs, c.Choices[0].Message, json.RawMessage(`{"role":"user","content":"And again"}`))
			}
		})
	}
}

func TestClients_RootAnswers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		resp, body := f.do(method, "/", "", map[string]string{"Authorization": ""})
		if resp.StatusCode != http.StatusOK || method == http.MethodGet && !strings.Contains(body, `"name":"Relay"`) {
			t.Errorf("%s / = %d %s", method, resp.StatusCode, body)
		}
	}
	if resp, body := f.do(http.MethodPost, "/", "{}", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d %s", resp.StatusCode, body)
	}
}
