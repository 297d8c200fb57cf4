package wire

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestParseUsage_EachShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		shape Shape
		obj   string
		want  Usage
	}{
		{"openai chat", ShapeOpenAI,
			`{"prompt_tokens":100,"completion_tokens":40,"total_tokens":140,"prompt_tokens_details":{"cached_tokens":60,"cache_write_tokens":5},"completion_tokens_details":{"reasoning_tokens":12}}`,
			Usage{Input: 100, Output: 40, CacheRead: 60, CacheWrite: 5, Reasoning: 12}},
		{"openai embeddings", ShapeOpenAI, `{"prompt_tokens":8,"total_tokens":8}`, Usage{Input: 8}},
		{"responses", ShapeOpenAIResponses,
			`{"input_tokens":50,"input_tokens_details":{"cached_tokens":20},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":80}`,
			Usage{Input: 50, Output: 30, CacheRead: 20, Reasoning: 10}},
		{"anthropic excludes cache from input", ShapeAnthropic,
			`{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":300,"output_tokens":7}`,
			Usage{Input: 510, Output: 7, CacheRead: 300, CacheWrite: 200}},
		{"gemini", ShapeGemini,
			`{"promptTokenCount":9,"candidatesTokenCount":4,"thoughtsTokenCount":3,"cachedContentTokenCount":2}`,
			Usage{Input: 9, Output: 7, CacheRead: 2, Reasoning: 3}},
	}
	for _, tt := range tests {
		if got := ParseUsage(tt.shape, []byte(tt.obj)); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

const chatStream = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null}

data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}

data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}

data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":4}}}

data: [DONE]

`

const anthropicStream = "event: message_start\r\n" +
	`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":100,"output_tokens":1}}}` + "\r\n\r\n" +
	"event: content_block_start\r\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\r\n\r\n" +
	"event: ping\r\n" + `data: {"type": "ping"}` + "\r\n\r\n" +
	"event: content_block_delta\r\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}` + "\r\n\r\n" +
	"event: content_block_stop\r\n" + `data: {"type":"content_block_stop","index":0}` + "\r\n\r\n" +
	"event: message_delta\r\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}` + "\r\n\r\n" +
	"event: message_stop\r\n" + `data: {"type":"message_stop"}` + "\r\n\r\n"

const responsesStream = "event: response.created\n" +
	`data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","usage":null}}` + "\n\n" +
	"event: response.output_text.delta\n" +
	`data: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}` + "\n\n" +
	"event: response.completed\n" +
	`data: {"type":"response.completed","sequence_number":2,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":35}}}` + "\n\n"

func track(t *testing.T, shape Shape, stream string) (StreamTracker, int) {
	t.Helper()
	tr := NewStreamTracker(shape)
	er := NewEventReader(strings.NewReader(stream), nil, 1<<20)
	usageOnly := 0
	for {
		ev, err := er.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if tr.Observe(ev) {
			usageOnly++
			if !bytes.Contains(ev.Data, []byte(`"choices":[]`)) {
				t.Errorf("usage-only event %q", ev.Data)
			}
		}
	}
	return tr, usageOnly
}

func TestStreamTracker_EachShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		shape     Shape
		stream    string
		want      Usage
		usageOnly int
	}{
		{"chat", ShapeOpenAI, chatStream, Usage{Input: 11, Output: 2, CacheRead: 4}, 1},
		{"anthropic cumulative", ShapeAnthropic, anthropicStream, Usage{Input: 128, Output: 15, CacheRead: 100, CacheWrite: 3}, 0},
		{"responses", ShapeOpenAIResponses, responsesStream, Usage{Input: 30, Output: 5, Reasoning: 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, n := track(t, tt.shape, tt.stream)
			got, ok := tr.Usage()
			if !ok || got != tt.want {
				t.Errorf("usage = %+v (%v), want %+v", got, ok, tt.want)
			}
			if n != tt.usageOnly {
				t.Errorf("usage-only chunks = %d, want %d", n, tt.usageOnly)
			}
			if !tr.Terminal() || tr.Errored() {
				t.Errorf("terminal=%v errored=%v", tr.Terminal(), tr.Errored())
			}
		})
	}
}

func TestStreamTracker_NotTerminalWhenCut(t *testing.T) {
	t.Parallel()
	for shape, stream := range map[Shape]string{
		ShapeOpenAI:          chatStream[:strings.Index(chatStream, "data: [DONE]")],
		ShapeAnthropic:       anthropicStream[:strings.Index(anthropicStream, "event: message_stop")],
		ShapeOpenAIResponses: responsesStream[:strings.Index(responsesStream, "event: response.completed")],
	} {
		if tr, _ := track(t, shape, stream); tr.Terminal() {
			t.Errorf("%s: Terminal on a cut stream", shape)
		}
	}
}

func TestStreamTracker_InStreamErrors(t *testing.T) {
	t.Parallel()
	for shape, stream := range map[Shape]string{
		ShapeOpenAI:          "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n",
		ShapeAnthropic:       "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n",
		ShapeOpenAIResponses: "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"x\",\"sequence_number\":4}\n\n",
	} {
		tr, _ := track(t, shape, stream)
		if !tr.Terminal() || !tr.Errored() {
			t.Errorf("%s: terminal=%v errored=%v", shape, tr.Terminal(), tr.Errored())
		}
	}
}

func TestBodyUsage_FindsTopLevelUsageAtEverySplit(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"id":"chatcmpl-1","choices":[{"message":{"content":"usage: \"usage\":{}"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
		`{"usage" : {"input_tokens":1,"nested":{"usage":{"x":2}}} , "after":[1,{"usage":3}]}`,
		`{"data":[{"embedding":[0.1,-2e3]}],"model":"m","usage":{"prompt_tokens":8,"total_tokens":8}}`,
		`{"a":"\\","usage":{"output_tokens":9}}`,
		`{"usage":null,"x":1}`,
		`{"usage":12}`,
		`{"no":"usage here"}`,
	}
	for _, body := range bodies {
		want, _ := Get([]byte(body), "usage")
		for i := 0; i <= len(body); i++ {
			c := NewBodyUsage(1 << 10)
			_, _ = c.Write([]byte(body[:i]))
			_, _ = c.Write([]byte(body[i:]))
			got, _ := c.Value()
			if !bytes.Equal(got, want) {
				t.Fatalf("%s split %d: got %q, want %q", body, i, got, want)
			}
		}
	}
}
