package mockupstream_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/relay-llm/relay/internal/mockupstream"
)

func anthropicClient(b bundle, key string) anthropic.Client {
	return anthropic.NewClient(
		option.WithBaseURL(b.srv.URL),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
	)
}

func anthropicWeatherTool() []anthropic.ToolUnionParam {
	return []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
		Name: "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{
				"city":  map[string]any{"type": "string"},
				"units": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
			},
			Required: []string{"city"},
		},
	}}}
}

func TestAnthropic_Message(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := anthropicClient(b, "sk-ant-test")
	var raw *http.Response
	msg, err := client.Messages.New(ctx(t), anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the capital of France?"))},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	hasPrefix(t, "id", msg.ID, "msg_01")
	equal(t, "model", string(msg.Model), "claude-test")
	equal(t, "text", msg.Content[0].Text, "Hello from claude-test. You said: What is the capital of France?")
	equal(t, "stop_reason", string(msg.StopReason), "end_turn")
	equal(t, "output_tokens", msg.Usage.OutputTokens, int64(11))
	if msg.Usage.InputTokens < 1 {
		t.Errorf("input_tokens = %d", msg.Usage.InputTokens)
	}
	hasPrefix(t, "request-id", raw.Header.Get("request-id"), "req_011C")
	equal(t, "ratelimit header", raw.Header.Get("anthropic-ratelimit-requests-limit"), "4000")
	if raw.Header.Get("anthropic-ratelimit-tokens-reset") == "" {
		t.Error("no anthropic-ratelimit-tokens-reset")
	}
	rec := only(t, b.mock)
	// The SDK sends the key as a bearer token; x-api-key works as well.
	equal(t, "recorded auth", rec.Header.Get("Authorization"), "Bearer sk-ant-test")
	equal(t, "recorded shape", rec.Shape, mockupstream.ShapeAnthropic)
}

func TestAnthropic_StreamAccumulated(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := anthropicClient(b, "sk-ant-test")
	var raw *http.Response
	stream := client.Messages.NewStreaming(ctx(t), anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Stream this please"))},
	}, option.WithResponseInto(&raw))
	var msg anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.Type, err)
		}
		if ev.Type == "message_start" && ev.Message.Usage.InputTokens < 1 {
			t.Error("message_start without input_tokens")
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	equal(t, "content-type", raw.Header.Get("Content-Type"), "text/event-stream; charset=utf-8")
	equal(t, "text", msg.Content[0].Text, "Hello from claude-test. You said: Stream this please")
	equal(t, "stop_reason", string(msg.StopReason), "end_turn")
	equal(t, "output_tokens", msg.Usage.OutputTokens, int64(8))
	equal(t, "first event", types[0], "message_start")
	equal(t, "last event", types[len(types)-1], "message_stop")

	// The wire itself: named events whose data carries the same type, and a ping.
	_, body := post(t, b.srv.URL+"/v1/messages", anthropicHeaders,
		`{"model":"claude-test","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	var names []string
	for _, ev := range readSSE(t, strings.NewReader(string(body))) {
		var typed struct {
			Type string `json:"type"`
		}
		decodeJSON(t, []byte(ev.data), &typed)
		equal(t, "data type", typed.Type, ev.name)
		names = append(names, ev.name)
	}
	equal(t, "wire events", strings.Join(names, " "), "message_start content_block_start ping "+
		strings.Repeat("content_block_delta ", 6)+"content_block_stop message_delta message_stop")
}

func TestAnthropic_ToolUseStream(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := anthropicClient(b, "sk-ant-test")
	stream := client.Messages.NewStreaming(ctx(t), anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Tools:     anthropicWeatherTool(),
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in SF?"))},
	})
	var msg anthropic.Message
	jsonDeltas := 0
	for stream.Next() {
		ev := stream.Current()
		if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
			jsonDeltas++
		}
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.Type, err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	equal(t, "stop_reason", string(msg.StopReason), "tool_use")
	if len(msg.Content) != 2 {
		t.Fatalf("content = %+v", msg.Content)
	}
	equal(t, "preface", msg.Content[0].Type, "text")
	tu := msg.Content[1]
	equal(t, "block type", tu.Type, "tool_use")
	hasPrefix(t, "tool_use id", tu.ID, "toolu_01")
	equal(t, "name", tu.Name, "get_weather")
	equal(t, "input", string(tu.Input), `{"city":"example"}`)
	if jsonDeltas < 3 {
		t.Errorf("input came in %d input_json_delta events", jsonDeltas)
	}

	// Answer the tool: the reply mentions the result.
	reply, err := client.Messages.New(ctx(t), anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Tools:     anthropicWeatherTool(),
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in SF?")),
			msg.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(tu.ID, "Foggy, 15C", false)),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "tool result reply", reply.Content[0].Text, "The tool returned: Foggy, 15C")
	equal(t, "tool result stop", string(reply.StopReason), "end_turn")
}

func TestAnthropic_ThinkingCacheAndLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := anthropicClient(b, "sk-ant-test")
	stream := client.Messages.NewStreaming(ctx(t), anthropic.MessageNewParams{
		Model:     "claude-cached-cache-write",
		MaxTokens: 2048,
		Thinking:  anthropic.ThinkingConfigParamOfEnabled(1024),
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("context ", 100)))},
	})
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	equal(t, "first block", msg.Content[0].Type, "thinking")
	if msg.Content[0].Thinking == "" || msg.Content[0].Signature == "" {
		t.Errorf("thinking block = %+v", msg.Content[0])
	}
	equal(t, "second block", msg.Content[1].Type, "text")
	u := msg.Usage
	if u.CacheReadInputTokens == 0 || u.CacheCreationInputTokens == 0 {
		t.Errorf("no cache tokens: %+v", u)
	}
	total := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	equal(t, "cache read is half the prompt", u.CacheReadInputTokens, total/2)
	if u.OutputTokensDetails.ThinkingTokens == 0 || u.OutputTokens <= u.OutputTokensDetails.ThinkingTokens {
		t.Errorf("output usage = %+v", u)
	}

	short, err := client.Messages.New(ctx(t), anthropic.MessageNewParams{
		Model:         "claude-test",
		MaxTokens:     2,
		StopSequences: []string{"never"},
		Messages:      []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "max_tokens stop", string(short.StopReason), "max_tokens")
	equal(t, "max_tokens text", short.Content[0].Text, "Hello from")

	stopped, err := client.Messages.New(ctx(t), anthropic.MessageNewParams{
		Model:         "claude-test",
		MaxTokens:     100,
		StopSequences: []string{"You said"},
		Messages:      []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "stop_sequence stop", string(stopped.StopReason), "stop_sequence")
	equal(t, "stop_sequence", stopped.StopSequence, "You said")
}

func TestAnthropic_Validation(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	noVersion := map[string]string{"x-api-key": "k"}
	cases := []struct {
		name   string
		header map[string]string
		body   string
		status int
		typ    string
		msg    string
	}{
		{"no version", noVersion, `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "anthropic-version"},
		{"no max_tokens", anthropicHeaders, `{"model":"c","messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "max_tokens: Field required"},
		{"empty messages", anthropicHeaders, `{"model":"c","max_tokens":5,"messages":[]}`, 400, "invalid_request_error", "at least one message"},
		{"system role", anthropicHeaders, `{"model":"c","max_tokens":5,"messages":[{"role":"system","content":"hi"}]}`, 400, "invalid_request_error", "messages.0.role"},
		{"empty text", anthropicHeaders, `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, 400, "invalid_request_error", "non-empty"},
		{"temperature", anthropicHeaders, `{"model":"c","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "temperature"},
		{"tools missing", anthropicHeaders, `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}]}`, 400, "invalid_request_error", "must define tools"},
		{"unanswered tool_use", anthropicHeaders, `{"model":"c","max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":"hello?"}]}`, 400, "invalid_request_error", "without `tool_result` blocks immediately after: toolu_1"},
		{"orphan tool_result", anthropicHeaders, `{"model":"c","max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"r"}]}]}`, 400, "invalid_request_error", "unexpected `tool_use_id`"},
		{"thinking budget", anthropicHeaders, `{"model":"c","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":10},"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "budget_tokens"},
		{"bad json", anthropicHeaders, `{"model":`, 400, "invalid_request_error", ""},
	}
	for _, tc := range cases {
		resp, raw := post(t, b.srv.URL+"/v1/messages", tc.header, tc.body)
		equal(t, tc.name+": status", resp.StatusCode, tc.status)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
			RequestID string `json:"request_id"`
		}
		decodeJSON(t, raw, &e)
		equal(t, tc.name+": type", e.Type, "error")
		equal(t, tc.name+": error.type", e.Error.Type, tc.typ)
		hasPrefix(t, tc.name+": request_id", e.RequestID, "req_")
		if !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: message %q lacks %q", tc.name, e.Error.Message, tc.msg)
		}
	}

	resp, raw := post(t, b.srv.URL+"/v1/messages/count_tokens", anthropicHeaders, `{"model":"c","messages":[{"role":"user","content":"hello there"}]}`)
	equal(t, "count_tokens status", resp.StatusCode, 200)
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	decodeJSON(t, raw, &count)
	if count.InputTokens < 1 {
		t.Errorf("count_tokens = %s", raw)
	}
}
