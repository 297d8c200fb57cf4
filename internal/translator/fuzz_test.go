package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

// Fuzz targets for every decoder: callers' bodies, upstream bodies, upstream
// stream events and upstream error bodies. None may panic; garbage from a
// caller is a 400 (*wire.Error of a request kind), garbage from an upstream
// a 502 or an error event that ends the caller's stream.

// seedFiles adds every golden file matching pattern (relative to
// testdata/golden: <pair>/<case>/<file>) as a seed.
func seedFiles(f *testing.F, pattern string, add func([]byte)) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", pattern))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			add(b)
		}
	}
}

func requestError(t *testing.T, err error) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("not a *wire.Error: %v", err)
	}
	if status, _ := wire.Classify(err); status != http.StatusBadRequest {
		t.Fatalf("status %d for %v", status, err)
	}
}

func fuzzRequests(f *testing.F, in wire.Inbound, dir string) {
	seedFiles(f, "*/*/request.json", func(b []byte) {
		if in == wire.InboundGenerate || bytes.Contains(b, []byte(`"max_tokens"`)) == (in == wire.InboundMessages) {
			f.Add(b)
		}
	})
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:;base64,"}}]}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text"}]}]}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"model":"m","messages":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Decode(in, body)
		if err != nil {
			requestError(t, err)
			return
		}
		for _, p := range pairs {
			if p.in != in {
				continue
			}
			for _, mode := range []struct{ stream, strict bool }{{false, false}, {true, false}, {false, true}} {
				req.C.Stream, req.Strict = mode.stream, mode.strict
				tr, err := New(req, Target{Shape: p.up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tr.AppendRequest(nil); err != nil {
					requestError(t, err)
				}
			}
		}
	})
}

func FuzzDecodeChatRequest(f *testing.F) { fuzzRequests(f, wire.InboundChat, "chat") }

func FuzzDecodeMessagesRequest(f *testing.F) { fuzzRequests(f, wire.InboundMessages, "messages") }

// FuzzDecodeResponsesRequest decodes Responses bodies and encodes them for
// every responses→* pair. Seeds: the golden requests and the committed
// corpus in testdata/fuzz/FuzzDecodeResponsesRequest.
func FuzzDecodeResponsesRequest(f *testing.F) {
	seedFiles(f, "responses_*/*/request.json", func(b []byte) { f.Add(b) })
	f.Add([]byte(`{"model":"m","input":[{"type":"reasoning","summary":[],"encrypted_content":"rantr_"}]}`))
	f.Add([]byte(`{"model":"m","input":[{"type":"function_call_output","call_id":"call_","output":[{"type":"input_image"}]}]}`))
	f.Add([]byte(`{"model":"m","conversation":{"id":""},"input":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Decode(wire.InboundResponses, body)
		if err != nil {
			requestError(t, err)
			return
		}
		for _, p := range pairs {
			if p.in != wire.InboundResponses {
				continue
			}
			for _, mode := range []struct{ stream, strict bool }{{false, false}, {true, false}, {false, true}} {
				req.C.Stream, req.Strict = mode.stream, mode.strict
				tr, err := New(req, Target{Shape: p.up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tr.AppendRequest(nil); err != nil {
					requestError(t, err)
				}
			}
		}
	})
}

// FuzzDecodeGenerateRequest: every /v1/generate body is a request every
// binding shape encodes, or a 400; seeds are the golden requests of every
// pair (the other shapes' bodies exercise the unknown-field paths) and
// testdata/fuzz/FuzzDecodeGenerateRequest.
func FuzzDecodeGenerateRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_call","id":"a","name":"f","arguments":{"x":[1,{"y":null}]}}]}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"tool","content":[{"type":"tool_result","tool_call_id":"a","content":[{"type":"image","url":"data:image/png;base64,AAAA"}],"is_error":true}]}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning":{"enabled":true},"tool_choice":{"type":"tool","name":""}}`))
	fuzzRequests(f, wire.InboundGenerate, "generate")
}

