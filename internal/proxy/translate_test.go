package proxy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/wire"
)

// The official SDKs judge translated traffic end to end: openai-go (chat)
// against anthropic, gemini and openai_responses bindings, anthropic-sdk-go
// against openai, gemini and openai_responses bindings, all through
// proxy.New and the mock upstream.

const geminiSecret = "gm-up-primary-secret-1"

// upstreamNames are the mock model names behind each shape; the mock's
// behaviour keys on their markers (cached, cache-write, parallel, thinking).
var upstreamNames = map[wire.Shape]string{
	wire.ShapeAnthropic:       "claude-x",
	wire.ShapeGemini:          "gemini-x",
	wire.ShapeOpenAIResponses: "gpt-resp-x",
	wire.ShapeOpenAI:          "gpt-chat-x",
}

// translatedFixture binds, for every shape, models "<shape>",
// "<shape>-parallel" and "<shape>-thinking" on a host of that shape.
func translatedFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	for _, shape := range []wire.Shape{wire.ShapeAnthropic, wire.ShapeGemini, wire.ShapeOpenAIResponses, wire.ShapeOpenAI} {
		h := f.host("h-" + strings.ReplaceAll(string(shape), "_", "-"))
		secret := openaiSecret
		switch shape {
		case wire.ShapeAnthropic:
			secret = anthropicSecret
		case wire.ShapeGemini:
			secret = geminiSecret
		}
		f.key(h, "k-"+string(shape), secret+"-"+string(shape))
		up := upstreamNames[shape]
		f.bind(f.model(string(shape), true), h, shape, up+"-cached-cache-write")
		f.bind(f.model(string(shape)+"-parallel", true), h, shape, up+"-parallel")
		f.bind(f.model(string(shape)+"-thinking", true), h, shape, up+"-thinking")
	}
	for _, m := range f.data.Models {
		m.MaxOutputTokens = 8192
	}
	f.start()
	return f
}

var chatTargets = []wire.Shape{wire.ShapeAnthropic, wire.ShapeGemini, wire.ShapeOpenAIResponses}
var messagesTargets = []wire.Shape{wire.ShapeOpenAI, wire.ShapeGemini, wire.ShapeOpenAIResponses}

func weatherSchema(required string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{required: map[string]any{"type": "string"}, "units": map[string]any{"type": "string", "enum": []string{"c", "f"}}},
		"required":   []string{required, "units"},
	}
}

func chatTools() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Description: openai.String("Weather for a city"), Parameters: weatherSchema("city")}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time", Parameters: weatherSchema("zone")}),
	}
}

