package mockupstream_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/relay-llm/relay/internal/mockupstream"
)

func openAIClient(b bundle, key string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(b.srv.URL+"/v1"),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
	)
}

func weatherTools() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather",
			Parameters: openai.FunctionParameters{
				"type": "object",
				"properties": map[string]any{
					"city":  map[string]any{"type": "string"},
					"days":  map[string]any{"type": "integer"},
					"units": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
				},
				"required": []string{"city", "days", "units"},
			},
		}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_time",
			Parameters: openai.FunctionParameters{
				"type":       "object",
				"properties": map[string]any{"zone": map[string]any{"type": "string"}, "utc": map[string]any{"type": "boolean"}},
				"required":   []string{"zone", "utc"},
			},
		}),
	}
}

func TestOpenAIChat_NonStream(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	var raw *http.Response
	got, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage("Hi there, how are you doing today?"),
		},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	hasPrefix(t, "id", got.ID, "chatcmpl-")
	equal(t, "model", got.Model, "gpt-test")
	equal(t, "object", string(got.Object), "chat.completion")
	if got.Created == 0 {
		t.Error("created is zero")
	}
	want := "Hello from gpt-test. You said: Hi there, how are you doing today?"
	equal(t, "content", got.Choices[0].Message.Content, want)
	equal(t, "finish_reason", got.Choices[0].FinishReason, "stop")
	equal(t, "completion_tokens", got.Usage.CompletionTokens, int64(len(strings.Fields(want))))
	if got.Usage.PromptTokens < 1 {
		t.Errorf("prompt_tokens = %d", got.Usage.PromptTokens)
	}
	equal(t, "total_tokens", got.Usage.TotalTokens, got.Usage.PromptTokens+got.Usage.CompletionTokens)
	hasPrefix(t, "x-request-id", raw.Header.Get("x-request-id"), "req_")

	rec := only(t, b.mock)
	equal(t, "recorded auth", rec.Header.Get("Authorization"), "Bearer sk-test")
	equal(t, "recorded shape", rec.Shape, mockupstream.ShapeOpenAI)
	equal(t, "recorded model", rec.Model, "gpt-test")
	equal(t, "recorded path", rec.Path, "/v1/chat/completions")
	equal(t, "recorded status", rec.Status, 200)
	equal(t, "recorded stream", rec.Stream, false)
	if !rec.Finished() || rec.Canceled {
		t.Errorf("record not finished cleanly: %+v", rec)
	}
	if !json.Valid(rec.Body) || !strings.Contains(string(rec.Body), `"gpt-test"`) {
		t.Errorf("recorded body = %s", rec.Body)
	}
}

func TestOpenAIChat_StreamAccumulated(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	stream := client.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{
		Model:         "gpt-test",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me something nice")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("accumulator rejected chunk %d: %s", chunks, stream.Current().RawJSON())
		}
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := "Hello from gpt-test. You said: Tell me something nice"
	equal(t, "content", acc.Choices[0].Message.Content, want)
	equal(t, "finish_reason", acc.Choices[0].FinishReason, "stop")
	equal(t, "completion_tokens", acc.Usage.CompletionTokens, int64(9))
	hasPrefix(t, "id", acc.ID, "chatcmpl-")
	if chunks < 10 {
		t.Errorf("only %d chunks: not streamed word by word", chunks)
	}
	rec := only(t, b.mock)
	equal(t, "recorded stream", rec.Stream, true)
}

