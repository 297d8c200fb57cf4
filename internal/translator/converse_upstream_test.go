package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// converseStream is a ConverseStream answer as the proxy hands it over:
// one wire.Event per event-stream message (Name the :event-type, Data the
// payload, padding field p included as Bedrock sends it).
func converseStream(withTool bool) []wire.Event {
	ev := func(name, data string) wire.Event { return wire.Event{Name: []byte(name), Data: []byte(data)} }
	evs := []wire.Event{
		ev("messageStart", `{"p":"abcdefgh","role":"assistant"}`),
		ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello"},"p":"abc"}`),
		ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" there"},"p":"abcdef"}`),
		ev("contentBlockStop", `{"contentBlockIndex":0,"p":"ab"}`),
	}
	stop := "end_turn"
	if withTool {
		evs = append(evs,
			ev("contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"get_weather"}},"p":"abc"}`),
			ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":"}},"p":"a"}`),
			ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"Paris\"}"}},"p":"a"}`),
			ev("contentBlockStop", `{"contentBlockIndex":1,"p":"ab"}`))
		stop = "tool_use"
	}
	return append(evs,
		ev("messageStop", `{"p":"abcd","stopReason":"`+stop+`"}`),
		ev("metadata", `{"metrics":{"latencyMs":412},"p":"abc","usage":{"inputTokens":12,"outputTokens":9,"totalTokens":61,"cacheReadInputTokens":30,"cacheWriteInputTokens":10}}`))
}

const converseAnswer = `{"metrics":{"latencyMs":380},"output":{"message":{"role":"assistant","content":[` +
	`{"reasoningContent":{"reasoningText":{"text":"The user wants weather.","signature":"EqQBCkYIBxgCKkD"}}},` +
	`{"text":"Let me check."},{"toolUse":{"toolUseId":"tooluse_abc-123","name":"get_weather","input":{"city":"Paris"}}}]}},` +
	`"stopReason":"tool_use","usage":{"inputTokens":20,"outputTokens":15,"totalTokens":35,"cacheReadInputTokens":0,"cacheWriteInputTokens":0}}`

var converseTarget = Target{Shape: wire.ShapeBedrockConverse, Model: "claude", UpstreamModel: "anthropic.claude-3-5-sonnet-20240620-v1:0", Host: "bedrock"}

func TestConverse_PathEscapesTheModelID(t *testing.T) {
	t.Parallel()
	req := minimalRequest(t, wire.InboundChat, true)
	tr, err := New(req, Target{Shape: wire.ShapeBedrockConverse, UpstreamModel: "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-v2:1"}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tr.Path(), "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-v2%3A1/converse-stream"; got != want {
		t.Fatalf("path %s, want %s", got, want)
	}
	tr, _ = New(minimalRequest(t, wire.InboundChat, false), converseTarget, testNow)
	if got := tr.Path(); got != "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse" {
		t.Fatalf("path %s", got)
	}
}

// A multi-turn Chat request with a system prompt, an image, tools, a tool
// round trip, top_k and stop sequences becomes one Converse body.
func TestConverse_EncodesAChatConversation(t *testing.T) {
	t.Parallel()
	body := `{"model":"claude","max_tokens":300,"temperature":0.5,"top_p":0.9,"top_k":40,"stop":["END"],"metadata":{"team":"a"},
	"messages":[
	 {"role":"system","content":"Be brief."},
	 {"role":"user","content":[{"type":"text","text":"Weather?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
	 {"role":"assistant","content":"","tool_calls":[{"id":"call_tooluse_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
	 {"role":"tool","tool_call_id":"call_tooluse_1","content":"21C"},
	 {"role":"user","content":"Thanks"}],
	"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
	"tool_choice":"required"}`
	req, err := Decode(wire.InboundChat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := New(req, converseTarget, testNow)
	out, err := tr.AppendRequest(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"additionalModelRequestFields":{"top_k":40},"inferenceConfig":{"maxTokens":300,"stopSequences":["END"],"temperature":0.5,"topP":0.9},` +
		`"messages":[{"content":[{"text":"Weather?"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}],"role":"user"},` +
		`{"content":[{"toolUse":{"input":{"city":"Paris"},"name":"get_weather","toolUseId":"tooluse_1"}}],"role":"assistant"},` +
		`{"content":[{"toolResult":{"content":[{"text":"21C"}],"status":"success","toolUseId":"tooluse_1"}},{"text":"Thanks"}],"role":"user"}],` +
		`"requestMetadata":{"team":"a"},"system":[{"text":"Be brief."}],` +
		`"toolConfig":{"toolChoice":{"any":{}},"tools":[{"toolSpec":{"description":"d","inputSchema":{"json":{"properties":{"city":{"type":"string"}},"type":"object"}},"name":"get_weather"}}]}}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Fatalf("converse body\n got %s\nwant %s", b, want)
	}
}

func TestConverse_RefusesWhatItCannotExpress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, field string }{
		{"n", `{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`, "n"},
		{"json schema", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}},"messages":[{"role":"user","content":"hi"}]}`, "response_format"},
		{"image url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, "image_url"},
		{"none with history", `{"model":"m","tool_choice":"none","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, "tool_choice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Decode(wire.InboundChat, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			tr, _ := New(req, converseTarget, testNow)
			_, err = tr.AppendRequest(nil)
			var we *wire.Error
			if !errors.As(err, &we) || we.Kind != wire.ErrUnsupportedFeature || !strings.Contains(we.Param, tc.field) {
				t.Fatalf("err %v", err)
			}
		})
	}
}