// chatUsage is what an OpenAI caller's usage means as wire.Usage.
func chatUsage(u openai.CompletionUsage) wire.Usage {
	var cw struct {
		D struct {
			CacheWrite int64 `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
	}
	_ = json.Unmarshal([]byte(u.RawJSON()), &cw)
	return wire.Usage{
		Input: u.PromptTokens, Output: u.CompletionTokens, CacheRead: u.PromptTokensDetails.CachedTokens,
		CacheWrite: cw.D.CacheWrite, Reasoning: u.CompletionTokensDetails.ReasoningTokens,
	}
}

func TestTranslate_OpenAISDK_Chat(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	client := f.openai()
	for _, shape := range chatTargets {
		up := upstreamNames[shape]
		t.Run(string(shape), func(t *testing.T) {
			t.Run("text", func(t *testing.T) {
				p := chatParams(string(shape))
				p.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief.")}, p.Messages...)
				resp, err := client.Chat.Completions.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				c := resp.Choices[0]
				if !strings.HasPrefix(c.Message.Content, "Hello from "+up) || c.FinishReason != "stop" || !strings.HasPrefix(resp.ID, "chatcmpl-") {
					t.Errorf("completion %s", resp.RawJSON())
				}
				rec := f.rec.next(t)
				if got := chatUsage(resp.Usage); rec.Usage != got || got.Input == 0 || got.Output == 0 || got.CacheRead == 0 || got.Input != got.CacheRead*2+got.Input%2 {
					t.Errorf("recorded %+v, caller saw %+v", rec.Usage, got)
				}
				if rec.Upstream != shape || rec.Inbound != "openai_chat" || rec.Status != 200 {
					t.Errorf("record %+v", rec)
				}
			})
			t.Run("stream", func(t *testing.T) {
				p := chatParams(string(shape))
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				stream := client.Chat.Completions.NewStreaming(t.Context(), p)
				var acc openai.ChatCompletionAccumulator
				var usage openai.CompletionUsage // the usage chunk's, with its raw JSON
				for stream.Next() {
					if !acc.AddChunk(stream.Current()) {
						t.Fatalf("chunk refused: %s", stream.Current().RawJSON())
					}
					if c := stream.Current(); len(c.Choices) == 0 {
						usage = c.Usage
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				if got := acc.Choices[0].Message.Content; !strings.HasPrefix(got, "Hello from "+up) || acc.Choices[0].FinishReason != "stop" {
					t.Errorf("accumulated %q (%s)", got, acc.Choices[0].FinishReason)
				}
				rec := f.rec.next(t)
				if got := chatUsage(usage); rec.Usage != got || got.Input == 0 || got.Output == 0 || acc.Usage.TotalTokens != got.Input+got.Output {
					t.Errorf("recorded %+v, caller saw %+v", rec.Usage, got)
				}
			})
			t.Run("no usage unless asked", func(t *testing.T) {
				stream := client.Chat.Completions.NewStreaming(t.Context(), chatParams(string(shape)))
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					if len(stream.Current().Choices) == 0 {
						t.Errorf("usage chunk sent unasked: %s", stream.Current().RawJSON())
					}
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil || acc.Choices[0].Message.Content == "" {
					t.Fatalf("err %v, %+v", err, acc.Choices)
				}
				if rec := f.rec.next(t); rec.Usage.Input == 0 {
					t.Errorf("usage not recorded: %+v", rec)
				}
			})
			t.Run("parallel tools and results", func(t *testing.T) {
				p := chatParams(string(shape) + "-parallel")
				p.Tools = chatTools()
				resp, err := client.Chat.Completions.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				f.rec.next(t)
				checkChatCalls(t, "non-stream", resp.Choices[0].Message, resp.Choices[0].FinishReason)

				stream := client.Chat.Completions.NewStreaming(t.Context(), p)
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					if !acc.AddChunk(stream.Current()) {
						t.Fatalf("chunk refused: %s", stream.Current().RawJSON())
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				f.rec.next(t)
				checkChatCalls(t, "stream", acc.Choices[0].Message, acc.Choices[0].FinishReason)

				// The next turn: the calls and their results go back.
				msg := acc.Choices[0].Message
				p.Messages = append(p.Messages, msg.ToParam())
				for i, tc := range msg.ToolCalls {
					p.Messages = append(p.Messages, openai.ToolMessage(fmt.Sprintf(`{"temp":%d}`, 20+i), tc.ID))
				}
				for _, stream := range []bool{false, true} {
					var content string
					if stream {
						s := client.Chat.Completions.NewStreaming(t.Context(), p)
						var acc openai.ChatCompletionAccumulator
						for s.Next() {
							acc.AddChunk(s.Current())
						}
						if err := s.Err(); err != nil {
							t.Fatal(err)
						}
						content = acc.Choices[0].Message.Content
					} else {
						resp, err := client.Chat.Completions.New(t.Context(), p)
						if err != nil {
							t.Fatal(err)
						}
						content = resp.Choices[0].Message.Content
					}
					if !strings.HasPrefix(content, "The tool returned: ") {
						t.Errorf("stream %v: reply after tool results %q", stream, content)
					}
					f.rec.next(t)
				}
			})
			t.Run("forced tool", func(t *testing.T) {
				p := chatParams(string(shape))
				p.Tools = chatTools()
				p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"})
				resp, err := client.Chat.Completions.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				f.rec.next(t)
				calls := resp.Choices[0].Message.ToolCalls
				if len(calls) != 1 || calls[0].Function.Name != "get_time" || calls[0].Function.Arguments != `{"zone":"example","units":"c"}` {
					t.Errorf("forced call %s", resp.RawJSON())
				}
			})
		})
	}
}

// checkChatCalls asserts the two parallel calls of the mock: ids, names,
// whole arguments, finish reason.
func checkChatCalls(t *testing.T, what string, m openai.ChatCompletionMessage, finish string) {
	t.Helper()
	want := []string{`get_weather {"city":"example","units":"c"}`, `get_time {"zone":"example","units":"c"}`}
	if len(m.ToolCalls) != 2 || finish != "tool_calls" {
		t.Fatalf("%s: %d tool calls, finish %q: %+v", what, len(m.ToolCalls), finish, m.ToolCalls)
	}
	ids := map[string]bool{}
	for i, tc := range m.ToolCalls {
		if got := tc.Function.Name + " " + tc.Function.Arguments; got != want[i] {
			t.Errorf("%s: call %d = %s, want %s", what, i, got, want[i])
		}
		if !strings.HasPrefix(tc.ID, "call_") || ids[tc.ID] {
			t.Errorf("%s: call id %q", what, tc.ID)
		}
		ids[tc.ID] = true
	}
}

// anthUsage is what an Anthropic caller's usage means as wire.Usage.
func anthUsage(u anthropic.Usage) wire.Usage {
	w := anthropicUsage(u)
	var d struct {
		D struct {
			Thinking int64 `json:"thinking_tokens"`
		} `json:"output_tokens_details"`
	}
	_ = json.Unmarshal([]byte(u.RawJSON()), &d)
	w.Reasoning = d.D.Thinking
	return w
}

func anthropicTools() []anthropic.ToolUnionParam {
	tool := func(name, req string) anthropic.ToolUnionParam {
		s := weatherSchema(req)
		return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: name, Description: anthropic.String("Weather for a city"),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: s["properties"], Required: s["required"].([]string)},
		}}
	}
	return []anthropic.ToolUnionParam{tool("get_weather", "city"), tool("get_time", "zone")}
}

func accumulate(t *testing.T, f *fixture, p anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	stream := f.anthropic().Messages.NewStreaming(t.Context(), p)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return acc
}

func TestTranslate_AnthropicSDK_Messages(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	client := f.anthropic()
	for _, shape := range messagesTargets {
		up := upstreamNames[shape]
		t.Run(string(shape), func(t *testing.T) {
			t.Run("text", func(t *testing.T) {
				p := messageParams(string(shape))
				p.System = []anthropic.TextBlockParam{{Text: "Be brief."}}
				msg, err := client.Messages.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				if len(msg.Content) != 1 || !strings.HasPrefix(msg.Content[0].Text, "Hello from "+up) || msg.StopReason != "end_turn" || !strings.HasPrefix(msg.ID, "msg_") {
					t.Errorf("message %s", msg.RawJSON())
				}
				rec := f.rec.next(t)
				if got := anthUsage(msg.Usage); rec.Usage != got || got.Input == 0 || got.Output == 0 || got.CacheRead == 0 {
					t.Errorf("recorded %+v, caller saw %+v", rec.Usage, got)
				}
				if rec.Upstream != shape || rec.Inbound != "anthropic_messages" {
					t.Errorf("record %+v", rec)
				}
			})
			t.Run("stream", func(t *testing.T) {
				acc := accumulate(t, f, messageParams(string(shape)))
				if len(acc.Content) != 1 || !strings.HasPrefix(acc.Content[0].Text, "Hello from "+up) || acc.StopReason != "end_turn" {
					t.Errorf("accumulated %s", acc.RawJSON())
				}
				rec := f.rec.next(t)
				if got := anthUsage(acc.Usage); rec.Usage != got || got.Input == 0 || got.Output == 0 || got.CacheRead == 0 {
					t.Errorf("recorded %+v, caller saw %+v", rec.Usage, got)
				}
			})
			t.Run("parallel tools and results", func(t *testing.T) {
				p := messageParams(string(shape) + "-parallel")
				p.Tools = anthropicTools()
				msg, err := client.Messages.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				f.rec.next(t)
				checkToolUses(t, "non-stream", *msg)
				acc := accumulate(t, f, p)
				f.rec.next(t)
				checkToolUses(t, "stream", acc)

				p.Messages = append(p.Messages, acc.ToParam())
				var results []anthropic.ContentBlockParamUnion
				for i, b := range acc.Content {
					if b.Type == "tool_use" {
						results = append(results, anthropic.NewToolResultBlock(b.ID, fmt.Sprintf(`{"temp":%d}`, 20+i), false))
					}
				}
				p.Messages = append(p.Messages, anthropic.NewUserMessage(results...))
				msg, err = client.Messages.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				f.rec.next(t)
				if !strings.HasPrefix(msg.Content[0].Text, "The tool returned: ") {
					t.Errorf("reply after tool results %s", msg.RawJSON())
				}
				acc = accumulate(t, f, p)
				f.rec.next(t)
				if !strings.HasPrefix(acc.Content[0].Text, "The tool returned: ") {
					t.Errorf("streamed reply after tool results %s", acc.RawJSON())
				}
			})
			t.Run("forced tool", func(t *testing.T) {
				p := messageParams(string(shape))
				p.Tools = anthropicTools()
				p.ToolChoice = anthropic.ToolChoiceParamOfTool("get_time")
				msg, err := client.Messages.New(t.Context(), p)
				if err != nil {
					t.Fatal(err)
				}
				f.rec.next(t)
				if len(msg.Content) != 1 || msg.Content[0].Name != "get_time" || string(msg.Content[0].Input) != `{"zone":"example","units":"c"}` || msg.StopReason != "tool_use" {
					t.Errorf("forced call %s", msg.RawJSON())
				}
			})
		})
	}
}

func checkToolUses(t *testing.T, what string, m anthropic.Message) {
	t.Helper()
	want := []string{`get_weather {"city":"example","units":"c"}`, `get_time {"zone":"example","units":"c"}`}
	var got []string
	for i, b := range m.Content {
		if b.Type != "tool_use" {
			continue
		}
		got = append(got, b.Name+" "+string(b.Input))
		if !strings.HasPrefix(b.ID, "toolu_") {
			t.Errorf("%s: block %d id %q", what, i, b.ID)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") || m.StopReason != "tool_use" {
		t.Errorf("%s: tool uses %q, stop %q: %s", what, got, m.StopReason, m.RawJSON())
	}
}

func TestTranslate_UpstreamErrors(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	t.Run("4xx in the caller's shape", func(t *testing.T) {
		for _, shape := range chatTargets {
			_, err := f.openai(oaopt.WithHeader(testFault, "400")).Chat.Completions.New(t.Context(), chatParams(string(shape)))
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Type != "invalid_request_error" || oe.Message == "" {
				t.Errorf("%s: %v", shape, err)
			}
			if rec := f.rec.next(t); rec.ErrorKind != event.KindUpstreamClientError || rec.Status != 400 {
				t.Errorf("%s: record %+v", shape, rec)
			}
		}
		for _, shape := range messagesTargets {
			_, err := f.anthropic(anthopt.WithHeader(testFault, "400")).Messages.New(t.Context(), messageParams(string(shape)))
			var ae *anthropic.Error
			if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), `"invalid_request_error"`) {
				t.Errorf("%s: %v", shape, err)
			}
			f.rec.next(t)
		}
	})
	t.Run("in-stream error", func(t *testing.T) {
		for _, shape := range chatTargets {
			stream := f.openai(oaopt.WithHeader(testFault, "midstream-3")).Chat.Completions.NewStreaming(t.Context(), chatParams(string(shape)))
			for stream.Next() {
			}
			if stream.Err() == nil {
				t.Errorf("%s: the stream error did not reach the caller", shape)
			}
			if rec := f.rec.next(t); rec.ErrorKind != event.KindStreamError {
				t.Errorf("%s: record %+v", shape, rec)
			}
		}
		for _, shape := range messagesTargets {
			stream := f.anthropic(anthopt.WithHeader(testFault, "midstream-3")).Messages.NewStreaming(t.Context(), messageParams(string(shape)))
			for stream.Next() {
			}
			if stream.Err() == nil {
				t.Errorf("%s: the stream error did not reach the caller", shape)
			}
			if rec := f.rec.next(t); rec.ErrorKind != event.KindStreamError {
				t.Errorf("%s: record %+v", shape, rec)
			}
		}
	})
	t.Run("reset mid-stream", func(t *testing.T) {
		for _, shape := range chatTargets {
			_, body := f.post("/v1/chat/completions", `{"model":"`+string(shape)+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{testFault: "reset-3"})
			if !strings.Contains(body, `"code":"upstream_stream_error"`) || strings.Contains(body, "[DONE]") {
				t.Errorf("%s: %s", shape, body)
			}
			f.rec.next(t)
		}
	})
}