func TestOpenAIChat_StreamFraming(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	for _, includeUsage := range []bool{false, true} {
		body := `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		if includeUsage {
			body = `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
		}
		resp, raw := post(t, b.srv.URL+"/v1/chat/completions", openAIHeaders, body)
		equal(t, "content-type", resp.Header.Get("Content-Type"), "text/event-stream; charset=utf-8")
		events := readSSE(t, strings.NewReader(string(raw)))
		last := events[len(events)-1]
		equal(t, "last event", last.data, "[DONE]")
		chunks := events[:len(events)-1]
		var first struct {
			Choices []struct {
				Delta map[string]any `json:"delta"`
			} `json:"choices"`
		}
		decodeJSON(t, []byte(chunks[0].data), &first)
		equal(t, "first delta role", first.Choices[0].Delta["role"], any("assistant"))
		for i, ev := range chunks {
			if ev.name != "" {
				t.Errorf("chat chunk %d has an event name %q", i, ev.name)
			}
			var m map[string]json.RawMessage
			decodeJSON(t, []byte(ev.data), &m)
			u, has := m["usage"]
			switch {
			case !includeUsage && has:
				t.Errorf("chunk %d has usage without include_usage: %s", i, ev.data)
			case includeUsage && !has:
				t.Errorf("chunk %d lacks usage: %s", i, ev.data)
			case includeUsage && i < len(chunks)-1 && string(u) != "null":
				t.Errorf("chunk %d usage = %s, want null", i, u)
			case includeUsage && i == len(chunks)-1:
				equal(t, "usage chunk choices", string(m["choices"]), "[]")
				if string(u) == "null" {
					t.Error("usage chunk has null usage")
				}
			}
		}
	}
}

func TestOpenAIChat_ToolCallStreamed(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	for _, model := range []string{"gpt-test", "gpt-parallel"} {
		stream := client.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{
			Model:    model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
			Tools:    weatherTools(),
		})
		var acc openai.ChatCompletionAccumulator
		var finished []openai.FinishedChatCompletionToolCall
		argDeltas := 0
		for stream.Next() {
			chunk := stream.Current()
			acc.AddChunk(chunk)
			if tc, ok := acc.JustFinishedToolCall(); ok {
				finished = append(finished, tc)
			}
			if len(chunk.Choices) > 0 && len(chunk.Choices[0].Delta.ToolCalls) > 0 && chunk.Choices[0].Delta.ToolCalls[0].ID == "" {
				argDeltas++
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		calls := acc.Choices[0].Message.ToolCalls
		wantCalls := 1
		if model == "gpt-parallel" {
			wantCalls = 2
		}
		if len(calls) != wantCalls {
			t.Fatalf("%s: %d tool calls, want %d", model, len(calls), wantCalls)
		}
		equal(t, "finish_reason", acc.Choices[0].FinishReason, "tool_calls")
		equal(t, "name", calls[0].Function.Name, "get_weather")
		equal(t, "arguments", calls[0].Function.Arguments, `{"city":"example","days":1,"units":"celsius"}`)
		hasPrefix(t, "tool call id", calls[0].ID, "call_")
		if wantCalls == 2 {
			equal(t, "second arguments", calls[1].Function.Arguments, `{"zone":"example","utc":true}`)
		}
		if argDeltas < 3 {
			t.Errorf("%s: arguments came in %d deltas; want them streamed in pieces", model, argDeltas)
		}
		if len(finished) != wantCalls {
			t.Errorf("%s: JustFinishedToolCall fired %d times", model, len(finished))
		}
	}
}

func TestOpenAIChat_ToolCallAndResult(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	first, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:    weatherTools(),
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := first.Choices[0].Message
	equal(t, "finish_reason", first.Choices[0].FinishReason, "tool_calls")
	if len(msg.ToolCalls) != 1 {
		t.Fatalf("tool calls = %d", len(msg.ToolCalls))
	}
	second, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Weather in Paris?"),
			msg.ToParam(),
			openai.ToolMessage("Sunny, 21 degrees", msg.ToolCalls[0].ID),
		},
		Tools: weatherTools(),
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "finish_reason", second.Choices[0].FinishReason, "stop")
	equal(t, "content", second.Choices[0].Message.Content, "The tool returned: Sunny, 21 degrees")

	// tool_choice none answers in text; a forced tool is the one called.
	none, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model:      "gpt-test",
		Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather?")},
		Tools:      weatherTools(),
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")},
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "tool_choice none", len(none.Choices[0].Message.ToolCalls), 0)
	forced, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model:      "gpt-test",
		Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Time?")},
		Tools:      weatherTools(),
		ToolChoice: openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "forced tool", forced.Choices[0].Message.ToolCalls[0].Function.Name, "get_time")
}

