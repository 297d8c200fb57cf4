package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Request bodies that each use one feature, for /v1/generate.
var generateSamples = map[Feature]string{
	FeatSystem:          `"system":"s","messages":[{"role":"user","content":"hi"}]`,
	FeatSystemMid:       `"messages":[{"role":"user","content":"hi"},{"role":"system","content":"s"},{"role":"user","content":"go"}]`,
	FeatSameRoleTurns:   `"messages":[{"role":"user","content":"hi"},{"role":"user","content":"again"}]`,
	FeatImageBase64:     `"messages":[{"role":"user","content":[{"type":"image","media_type":"image/png","data":"` + png1x1 + `"}]}]`,
	FeatImageURL:        `"messages":[{"role":"user","content":[{"type":"image","url":"https://example.com/a.png"}]}]`,
	FeatImageDetail:     `"messages":[{"role":"user","content":[{"type":"image","media_type":"image/png","data":"` + png1x1 + `","detail":"high"}]}]`,
	FeatTools:           `"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","parameters":{"type":"object"}}]`,
	FeatToolStrict:      `"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","strict":true,"parameters":{"type":"object"}}]`,
	FeatToolChoice:      `"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"f"}`,
	FeatParallelOff:     `"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f"}],"parallel_tool_calls":false`,
	FeatToolHistory:     `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_call","id":"call_1","name":"f","arguments":{}}]},{"role":"tool","content":[{"type":"tool_result","tool_call_id":"call_1","content":"ok"}]}],"tools":[{"name":"f"}]`,
	FeatToolResultError: `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_call","id":"call_1","name":"f","arguments":{}}]},{"role":"tool","content":[{"type":"tool_result","tool_call_id":"call_1","content":"boom","is_error":true}]}],"tools":[{"name":"f"}]`,
	FeatToolResultImage: `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_call","id":"call_1","name":"f","arguments":{}}]},{"role":"tool","content":[{"type":"tool_result","tool_call_id":"call_1","content":[{"type":"image","media_type":"image/png","data":"` + png1x1 + `"}]}]}],"tools":[{"name":"f"}]`,
	FeatThinkingHistory: `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","text":"t","signature":"sig","origin":"anthropic"},{"type":"text","text":"yo"}]},{"role":"user","content":"go"}]`,
	FeatReasoning:       `"messages":[{"role":"user","content":"hi"}],"reasoning":{"budget_tokens":2048}`,
	FeatMaxTokens:       `"messages":[{"role":"user","content":"hi"}]`,
	FeatTemperature:     `"messages":[{"role":"user","content":"hi"}],"temperature":0.5`,
	FeatTopP:            `"messages":[{"role":"user","content":"hi"}],"top_p":0.9`,
	FeatTopK:            `"messages":[{"role":"user","content":"hi"}],"top_k":5`,
	FeatStop:            `"messages":[{"role":"user","content":"hi"}],"stop":["x"]`,
	FeatSeed:            `"messages":[{"role":"user","content":"hi"}],"seed":7`,
	FeatPenalties:       `"messages":[{"role":"user","content":"hi"}],"presence_penalty":0.5`,
	FeatJSONObject:      `"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}`,
	FeatJSONSchema:      `"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","name":"a","schema":{"type":"object"}}`,
	FeatMetadata:        `"messages":[{"role":"user","content":"hi"}],"metadata":{"a":"b"}`,
	FeatUser:            `"messages":[{"role":"user","content":"hi"}],"user":"u1"`,
	FeatPrefill:         `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Well,"}]`,
	FeatStreaming:       `"messages":[{"role":"user","content":"hi"}],"stream":true`,
}