// FuzzGeminiEmbeddingsAnswer: whatever a gemini binding answers to
// batchEmbedContents is an OpenAI embeddings list of one vector per input,
// or a 502 — never a panic or a list of the wrong length.
func FuzzGeminiEmbeddingsAnswer(f *testing.F) {
	f.Add([]byte(`{"embeddings":[{"values":[0.1,-0.2,3e-5]},{"values":[1,2,3]}]}`), false)
	f.Add([]byte(`{"embeddings":[{"values":[0.1]}]}`), true)
	f.Add([]byte(`{"embeddings":[{"values":[]},{"values":null}]}`), false)
	f.Add([]byte(`{"embeddings":[{"values":[1e39]},{"values":[1]}]}`), true)
	f.Add([]byte(`{"error":{"code":400,"message":"x","status":"INVALID_ARGUMENT"}}`), false)
	f.Add([]byte(`{"embeddings":null}`), false)
	f.Fuzz(func(t *testing.T, answer []byte, b64 bool) {
		body := `{"model":"m","input":["a","b"]}`
		if b64 {
			body = `{"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":3}`
		}
		req, err := Decode(wire.InboundEmbeddings, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := New(req, Target{Shape: wire.ShapeGemini, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.AppendRequest(nil); err != nil {
			t.Fatal(err)
		}
		out, err := tr.AppendResponse(nil, answer)
		if err != nil {
			if !errors.Is(err, wire.ErrUpstream) {
				t.Fatalf("not a 502: %v", err)
			}
		} else {
			var list struct {
				Object string `json:"object"`
				Data   []struct {
					Index     int             `json:"index"`
					Embedding json.RawMessage `json:"embedding"`
				} `json:"data"`
			}
			if err := json.Unmarshal(out, &list); err != nil || list.Object != "list" || len(list.Data) != 2 || list.Data[1].Index != 1 {
				t.Fatalf("answer %s (%v)", out, err)
			}
		}
		if body, status := tr.AppendError(nil, 400, answer, "req"); status != 400 || !json.Valid(body) {
			t.Fatalf("error body %d %q", status, body)
		}
	})
}

// fuzzAnswer feeds bytes to the pairs of one upstream shape as a whole
// body, as a stream (events) and as an error body.
func fuzzAnswer(f *testing.F, up wire.Shape) {
	for _, p := range pairs {
		if p.up == up {
			seedFiles(f, strings.ReplaceAll(p.name, "→", "_")+"/*/upstream.body", func(b []byte) { f.Add(b) })
		}
	}
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":99999999}]}}]}\n\n"))
	f.Add([]byte("event: content_block_delta\ndata: {\"index\":-1,\"delta\":{\"type\":\"text_delta\"}}\n\n"))
	f.Add([]byte("event: response.output_item.done\ndata: {\"item\":{\"id\":\"x\"}}\n\n"))
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":[1]}}]},\"finishReason\":\"STOP\"}]}\n\n"))
	f.Add([]byte("data: [DONE]\n\n"))
	f.Add([]byte(`{"error":{"message":"x","code":500}}`))
	f.Fuzz(func(t *testing.T, answer []byte) {
		for _, p := range pairs {
			if p.up != up {
				continue
			}
			for _, stream := range []bool{false, true} {
				req := minimalRequest(t, p.in, stream)
				req.C.IncludeUsage = true
				tr, _ := New(req, Target{Shape: p.up, UpstreamModel: "u"}, testNow)
				if _, err := tr.AppendResponse(nil, answer); err != nil && !errors.Is(err, wire.ErrUpstream) {
					t.Fatalf("%s: whole body: %v", p.name, err)
				}

				tr, _ = New(req, Target{Shape: p.up, UpstreamModel: "u"}, testNow)
				er := wire.NewEventReader(bytes.NewReader(answer), nil, 1<<20)
				var out []byte
				for !tr.Done() {
					ev, err := er.Next()
					if err != nil {
						break
					}
					var xerr error
					if out, xerr = tr.AppendEvent(out, ev); xerr != nil && (!tr.Done() || !tr.Errored()) {
						t.Fatalf("%s: a bad event did not end the stream with an error", p.name)
					}
				}
				if !tr.Done() {
					var ok bool
					if out, ok = tr.AppendEnd(out); !ok {
						out = tr.AppendBroken(out, "broke")
					}
				}
				if stream && len(out) == 0 {
					t.Fatalf("%s: a stream with no ending", p.name)
				}
				if !stream {
					_, _ = tr.AppendCollected(nil, "req")
				}

				body, status := tr.AppendError(nil, 400, answer, "req")
				if status != 400 || len(body) == 0 {
					t.Fatalf("%s: error body %d %q", p.name, status, body)
				}
			}
		}
	})
}

func FuzzOpenAIAnswer(f *testing.F)    { fuzzAnswer(f, wire.ShapeOpenAI) }
func FuzzAnthropicAnswer(f *testing.F) { fuzzAnswer(f, wire.ShapeAnthropic) }
func FuzzGeminiAnswer(f *testing.F)    { fuzzAnswer(f, wire.ShapeGemini) }
func FuzzResponsesAnswer(f *testing.F) { fuzzAnswer(f, wire.ShapeOpenAIResponses) }