func TestOpenAIChat_LimitsAndUsageMarkers(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	got, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model:               "gpt-cached-reasoning",
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("long prompt ", 50))},
		MaxCompletionTokens: openai.Int(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "content", got.Choices[0].Message.Content, "Hello from gpt-cached-reasoning.")
	equal(t, "finish_reason", got.Choices[0].FinishReason, "length")
	u := got.Usage
	equal(t, "cached_tokens", u.PromptTokensDetails.CachedTokens, u.PromptTokens/2)
	if u.CompletionTokensDetails.ReasoningTokens == 0 {
		t.Error("no reasoning tokens for a reasoning model")
	}
	equal(t, "completion_tokens", u.CompletionTokens, 3+u.CompletionTokensDetails.ReasoningTokens)

	stopped, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		Stop:     openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(". You")},
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "stopped content", stopped.Choices[0].Message.Content, "Hello from gpt-test")
	equal(t, "stopped finish", stopped.Choices[0].FinishReason, "stop")
}

func TestOpenAIChat_Validation(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	cases := []struct {
		name, body, param, code string
	}{
		{"bad json", `{"model":`, "", ""},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "", ""},
		{"no messages", `{"model":"m"}`, "messages", "missing_required_parameter"},
		{"empty messages", `{"model":"m","messages":[]}`, "messages", "empty_array"},
		{"bad role", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, "messages.[0].role", "invalid_value"},
		{"content type", `{"model":"m","messages":[{"role":"user","content":5}]}`, "messages.content", "invalid_type"},
		{"stream_options without stream", `{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "stream_options", ""},
		{"tool result without call", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_x","content":"r"}]}`, "messages.[1].role", ""},
		{"unanswered tool call", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"again"}]}`, "messages.[1].role", ""},
		{"tool_choice without tools", `{"model":"m","tool_choice":"auto","messages":[{"role":"user","content":"hi"}]}`, "tool_choice", ""},
		{"responses-style tool", `{"model":"m","tools":[{"type":"function","name":"f","parameters":{}}],"messages":[{"role":"user","content":"hi"}]}`, "tools[0].function", "missing_required_parameter"},
		{"temperature", `{"model":"m","temperature":3,"messages":[{"role":"user","content":"hi"}]}`, "temperature", "decimal_above_max_value"},
	}
	for _, tc := range cases {
		resp, raw := post(t, b.srv.URL+"/v1/chat/completions", openAIHeaders, tc.body)
		equal(t, tc.name+": status", resp.StatusCode, 400)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		decodeJSON(t, raw, &e)
		equal(t, tc.name+": type", e.Error.Type, "invalid_request_error")
		if e.Error.Message == "" {
			t.Errorf("%s: empty message", tc.name)
		}
		deref := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		equal(t, tc.name+": param", deref(e.Error.Param), tc.param)
		equal(t, tc.name+": code", deref(e.Error.Code), tc.code)
		if !strings.Contains(string(raw), `"param":`) || !strings.Contains(string(raw), `"code":`) {
			t.Errorf("%s: param/code keys missing: %s", tc.name, raw)
		}
	}
}

func TestResponses_Stream(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	stream := client.Responses.NewStreaming(ctx(t), responses.ResponseNewParams{
		Model:        "gpt-test",
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello, responses API")},
	})
	var types []string
	var text strings.Builder
	var completed responses.Response
	for stream.Next() {
		ev := stream.Current()
		equal(t, "sequence_number", ev.SequenceNumber, int64(len(types)))
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			completed = ev.AsResponseCompleted().Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	var dedup []string
	for _, ty := range types {
		if len(dedup) == 0 || dedup[len(dedup)-1] != ty {
			dedup = append(dedup, ty)
		}
	}
	want := []string{
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed",
	}
	equal(t, "event sequence", strings.Join(dedup, " "), strings.Join(want, " "))
	equal(t, "streamed text", text.String(), "Hello from gpt-test. You said: Hello, responses API")
	hasPrefix(t, "response id", completed.ID, "resp_")
	equal(t, "status", string(completed.Status), "completed")
	equal(t, "output_text", completed.OutputText(), text.String())
	hasPrefix(t, "message id", completed.Output[0].ID, "msg_")
	if completed.Usage.InputTokens < 1 || completed.Usage.OutputTokens != 8 {
		t.Errorf("usage = %+v", completed.Usage)
	}
	equal(t, "recorded shape", only(t, b.mock).Shape, mockupstream.ShapeOpenAIResponses)
}

func TestResponses_FunctionCallStream(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	stream := client.Responses.NewStreaming(ctx(t), responses.ResponseNewParams{
		Model: "gpt-test",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather?")},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
			Name: "get_weather",
			Parameters: map[string]any{
				"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
			},
		}}},
	})
	var args strings.Builder
	var done, itemID, callID string
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_item.added":
			itemID, callID = ev.Item.ID, ev.Item.CallID
		case "response.function_call_arguments.delta":
			equal(t, "delta item_id", ev.ItemID, itemID)
			args.WriteString(ev.Delta)
		case "response.function_call_arguments.done":
			done = ev.Arguments
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	hasPrefix(t, "item id", itemID, "fc_")
	hasPrefix(t, "call id", callID, "call_")
	equal(t, "streamed arguments", args.String(), `{"city":"example"}`)
	equal(t, "done arguments", done, args.String())
}

func TestResponses_IncompleteAndReasoning(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	got, err := client.Responses.New(ctx(t), responses.ResponseNewParams{
		Model:           "o-reasoning",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		MaxOutputTokens: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "status", string(got.Status), "incomplete")
	equal(t, "incomplete reason", got.IncompleteDetails.Reason, "max_output_tokens")
	equal(t, "first item", got.Output[0].Type, "reasoning")
	hasPrefix(t, "reasoning id", got.Output[0].ID, "rs_")
	equal(t, "text", got.OutputText(), "Hello from")
	if got.Usage.OutputTokensDetails.ReasoningTokens == 0 {
		t.Error("no reasoning tokens")
	}
	equal(t, "output_tokens", got.Usage.OutputTokens, 2+got.Usage.OutputTokensDetails.ReasoningTokens)

	// A function_call_output must answer a known call.
	resp, raw := post(t, b.srv.URL+"/v1/responses", openAIHeaders,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"fc_wrong","output":"x"}]}`)
	equal(t, "orphan output status", resp.StatusCode, 400)
	if !strings.Contains(string(raw), "No tool call found for function call output with call_id fc_wrong") {
		t.Errorf("orphan output body = %s", raw)
	}
}