// A translated binding fails over like any other: a 503 from the first
// binding's key moves the request to the next binding, of another shape;
// a binding whose shape cannot express the request is skipped, and when
// none is left the caller hears why.
func TestTranslate_FailoverAndRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gm := f.host("gemini-a")
	f.key(gm, "bad", "gm-key-fault-503")
	an := f.host("anthropic-b")
	f.key(an, "good", anthropicSecret)
	oa := f.host("openai-c")
	f.key(oa, "oa", openaiSecret)
	multi := f.model("multi", true)
	f.bind(multi, gm, wire.ShapeGemini, "gemini-x")
	f.bind(multi, an, wire.ShapeAnthropic, "claude-x")
	mixed := f.model("mixed", true)
	f.bind(mixed, an, wire.ShapeAnthropic, "claude-x")
	f.bind(mixed, oa, wire.ShapeOpenAI, "gpt-x")
	f.bind(f.model("claude-only", true), an, wire.ShapeAnthropic, "claude-x")
	f.start()

	var httpResp *http.Response
	stream := f.openai(oaopt.WithResponseInto(&httpResp)).Chat.Completions.NewStreaming(t.Context(), chatParams("multi"))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(acc.Choices[0].Message.Content, "Hello from claude-x") || httpResp.Header.Get("X-Relay-Attempts") != "2" || httpResp.Header.Get("X-Relay-Host") != "anthropic-b" {
		t.Errorf("%q via %v", acc.Choices[0].Message.Content, httpResp.Header)
	}
	if rec := f.rec.next(t); rec.Attempts != 2 || rec.Upstream != wire.ShapeAnthropic || rec.Status != 200 {
		t.Errorf("record %+v", rec)
	}

	// Pinned to the failing host: no failover, Relay's own error (its
	// breaker may hold the key by now).
	_, err := f.openai().Chat.Completions.New(t.Context(), chatParams("multi@gemini-a"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.Code != "upstream_error" && oe.Code != "no_usable_host_key" {
		t.Errorf("pinned: %v", err)
	}
	f.rec.next(t)
	// Pinned to the good host.
	msg, err := f.anthropic().Messages.New(t.Context(), messageParams("multi@anthropic-b"))
	if err != nil || !strings.HasPrefix(msg.Content[0].Text, "Hello from claude-x") {
		t.Errorf("pinned: %v", err)
	}
	f.rec.next(t)

	// n=2 cannot go to Anthropic: the OpenAI binding serves it.
	_, body := f.post("/v1/chat/completions", `{"model":"mixed","n":2,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if !strings.Contains(body, "Hello from gpt-x") {
		t.Errorf("mixed n=2: %s", body)
	}
	f.rec.next(t)

	// With no other binding, a 400 names the field and the binding.
	resp, body := f.post("/v1/chat/completions", `{"model":"claude-only","n":2,"messages":[{"role":"user","content":"hi"}]}`, nil)
	e := decodeError(t, body)
	if resp.StatusCode != 400 || e.Error.Code != "unsupported_feature" || e.Error.Param == nil || *e.Error.Param != "n" ||
		!strings.Contains(e.Error.Message, `"claude-only"`) || !strings.Contains(e.Error.Message, `"anthropic-b"`) || !strings.Contains(e.Error.Message, "anthropic") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	f.rec.next(t)
	for _, r := range f.requests() {
		if strings.Contains(string(r.Body), `"n":2`) && r.Shape != mockupstream.ShapeOpenAI {
			t.Errorf("an untranslatable request reached %s", r.Shape)
		}
	}
}

// Anthropic's signed thinking reaches a Chat caller in the reasoning_content
// and thinking_blocks extension fields, and the blocks a caller sends back
// on its assistant message are replayed to Anthropic, signature and all,
// ahead of the tool call they led to.
func TestTranslate_ThinkingRoundTripThroughChat(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	client := f.openai()
	p := chatParams("anthropic-thinking")
	p.Tools = chatTools()
	resp, err := client.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	f.rec.next(t)
	var ext struct {
		Choices []struct {
			Message struct {
				ReasoningContent string            `json:"reasoning_content"`
				ThinkingBlocks   []json.RawMessage `json:"thinking_blocks"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(resp.RawJSON()), &ext); err != nil || len(ext.Choices[0].Message.ThinkingBlocks) != 1 || ext.Choices[0].Message.ReasoningContent == "" {
		t.Fatalf("no thinking in %s", resp.RawJSON())
	}
	var block struct{ Type, Thinking, Signature string }
	_ = json.Unmarshal(ext.Choices[0].Message.ThinkingBlocks[0], &block)
	if block.Type != "thinking" || block.Signature == "" || block.Thinking != ext.Choices[0].Message.ReasoningContent {
		t.Fatalf("block %+v", block)
	}

	// Streamed, the block comes whole in one delta.
	stream := client.Chat.Completions.NewStreaming(t.Context(), p)
	streamed := 0
	for stream.Next() {
		var d struct {
			Choices []struct {
				Delta struct {
					ThinkingBlocks []struct{ Signature string } `json:"thinking_blocks"`
				} `json:"delta"`
			} `json:"choices"`
		}
		_ = json.Unmarshal([]byte(stream.Current().RawJSON()), &d)
		for _, c := range d.Choices {
			for _, b := range c.Delta.ThinkingBlocks {
				if b.Signature != "" {
					streamed++
				}
			}
		}
	}
	if err := stream.Err(); err != nil || streamed != 1 {
		t.Fatalf("streamed signed blocks %d, err %v", streamed, err)
	}
	f.rec.next(t)

	asst := resp.Choices[0].Message.ToAssistantMessageParam()
	asst.SetExtraFields(map[string]any{"thinking_blocks": ext.Choices[0].Message.ThinkingBlocks})
	p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &asst})
	for _, tc := range resp.Choices[0].Message.ToolCalls {
		p.Messages = append(p.Messages, openai.ToolMessage("sunny", tc.ID))
	}
	if _, err := client.Chat.Completions.New(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	f.rec.next(t)
	up := f.requests()
	last := up[len(up)-1]
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type, Signature, ID string
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(last.Body, &sent); err != nil || len(sent.Messages) != 3 {
		t.Fatalf("upstream body %s", last.Body)
	}
	a := sent.Messages[1].Content
	if a[0].Type != "thinking" || a[0].Signature != block.Signature || a[len(a)-1].Type != "tool_use" || !strings.HasPrefix(a[len(a)-1].ID, "toolu_") {
		t.Errorf("assistant turn sent upstream: %s", last.Body)
	}
}