// Anthropic cache_control breakpoints become cachePoint blocks; advisory
// fields Converse has no place for are named as dropped.
func TestConverse_CachePointsAndDroppedFields(t *testing.T) {
	t.Parallel()
	body := `{"model":"m","max_tokens":100,"metadata":{"user_id":"u1"},
	 "system":[{"type":"text","text":"Long system prompt","cache_control":{"type":"ephemeral"}}],
	 "messages":[{"role":"user","content":[{"type":"text","text":"doc","cache_control":{"type":"ephemeral"}},{"type":"text","text":"question"}]}],
	 "tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`
	req, err := Decode(wire.InboundMessages, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := New(req, converseTarget, testNow)
	out, err := tr.AppendRequest(nil)
	if err != nil {
		t.Fatal(err)
	}
	var q cvRequest
	if err := json.Unmarshal(out, &q); err != nil {
		t.Fatal(err)
	}
	if len(q.System) != 2 || q.System[1].CachePoint == nil {
		t.Errorf("system %s", out)
	}
	if c := q.Messages[0].Content; len(c) != 3 || c[1].CachePoint == nil || c[2].Text == nil {
		t.Errorf("messages %s", out)
	}
	if d := tr.Dropped(); !strings.Contains(d, "metadata.user_id") || !strings.Contains(d, "tool_choice.disable_parallel_tool_use") {
		t.Errorf("dropped %q", d)
	}
}

func TestConverse_DecodesAWholeAnswer(t *testing.T) {
	t.Parallel()
	var r canonical.Response
	u := newConverseUpstream(testNow)
	if err := u.decodeResponse([]byte(converseAnswer), &r); err != nil {
		t.Fatal(err)
	}
	if r.Finish != canonical.FinishToolCalls || len(r.Parts) != 3 {
		t.Fatalf("%+v", r)
	}
	if p := r.Parts[0]; p.Type != canonical.PartThinking || p.Signature != "EqQBCkYIBxgCKkD" || p.Origin != canonical.OriginAnthropic {
		t.Errorf("thinking %+v", p)
	}
	if tc := r.Parts[2].ToolCall; tc.ID != "tooluse_abc-123" || tc.Arguments != `{"city":"Paris"}` {
		t.Errorf("call %+v", tc)
	}
	if r.Usage != (canonical.Usage{Input: 20, Output: 15}) {
		t.Errorf("usage %+v", r.Usage)
	}
}

// Every inbound shape is served from a ConverseStream, streamed and
// collected, with tool calls; cache reads and writes count in the input.
func TestConverse_StreamsIntoEveryCallerShape(t *testing.T) {
	t.Parallel()
	for _, in := range []wire.Inbound{wire.InboundChat, wire.InboundMessages, wire.InboundResponses, wire.InboundGenerate, wire.InboundGemini} {
		for _, stream := range []bool{true, false} {
			name := in.String()
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				req := minimalRequest(t, in, stream)
				req.C.IncludeUsage = true
				tr, err := New(req, converseTarget, testNow)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tr.AppendRequest(nil); err != nil {
					t.Fatal(err)
				}
				var out []byte
				for _, ev := range converseStream(true) {
					if out, err = tr.AppendEvent(out, ev); err != nil {
						t.Fatal(err)
					}
				}
				if !tr.Done() || tr.Errored() {
					t.Fatalf("done %v errored %v", tr.Done(), tr.Errored())
				}
				if !stream {
					var st int
					out, st = tr.AppendCollected(nil, "req_1")
					if st != 200 {
						t.Fatalf("status %d: %s", st, out)
					}
				}
				validateCaller(t, in, stream, 200, out)
				if u := tr.Usage(); u.Input != 52 || u.Output != 9 || u.CacheRead != 30 || u.CacheWrite != 10 {
					t.Errorf("usage %+v", u)
				}
				for _, want := range []string{"Hello", "there", "get_weather", "Paris"} {
					if !bytes.Contains(out, []byte(want)) {
						t.Errorf("%q missing from %s", want, out)
					}
				}
			})
		}
	}
}