// Malformed generate requests are 400s naming the field, in Relay's own
// (OpenAI-style) error shape.
func TestDecodeGenerate_Errors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, body, param string
	}{
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"no messages", `{"model":"m"}`, "messages"},
		{"unknown field", `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":2}`, "n"},
		{"unknown part field", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","x":1}]}]}`, "messages[0].content.x"},
		{"bad role", `{"model":"m","messages":[{"role":"bot","content":"hi"}]}`, "messages[0].role"},
		{"part of another role", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_call","id":"a","name":"f"}]}]}`, "messages[0].content[0].type"},
		{"unknown part type", `{"model":"m","messages":[{"role":"user","content":[{"type":"video"}]}]}`, "messages[0].content[0].type"},
		{"field of another part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","url":"https://x"}]}]}`, "messages[0].content[0].url"},
		{"text without text", `{"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]}`, "messages[0].content[0].text"},
		{"image without data", `{"model":"m","messages":[{"role":"user","content":[{"type":"image"}]}]}`, "messages[0].content[0]"},
		{"image without media type", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","data":"AAAA"}]}]}`, "messages[0].content[0].media_type"},
		{"tool call without id", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_call","name":"f"}]}]}`, "messages[0].content[0].id"},
		{"arguments not an object", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_call","id":"a","name":"f","arguments":[1]}]}]}`, "messages[0].content[0].arguments"},
		{"result without call id", `{"model":"m","messages":[{"role":"tool","content":[{"type":"tool_result","content":"x"}]}]}`, "messages[0].content[0].tool_call_id"},
		{"bad origin", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"thinking","text":"t","origin":"x"}]}]}`, "messages[0].content[0].origin"},
		{"tool choice of no tool", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"tool","name":"f"}}`, "tool_choice.name"},
		{"bad tool choice", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"any"}`, "tool_choice"},
		{"effort and budget", `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning":{"effort":"low","budget_tokens":10}}`, "reasoning.budget_tokens"},
		{"schema missing", `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema"}}`, "response_format.schema"},
		{"zero max", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_output_tokens":0}`, "max_output_tokens"},
		{"wrong type", `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`, "temperature"},
		{"empty stop", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":[""]}`, "stop[0]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode(wire.InboundGenerate, []byte(tt.body))
			var we *wire.Error
			if !errors.As(err, &we) || !errors.Is(err, wire.ErrMalformedRequest) || we.Param != tt.param {
				t.Fatalf("got %v (%+v), want a malformed-request error naming %q", err, we, tt.param)
			}
			body, status := wire.AppendErrorBody(nil, wire.InboundGenerate.Dialect(), err, "req_1")
			var e struct {
				Error struct{ Message, Type, Code string }
			}
			if status != 400 || json.Unmarshal(body, &e) != nil || e.Error.Code != "invalid_request" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tt.param) {
				t.Errorf("error body %d %s", status, body)
			}
		})
	}
}

