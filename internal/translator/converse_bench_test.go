package translator

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/eventstream"
	"github.com/relay-llm/relay/internal/sigv4"
	"github.com/relay-llm/relay/internal/wire"
)

// BenchmarkConverseStreamRequest is what one Chat request served by a
// Bedrock ConverseStream costs Relay beyond an OpenAI passthrough: encode
// and sign the Converse body, unframe the event stream (both CRCs), read
// it as SSE and translate each event into Chat chunks. The passthrough
// case reads the same answer length as OpenAI SSE and picks the usage out,
// which is all the proxy does on that path. Network and the upstream are
// left out; the proxy's own work is the same on both.
func BenchmarkConverseStreamRequest(b *testing.B) {
	const words = 40
	var es []byte
	msg := func(kind, payload string) {
		es, _ = eventstream.Append(es, eventstream.Message{Headers: []eventstream.Header{
			eventstream.StringHeader(":event-type", kind), eventstream.StringHeader(":content-type", "application/json"), eventstream.StringHeader(":message-type", "event"),
		}, Payload: []byte(payload)})
	}
	msg("messageStart", `{"p":"abcdefgh","role":"assistant"}`)
	var sse bytes.Buffer
	sse.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := range words {
		msg("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" word`+strconv.Itoa(i)+`"},"p":"abcdefghijk"}`)
		sse.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" word` + strconv.Itoa(i) + `"},"finish_reason":null}]}` + "\n\n")
	}
	msg("contentBlockStop", `{"contentBlockIndex":0,"p":"ab"}`)
	msg("messageStop", `{"p":"abcd","stopReason":"end_turn"}`)
	msg("metadata", `{"metrics":{"latencyMs":412},"p":"abc","usage":{"inputTokens":12,"outputTokens":40,"totalTokens":52}}`)
	sse.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":40,"total_tokens":52}}` + "\n\ndata: [DONE]\n\n")
	body := []byte(`{"model":"claude","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello, benchmark"}]}`)
	creds := sigv4.Credentials{AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: "secret", SessionToken: "token"}

	b.Run("bedrock_converse", func(b *testing.B) {
		b.ReportAllocs()
		var out, up []byte
		for b.Loop() {
			req, err := Decode(wire.InboundChat, body)
			if err != nil {
				b.Fatal(err)
			}
			tr, _ := New(req, converseTarget, testNow)
			if up, err = tr.AppendRequest(up[:0]); err != nil {
				b.Fatal(err)
			}
			h := http.Header{}
			h.Set("Content-Type", "application/json")
			if err := sigv4.SignURL("POST", "https://bedrock-runtime.us-east-1.amazonaws.com"+tr.Path(), h, up, creds, "us-east-1", "bedrock", time.Now()); err != nil {
				b.Fatal(err)
			}
			er := wire.NewEventReader(eventstream.NewSSEReader(bytes.NewReader(es), false), nil, 1<<20)
			for !tr.Done() {
				ev, err := er.Next()
				if err != nil {
					b.Fatal(err)
				}
				out, _ = tr.AppendEvent(out[:0], ev)
			}
		}
	})
	b.Run("openai_passthrough", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := wire.Get(body, "model"); !ok {
				b.Fatal("no model")
			}
			er := wire.NewEventReader(bytes.NewReader(sse.Bytes()), nil, 1<<20)
			t := wire.NewStreamTracker(wire.ShapeOpenAI)
			for {
				ev, err := er.Next()
				if err != nil {
					break
				}
				t.Observe(ev)
			}
			if _, ok := t.Usage(); !ok {
				b.Fatal("no usage")
			}
		}
	})
}
