package translator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/wire"
)

func TestGolden_ChatAnthropic(t *testing.T) {
	t.Parallel()
	runGolden(t, "chat_anthropic")
}

// Real Anthropic answers, JSON and streamed, reach a Chat caller whole:
// the text, every tool call with its full arguments and a per-response
// index, the finish reason and the usage — and streams come out the same
// however the bytes were split.
func TestChatAnthropic_Cassettes(t *testing.T) {
	t.Parallel()
	for _, x := range cassettes(t) {
		if x.status != 200 {
			continue
		}
		t.Run(x.name, func(t *testing.T) {
			var want struct {
				Content []anthBlock `json:"content"`
			}
			stream := isSSE(x.response)
			if stream {
				// The accumulated message is what the Anthropic SDK would see.
				var acc anthropic.Message
				for _, ev := range sseEvents(t, x.response) {
					var e anthropic.MessageStreamEventUnion
					if err := json.Unmarshal([]byte(ev[1]), &e); err != nil {
						t.Fatal(err)
					}
					if err := acc.Accumulate(e); err != nil {
						t.Fatal(err)
					}
				}
				_ = json.Unmarshal([]byte(acc.RawJSON()), &want)
			} else if err := json.Unmarshal(x.response, &want); err != nil {
				t.Fatal(err)
			}
			req := minimalRequest(t, wire.InboundChat, stream)
			req.C.IncludeUsage = true
			out, usage := translateAnswer(t, &chatAnthropic, req, caseMeta{}, 200, x.response)
			validateCaller(t, wire.InboundChat, stream, 200, out)
			if stream {
				checkSplits(t, &chatAnthropic, req, caseMeta{}, x.response, out)
			}
			msg := chatMessageOf(t, out, stream)
			var text strings.Builder
			var calls []string
			for _, b := range want.Content {
				switch b.Type {
				case "text":
					text.WriteString(*b.Text)
				case "tool_use":
					calls = append(calls, "call_"+b.ID+" "+b.Name+" "+argsText(b.Input))
				}
			}
			var got []string
			for i, c := range msg.Message.ToolCalls {
				got = append(got, c.ID+" "+c.Function.Name+" "+argsText(json.RawMessage(c.Function.Arguments)))
				if stream && msg.indices[i] != i {
					t.Errorf("tool call %d streamed with index %d", i, msg.indices[i])
				}
			}
			if msg.Message.Content != text.String() || strings.Join(got, "|") != strings.Join(calls, "|") {
				t.Errorf("got %q %q, want %q %q", msg.Message.Content, got, text.String(), calls)
			}
			if (len(calls) > 0) != (msg.FinishReason == "tool_calls") || msg.Usage.PromptTokens != usage.Input || msg.Usage.PromptTokens == 0 {
				t.Errorf("finish %q, usage %+v, recorded %+v", msg.FinishReason, msg.Usage, usage)
			}
		})
	}
}

type chatResult struct {
	Message      openai.ChatCompletionMessage
	FinishReason string
	Usage        openai.CompletionUsage
	indices      []int // the index each streamed tool call first came with
}

// chatMessageOf reads a Chat answer back with openai-go, accumulating a
// stream.
func chatMessageOf(t *testing.T, out []byte, stream bool) chatResult {
	t.Helper()
	if !stream {
		var c openai.ChatCompletion
		if err := json.Unmarshal(out, &c); err != nil {
			t.Fatal(err)
		}
		return chatResult{Message: c.Choices[0].Message, FinishReason: c.Choices[0].FinishReason, Usage: c.Usage}
	}
	var acc openai.ChatCompletionAccumulator
	var r chatResult
	for _, ev := range sseEvents(t, out) {
		if ev[1] == "[DONE]" {
			continue
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(ev[1]), &c); err != nil {
			t.Fatal(err)
		}
		acc.AddChunk(c)
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					r.indices = append(r.indices, int(tc.Index))
				}
			}
		}
	}
	r.Message, r.FinishReason, r.Usage = acc.Choices[0].Message, acc.Choices[0].FinishReason, acc.Usage
	return r
}