// Structured output, stop sequences and the output limit reach every
// translated binding and come back as the caller's SDK expects.
func TestTranslate_SchemaStopAndLimit(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	for _, shape := range chatTargets {
		p := chatParams(string(shape))
		p.MaxCompletionTokens = openai.Int(3)
		resp, err := f.openai().Chat.Completions.New(t.Context(), p)
		if err != nil || resp.Choices[0].FinishReason != "length" || resp.Usage.CompletionTokens != 3 {
			t.Errorf("%s: limit: %v %s", shape, err, resp.RawJSON())
		}
		f.rec.next(t)
		p = chatParams(string(shape))
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: map[string]any{"type": "object"}},
		}}
		if _, err := f.openai().Chat.Completions.New(t.Context(), p); err != nil {
			t.Errorf("%s: schema: %v", shape, err)
		}
		f.rec.next(t)
	}
	for _, shape := range messagesTargets {
		p := messageParams(string(shape))
		p.MaxTokens = 3
		msg, err := f.anthropic().Messages.New(t.Context(), p)
		if err != nil || msg.StopReason != "max_tokens" || msg.Usage.OutputTokens != 3 {
			t.Errorf("%s: limit: %v %s", shape, err, msg.RawJSON())
		}
		f.rec.next(t)
		if shape == wire.ShapeOpenAIResponses {
			continue // Responses has no stop sequences: rejected, see the matrix
		}
		p = messageParams(string(shape))
		p.StopSequences = []string{"relay"}
		msg, err = f.anthropic().Messages.New(t.Context(), p)
		if err != nil || strings.Contains(msg.Content[0].Text, "relay,") {
			t.Errorf("%s: stop: %v %s", shape, err, msg.RawJSON())
		}
		f.rec.next(t)
	}
	p := messageParams(string(wire.ShapeOpenAIResponses))
	p.StopSequences = []string{"relay"}
	_, err := f.anthropic().Messages.New(t.Context(), p)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), "stop_sequences") {
		t.Errorf("stop to Responses: %v", err)
	}
	f.rec.next(t)
}