// A stream exception (throttlingException …) ends the caller's stream
// with an error in its own idiom, of the kind the exception means.
func TestConverse_StreamExceptionIsTheCallersError(t *testing.T) {
	t.Parallel()
	req := minimalRequest(t, wire.InboundMessages, true)
	tr, _ := New(req, converseTarget, testNow)
	evs := converseStream(false)[:2]
	evs = append(evs, wire.Event{Name: []byte("throttlingException"), Data: []byte(`{"message":"Too many tokens, please wait before trying again."}`)})
	var out []byte
	for _, ev := range evs {
		out, _ = tr.AppendEvent(out, ev)
	}
	if !tr.Done() || !tr.Errored() {
		t.Fatal("the exception did not end the stream in error")
	}
	if !bytes.Contains(out, []byte("event: error")) || !bytes.Contains(out, []byte("rate_limit_error")) || !bytes.Contains(out, []byte("Too many tokens")) {
		t.Fatalf("%s", out)
	}
}

// A stream cut before messageStop is broken, not whole.
func TestConverse_StreamCutShortIsNotComplete(t *testing.T) {
	t.Parallel()
	tr, _ := New(minimalRequest(t, wire.InboundChat, true), converseTarget, testNow)
	for _, ev := range converseStream(false)[:3] {
		_, _ = tr.AppendEvent(nil, ev)
	}
	if _, ok := tr.AppendEnd(nil); ok {
		t.Fatal("a stream without messageStop counted as complete")
	}
}

// What a caller receives as a tool call comes back on the next turn as
// the same toolUseId.
func TestConverse_ToolRoundTrip(t *testing.T) {
	t.Parallel()
	for _, in := range []wire.Inbound{wire.InboundChat, wire.InboundMessages, wire.InboundResponses, wire.InboundGenerate} {
		t.Run(in.String(), func(t *testing.T) {
			t.Parallel()
			req := minimalRequest(t, in, false)
			tr, _ := New(req, converseTarget, testNow)
			out, err := tr.AppendResponse(nil, []byte(converseAnswer))
			if err != nil {
				t.Fatal(err)
			}
			id := callIDIn(t, in, out)
			next := converseNextTurn(in, id)
			req2, err := Decode(in, []byte(next))
			if err != nil {
				t.Fatalf("%v: %s", err, next)
			}
			tr2, _ := New(req2, converseTarget, testNow)
			body, err := tr2.AppendRequest(nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(body, []byte(`"toolUseId":"tooluse_abc-123"`)); n != 2 {
				t.Fatalf("toolUseId appears %d times in %s", n, body)
			}
		})
	}
}

// callIDIn finds the tool call id in a caller's whole answer.
func callIDIn(t *testing.T, in wire.Inbound, out []byte) string {
	t.Helper()
	var v struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Content []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"content"`
		Output []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		} `json:"output"`
	}
	_ = json.Unmarshal(out, &v)
	switch in {
	case wire.InboundChat:
		if len(v.Choices) > 0 && len(v.Choices[0].Message.ToolCalls) > 0 {
			return v.Choices[0].Message.ToolCalls[0].ID
		}
	case wire.InboundMessages:
		for _, c := range v.Content {
			if c.Type == "tool_use" {
				return c.ID
			}
		}
	case wire.InboundResponses:
		for _, o := range v.Output {
			if o.Type == "function_call" {
				return o.CallID
			}
		}
	case wire.InboundGenerate:
		for _, c := range v.Content {
			if c.Type == "tool_call" {
				return c.ID
			}
		}
	}
	t.Fatalf("no tool call in %s", out)
	return ""
}

func converseNextTurn(in wire.Inbound, id string) string {
	switch in {
	case wire.InboundMessages:
		return `{"model":"m","max_tokens":64,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"get_weather","input":{"city":"Paris"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"21C"}]}]}`
	case wire.InboundResponses:
		return `{"model":"m","store":false,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],"input":[{"role":"user","content":"hi"},` +
			`{"type":"function_call","call_id":"` + id + `","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
			`{"type":"function_call_output","call_id":"` + id + `","output":"21C"}]}`
	case wire.InboundGenerate:
		return `{"model":"m","tools":[{"name":"get_weather","parameters":{"type":"object"}}],"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"tool_call","id":"` + id + `","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}]},` +
			`{"role":"tool","content":[{"type":"tool_result","tool_call_id":"` + id + `","content":"21C"}]}]}`
	}
	return `{"model":"m","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"` + id + `","content":"21C"}]}`
}

// FuzzConverseAnswer: whatever a bedrock_converse binding answers (a whole
// body, the SSE view of a ConverseStream, an error body) ends in a body,
// a closed stream or a 502, never a panic.
func FuzzConverseAnswer(f *testing.F) {
	var sse []byte
	for _, ev := range converseStream(true) {
		sse = append(sse, "event: "+string(ev.Name)+"\ndata: "+string(ev.Data)+"\n\n"...)
	}
	f.Add(sse)
	f.Add([]byte(converseAnswer))
	f.Add([]byte("event: contentBlockDelta\ndata: {\"contentBlockIndex\":-5,\"delta\":{\"toolUse\":{\"input\":\"x\"}}}\n\nevent: messageStop\ndata: {}\n\n"))
	f.Add([]byte("event: throttlingException\ndata: {\"message\":\"slow\"}\n\n"))
	f.Add([]byte(`{"message":"The security token included in the request is invalid."}`))
	fuzzAnswer(f, wire.ShapeBedrockConverse)
}