// Every feature of the shape decodes into the canonical request it stands
// for.
func TestDecodeGenerate_Canonical(t *testing.T) {
	t.Parallel()
	body := `{"model":"m","system":"s","messages":[
		{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","url":"data:image/png;base64,AAAA"}]},
		{"role":"assistant","content":[{"type":"thinking","text":"t","signature":"sig","origin":"anthropic"},{"type":"redacted_thinking","data":"d","origin":"anthropic"},{"type":"tool_call","id":"c1","name":"f","arguments":{"a": 1}}]},
		{"role":"tool","content":[{"type":"tool_result","tool_call_id":"c1","content":"ok","is_error":true}]}],
		"tools":[{"name":"f","parameters":{"type":"object"},"strict":true}],"tool_choice":"required","parallel_tool_calls":false,
		"max_output_tokens":10,"temperature":0.5,"top_p":0.9,"top_k":3,"seed":1,"stop":["x"],
		"response_format":{"type":"json_object"},"reasoning":{"effort":"low"},"metadata":{"k":"v"},"user":"u","stream":true}`
	req, err := Decode(wire.InboundGenerate, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c := &req.C
	switch {
	case c.Model != "m" || canonical.TextOf(c.System, "") != "s" || len(c.Messages) != 3:
		t.Errorf("model, system, messages: %+v", c)
	case c.Messages[0].Parts[1].Image.MediaType != "image/png" || c.Messages[0].Parts[1].Image.Data != "AAAA":
		t.Errorf("data URL image: %+v", c.Messages[0].Parts[1].Image)
	case c.Messages[1].Parts[0].Origin != canonical.OriginAnthropic || c.Messages[1].Parts[1].Signature != "d" || c.Messages[1].Parts[2].ToolCall.Arguments != `{"a":1}`:
		t.Errorf("assistant parts: %+v", c.Messages[1].Parts)
	case !c.Messages[2].Parts[0].ToolResult.IsError || canonical.TextOf(c.Messages[2].Parts[0].ToolResult.Content, "") != "ok":
		t.Errorf("tool result: %+v", c.Messages[2].Parts[0].ToolResult)
	case c.ToolChoice.Mode != canonical.ToolChoiceRequired || *c.ParallelToolCalls || *c.MaxOutputTokens != 10 || *c.TopK != 3 || c.Stop[0] != "x":
		t.Errorf("request fields: %+v", c)
	case c.ResponseFormat.Type != canonical.FormatJSONObject || c.Reasoning.Effort != "low" || c.Metadata["k"] != "v" || c.User != "u" || !c.Stream:
		t.Errorf("request fields: %+v", c)
	}
}

// X-Relay-Usage: full puts the cost, in nano-units, into the usage of the
// body and of the end event; without it there is none.
func TestGenerate_FullUsageCost(t *testing.T) {
	t.Parallel()
	price := &snapshot.Pricing{Input: 2_500_000, Output: 10_000_000, Reasoning: 10_000_000}
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`)
	for _, full := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			body := `{"model":"m","messages":[{"role":"user","content":"hi"}]` + map[bool]string{true: `,"stream":true}`, false: `}`}[stream]
			req, err := Decode(wire.InboundGenerate, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			req.FullUsage = full
			tr, _ := New(req, Target{Shape: wire.ShapeOpenAI, UpstreamModel: "gpt", Pricing: price}, testNow)
			out, err := tr.AppendResponse(nil, answer)
			if err != nil {
				t.Fatal(err)
			}
			has := bytes.Contains(out, []byte(`"cost_nanos":7500000}`))
			if has != full || full && bytes.Count(out, []byte("cost_nanos")) != 1 {
				t.Errorf("full %v stream %v: %s", full, stream, out)
			}
		}
	}
}

// genAnswer is a generate response as a client reads it.
type genAnswer struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Created int64  `json:"created"`
	Content []struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
		Origin    string `json:"origin"`
	} `json:"content"`
	FinishReason string         `json:"finish_reason"`
	StopSequence string         `json:"stop_sequence"`
	Usage        map[string]any `json:"usage"`
}

// accumulateGenerate folds a generate stream into the body a
// non-streaming call would have returned, checking the event grammar: one
// start; parts opened before their deltas and closed once; one terminal
// end or error, last.
func accumulateGenerate(t *testing.T, out []byte) (genAnswer, map[string]any) {
	t.Helper()
	var a genAnswer
	var errEv map[string]any
	open := map[int]int{} // index → position in Content
	closed := map[int]bool{}
	evs := sseEvents(t, out)
	for i, ev := range evs {
		var d map[string]any
		if err := json.Unmarshal([]byte(ev[1]), &d); err != nil {
			t.Fatalf("event %d not JSON: %s", i, ev[1])
		}
		if d["type"] != ev[0] {
			t.Errorf("event %q carries type %v", ev[0], d["type"])
		}
		if i > 0 && ev[0] == "start" || i == 0 && ev[0] != "start" && ev[0] != "error" {
			t.Errorf("start is not first: %v", evs)
		}
		if (ev[0] == "end" || ev[0] == "error") && i != len(evs)-1 {
			t.Errorf("%s is not last", ev[0])
		}
		idx := -1
		if f, ok := d["index"].(float64); ok {
			idx = int(f)
		}
		switch ev[0] {
		case "start":
			if err := json.Unmarshal([]byte(ev[1]), &a); err != nil {
				t.Fatal(err)
			}
		case "part_start":
			if _, dup := open[idx]; dup {
				t.Errorf("part %d started twice", idx)
			}
			var ps struct {
				Part json.RawMessage `json:"part"`
			}
			_ = json.Unmarshal([]byte(ev[1]), &ps)
			var one genAnswer
			_ = json.Unmarshal([]byte(`{"content":[`+string(ps.Part)+`]}`), &one)
			open[idx] = len(a.Content)
			a.Content = append(a.Content, one.Content...)
		case "delta":
			at, ok := open[idx]
			if !ok || closed[idx] {
				t.Fatalf("delta for part %d that is not open", idx)
			}
			p := &a.Content[at]
			if s, ok := d["text"].(string); ok {
				p.Text += s
			}
			if s, ok := d["arguments"].(string); ok {
				p.Arguments += s
			}
			if s, ok := d["signature"].(string); ok {
				p.Signature += s
			}
		case "part_end":
			if _, ok := open[idx]; !ok || closed[idx] {
				t.Errorf("part_end for part %d that is not open", idx)
			}
			closed[idx] = true
		case "end":
			var e genAnswer
			_ = json.Unmarshal([]byte(ev[1]), &e)
			a.FinishReason, a.StopSequence, a.Usage = e.FinishReason, e.StopSequence, e.Usage
			for k := range open {
				if !closed[k] {
					t.Errorf("part %d never ended", k)
				}
			}
		case "error":
			errEv = d
		default:
			t.Errorf("unknown event %q", ev[0])
		}
	}
	if len(evs) == 0 || evs[len(evs)-1][0] != "end" && evs[len(evs)-1][0] != "error" {
		t.Errorf("the stream does not end with end or error")
	}
	return a, errEv
}

func validateGenerate(t *testing.T, stream bool, out []byte) {
	t.Helper()
	if stream {
		a, errEv := accumulateGenerate(t, out)
		if errEv != nil {
			e, _ := errEv["error"].(map[string]any)
			if e == nil || e["message"] == "" || e["type"] == "" || e["code"] == "" {
				t.Errorf("error event %v", errEv)
			}
			return
		}
		if a.FinishReason == "" || a.Usage == nil {
			t.Errorf("end without finish_reason or usage: %s", out)
		}
		return
	}
	var a genAnswer
	if err := json.Unmarshal(out, &a); err != nil || a.Object != "generation" || a.FinishReason == "" || a.Usage == nil {
		t.Errorf("not a generation (%v): %s", err, out)
	}
}

// A stream, accumulated, is the body the same answer gives whole.
func TestGenerate_StreamAccumulatesToBody(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"generate_openai/parallel_tools_stream", "generate_anthropic/thinking_stream", "generate_gemini/parallel_tools_stream", "generate_responses/tool_results_stream"} {
		p := pairByDir(strings.Split(dir, "/")[0])
		body := readFile(t, "testdata/golden/"+dir+"/request.json")
		answer := readFile(t, "testdata/golden/"+dir+"/upstream.body")
		sreq, err := Decode(wire.InboundGenerate, body)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := translateAnswer(t, p, sreq, caseMeta{}, 200, answer)
		got, _ := accumulateGenerate(t, out)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		delete(m, "stream")
		b, _ := json.Marshal(m)
		req, _ := Decode(wire.InboundGenerate, b)
		whole, _ := translateAnswer(t, p, req, caseMeta{}, 200, answer)
		_, whole, _ = bytes.Cut(whole, []byte("\n")) // "HTTP 200"
		var want genAnswer
		if err := json.Unmarshal(whole, &want); err != nil {
			t.Fatalf("%s: %v %s", dir, err, whole)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Errorf("%s:\nstream %s\nbody   %s", dir, g, w)
		}
	}
}