func TestEmbeddings_FloatAndBase64(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	floats, err := client.Embeddings.New(ctx(t), openai.EmbeddingNewParams{
		Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha", "beta"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b64, err := client.Embeddings.New(ctx(t), openai.EmbeddingNewParams{
		Model:          "text-embedding-3-small",
		Input:          openai.EmbeddingNewParamsInputUnion{OfString: openai.String("beta")},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
		Dimensions:     openai.Int(1536),
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "data", len(floats.Data), 2)
	equal(t, "dims", len(floats.Data[0].Embedding), 1536)
	equal(t, "index", floats.Data[1].Index, int64(1))
	equal(t, "model", floats.Model, "text-embedding-3-small")
	if floats.Usage.PromptTokens < 2 || floats.Usage.TotalTokens != floats.Usage.PromptTokens {
		t.Errorf("usage = %+v", floats.Usage)
	}
	// Deterministic: "beta" embeds the same in float and base64 (float32 precision).
	for i, v := range b64.Data[0].Embedding {
		if d := v - floats.Data[1].Embedding[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("component %d: base64 %v vs float %v", i, v, floats.Data[1].Embedding[i])
		}
	}
	var norm float64
	for _, v := range floats.Data[0].Embedding {
		norm += v * v
	}
	if norm < 0.99 || norm > 1.01 {
		t.Errorf("|v|² = %v, want a unit vector", norm)
	}
	if floats.Data[0].Embedding[0] == floats.Data[1].Embedding[0] {
		t.Error("different inputs gave the same vector")
	}
	equal(t, "recorded shape", b.mock.Requests()[0].Shape, mockupstream.ShapeOpenAIEmbeddings)

	resp, _ := post(t, b.srv.URL+"/v1/embeddings", openAIHeaders, `{"model":"text-embedding-3-small","input":""}`)
	equal(t, "empty input status", resp.StatusCode, 400)
}

func TestModels_OpenAIList(t *testing.T) {
	t.Parallel()
	b := setup(t, mockupstream.Options{})
	client := openAIClient(b, "sk-test")
	page, err := client.Models.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) == 0 || page.Data[0].Object != "model" {
		t.Errorf("models = %+v", page.Data)
	}
}
