package translator

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

// The field policy: advisory fields are accepted, left out of the upstream
// request and named; the classes agree with the matrix; and every answer
// Relay gives, pushed back as the next turn, is accepted again.

func TestFieldPolicy_ConsistentWithMatrix(t *testing.T) {
	t.Parallel()
	for _, c := range Matrix() {
		switch cl := c.Feature.Class(); {
		case cl == Advisory && c.Support == Rejected:
			t.Errorf("%s %s: advisory, yet rejected", c.Pair, c.Feature)
		case cl != Advisory && c.Support == Dropped:
			t.Errorf("%s %s: %s, yet dropped", c.Pair, c.Feature, cl)
		case cl == Carried && c.Support == Rejected:
			t.Errorf("%s %s: carried, yet rejected", c.Pair, c.Feature)
		}
	}
}

// advisorySamples uses each advisory field of advisoryFields, with a
// marker the upstream request must not hold.
var advisorySamples = map[wire.Inbound]map[string]string{
	wire.InboundChat: {
		"messages[].annotations":                            `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","refusal":null,"annotations":[{"type":"url_citation","url_citation":{"url":"https://MARKER.example","title":"t","start_index":0,"end_index":1}}]},{"role":"user","content":"go"}]}`,
		"prompt_cache_retention":                            `{"model":"m","messages":[{"role":"user","content":"hi"}],"prompt_cache_retention":"MARKER"}`,
		"messages[].parsed":                                 `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"{\"a\":1}","refusal":null,"parsed":{"a":"MARKER"}},{"role":"user","content":"go"}]}`,
		"messages[].tool_calls[].function.parsed_arguments": `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}","parsed_arguments":{"x":"MARKER"}}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"},{"role":"user","content":"go"}]}`,
	},
	wire.InboundMessages: {
		"context_management":             `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"context_management":{"edits":[{"type":"MARKER"}]}}`,
		"messages[].content[].citations": `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"yo","citations":[{"type":"char_location","cited_text":"MARKER"}]}]},{"role":"user","content":"go"}]}`,
		"tools[].defer_loading":          `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"},"defer_loading":true}]}`,
		"tools[].eager_input_streaming":  `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"},"eager_input_streaming":true}]}`,
	},
	wire.InboundResponses: {
		"client_metadata":               `{"model":"m","input":"hi","client_metadata":{"x-codex-installation-id":"MARKER"}}`,
		"prompt_cache_retention":        `{"model":"m","input":"hi","prompt_cache_retention":"MARKER"}`,
		"include":                       `{"model":"m","input":"hi","include":["reasoning.encrypted_content","MARKER.output_text.logprobs"]}`,
		"input[].content[].annotations": `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"yo","annotations":[{"type":"url_citation","url":"https://MARKER.example"}]}]},{"role":"user","content":"go"}]}`,
		"input[].content[].logprobs":    `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"yo","logprobs":[{"token":"MARKER","logprob":-1,"bytes":[],"top_logprobs":[]}]}]},{"role":"user","content":"go"}]}`,
		"input[].content[].parsed":      `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"{}","annotations":[],"parsed":{"a":"MARKER"}}]},{"role":"user","content":"go"}]}`,
		"input[].parsed_arguments":      `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}","parsed_arguments":{"x":"MARKER"}},{"type":"function_call_output","call_id":"call_1","output":"ok"},{"role":"user","content":"go"}]}`,
		"tools[].type=web_search":       `{"model":"m","input":"hi","tools":[{"type":"web_search","external_web_access":false,"filters":{"allowed_domains":["MARKER.example"]}}]}`,
	},
}

func TestFieldPolicy_AdvisoryDroppedAndNamed(t *testing.T) {
	t.Parallel()
	for in, fields := range advisoryFields {
		if len(fields) != len(advisorySamples[in]) {
			t.Errorf("%s: %d advisory fields, %d samples", in, len(fields), len(advisorySamples[in]))
		}
		for _, fld := range fields {
			body, ok := advisorySamples[in][fld.path]
			if !ok {
				t.Errorf("%s: no sample for %s", in, fld.path)
				continue
			}
			req, err := Decode(in, []byte(body))
			if err != nil {
				t.Errorf("%s %s: decode: %v", in, fld.path, err)
				continue
			}
			for _, p := range pairs {
				if p.in != in {
					continue
				}
				tr, _ := New(req, Target{Shape: p.up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
				out, err := tr.AppendRequest(nil)
				if err != nil {
					t.Errorf("%s %s: %v", p.name, fld.path, err)
					continue
				}
				if !strings.Contains(","+tr.Dropped()+",", ","+fld.path+",") {
					t.Errorf("%s %s: dropped %q", p.name, fld.path, tr.Dropped())
				}
				mark := "MARKER"
				if !strings.Contains(body, mark) {
					mark = fld.path[strings.LastIndexByte(fld.path, '.')+1:] // a boolean hint: its name
				}
				if strings.Contains(string(out), mark) {
					t.Errorf("%s %s: the upstream request holds the field: %s", p.name, fld.path, out)
				}
			}
		}
	}
}

// A dropped matrix feature is named; a request without advisory fields
// names none.
func TestFieldPolicy_DroppedFeaturesNamed(t *testing.T) {
	t.Parallel()
	for _, c := range Matrix() {
		p := pairByDir(strings.ReplaceAll(c.Pair, "→", "_"))
		body, ok := sampleBody(p.in, c.Feature)
		if !ok || c.Support == NotApplicable {
			continue
		}
		req, err := Decode(p.in, []byte(body))
		if err != nil {
			t.Fatalf("%s %s: %v", c.Pair, c.Feature, err)
		}
		tr, _ := New(req, Target{Shape: p.up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
		if _, err := tr.AppendRequest(nil); err != nil {
			continue
		}
		named := strings.Contains(","+tr.Dropped()+",", ","+fieldName(c.Feature.Field(p.in))+",")
		if named != (c.Support == Dropped) {
			t.Errorf("%s %s (%s): dropped %q", c.Pair, c.Feature, c.Support, tr.Dropped())
		}
	}
}

// Service tiers the target has no word for are dropped and named, not
// refused.
func TestFieldPolicy_ForeignServiceTierDropped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pair *pairSpec
		body string
	}{
		{&responsesAnthropic, `{"model":"m","input":"hi","service_tier":"flex"}`},
		{&messagesOpenAI, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"service_tier":"batch"}`},
		{&responsesGemini, `{"model":"m","input":"hi","service_tier":"priority"}`},
	} {
		req, err := Decode(tc.pair.in, []byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		tr, _ := New(req, Target{Shape: tc.pair.up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
		out, err := tr.AppendRequest(nil)
		if err != nil || tr.Dropped() != "service_tier" || strings.Contains(string(out), "service_tier") {
			t.Errorf("%s: %v, dropped %q, %s", tc.pair.name, err, tr.Dropped(), out)
		}
	}
}

// --- Relay accepts what it emits ---

// nextTurn builds the caller's next request from a request and the whole
// answer Relay gave to it: the answer pushed back as the caller's SDK
// does, every tool call answered, and one more user message.
func nextTurn(t *testing.T, in wire.Inbound, request, answer []byte) []byte {
	t.Helper()
	var req map[string]any
	if err := json.Unmarshal(request, &req); err != nil {
		t.Fatal(err)
	}
	var ans map[string]any
	if err := json.Unmarshal(answer, &ans); err != nil {
		t.Fatal(err)
	}
	list := func(key string) []any {
		switch v := req[key].(type) {
		case []any:
			return v
		case string:
			return []any{map[string]any{"role": "user", "content": v}}
		}
		return nil
	}
	switch in {
	case wire.InboundChat:
		msg := ans["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		msgs := append(list("messages"), msg)
		calls, _ := msg["tool_calls"].([]any)
		for _, c := range calls {
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": c.(map[string]any)["id"], "content": "ok"})
		}
		req["messages"] = append(msgs, map[string]any{"role": "user", "content": "next"})
	case wire.InboundMessages:
		content := ans["content"].([]any)
		next := []any{}
		for _, b := range content {
			if b := b.(map[string]any); b["type"] == "tool_use" {
				next = append(next, map[string]any{"type": "tool_result", "tool_use_id": b["id"], "content": "ok"})
			}
		}
		next = append(next, map[string]any{"type": "text", "text": "next"})
		req["messages"] = append(list("messages"), map[string]any{"role": "assistant", "content": content}, map[string]any{"role": "user", "content": next})
	case wire.InboundResponses:
		items := list("input")
		for _, it := range ans["output"].([]any) {
			items = append(items, it)
			if it := it.(map[string]any); it["type"] == "function_call" {
				items = append(items, map[string]any{"type": "function_call_output", "call_id": it["call_id"], "output": "ok"})
			}
		}
		req["input"] = append(items, map[string]any{"role": "user", "content": "next"})
	case wire.InboundGenerate:
		content := ans["content"].([]any)
		msgs := list("messages")
		if len(content) > 0 { // a completion the content filter emptied leaves no turn to push back
			msgs = append(msgs, map[string]any{"role": "assistant", "content": content})
		}
		var results []any
		for _, p := range content {
			if p := p.(map[string]any); p["type"] == "tool_call" {
				results = append(results, map[string]any{"type": "tool_result", "tool_call_id": p["id"], "content": "ok"})
			}
		}
		if len(results) > 0 {
			msgs = append(msgs, map[string]any{"role": "tool", "content": results})
		}
		req["messages"] = append(msgs, map[string]any{"role": "user", "content": "next"})
	}
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every whole answer in the golden cases, pushed back as the next turn, is
// accepted by every pair of its caller's shape that accepted the request
// it answered — and names no dropped field the request did not.
func TestFieldPolicy_AcceptsWhatItEmits(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*", "*", "response.golden"))
	checked := map[wire.Inbound]int{}
	for _, f := range files {
		answer, _ := os.ReadFile(f)
		if len(answer) == 0 || answer[0] != '{' {
			continue // a stream or an error
		}
		dir := filepath.Dir(f)
		p := pairByDir(filepath.Base(filepath.Dir(dir)))
		if p == nil || p.in == wire.InboundGemini {
			continue // Gemini callers' answers are pushed back in gemini_caller_test.go
		}
		request, err := os.ReadFile(filepath.Join(dir, "request.json"))
		if err != nil {
			t.Fatal(err)
		}
		next := nextTurn(t, p.in, request, answer)
		for _, q := range pairs {
			if q.in != p.in {
				continue
			}
			target := Target{Shape: q.up, Model: "m", UpstreamModel: "u", Host: "h"}
			first, err := Decode(q.in, request)
			if err != nil {
				continue
			}
			tr, _ := New(first, target, testNow)
			if _, err := tr.AppendRequest(nil); err != nil {
				continue // the request itself cannot go this way
			}
			req, err := Decode(q.in, next)
			if err != nil {
				t.Errorf("%s answered by %s, pushed back: decode: %v\n%s", dir, p.name, err, next)
				continue
			}
			tr2, _ := New(req, target, testNow)
			if _, err := tr2.AppendRequest(nil); err != nil {
				t.Errorf("%s answered by %s, pushed back through %s: %v", dir, p.name, q.name, err)
			}
			if tr2.Dropped() != tr.Dropped() {
				t.Errorf("%s through %s: the pushed-back answer drops %q (the request %q)", dir, q.name, tr2.Dropped(), tr.Dropped())
			}
			checked[q.in]++
		}
	}
	for _, in := range []wire.Inbound{wire.InboundChat, wire.InboundMessages, wire.InboundResponses, wire.InboundGenerate} {
		if checked[in] < 20 {
			t.Errorf("%s: only %d answers pushed back", in, checked[in])
		}
	}
}

// What Claude Code and Codex send (shapes from captured traffic) goes
// through every pair of their shapes: the system turn translated, the
// namespace's tools offered, the hints dropped and named.
func TestFieldPolicy_AgentRequests(t *testing.T) {
	t.Parallel()
	claudeCode := `{"model":"m","max_tokens":32000,"stream":true,
	"metadata":{"user_id":"{\"device_id\":\"d1\"}"},
	"system":[{"type":"text","text":"billing"},{"type":"text","text":"You are a Claude agent.","cache_control":{"type":"ephemeral"}}],
	"messages":[{"role":"user","content":[{"type":"text","text":"Say hello.","cache_control":{"type":"ephemeral"}}]},
		{"role":"system","content":[{"type":"text","text":"ENVIRONMENT"}]}],
	"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"name":"Later","input_schema":{"type":"object"},"defer_loading":true}],
	"thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"high"},
	"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}}`
	codex := `{"model":"m","stream":true,"store":false,"tool_choice":"auto","parallel_tool_calls":true,"instructions":"You are Codex.",
	"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"perms"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},
		{"type":"function_call","status":"completed","id":"fc_1","name":"exec_command","arguments":"{}","call_id":"call_1"},
		{"type":"function_call_output","id":"fco_1","call_id":"call_1","output":"ok"}],
	"tools":[{"type":"function","name":"exec_command","strict":false,"parameters":{"type":"object"}},
		{"type":"namespace","name":"multi_agent_v1","description":"d","tools":[{"type":"function","name":"close_agent","strict":false,"parameters":{"type":"object"}}]},
		{"type":"web_search","external_web_access":false}],
	"reasoning":{"summary":"auto"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"k","client_metadata":{"turn_id":"t1"}}`
	for _, tc := range []struct {
		in      wire.Inbound
		body    string
		want    []string // in the upstream body
		dropped []string
	}{
		{wire.InboundMessages, claudeCode, []string{"ENVIRONMENT", "Bash", "Later"}, []string{"context_management", "tools[].defer_loading"}},
		{wire.InboundResponses, codex, []string{"close_agent", "exec_command", "perms"}, []string{"client_metadata", "tools[].type=web_search"}},
	} {
		req, err := Decode(tc.in, []byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		for _, p := range pairs {
			if p.in != tc.in {
				continue
			}
			tr, _ := New(req, Target{Shape: p.up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
			out, err := tr.AppendRequest(nil)
			if err != nil {
				t.Errorf("%s: %v", p.name, err)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s: the upstream request lacks %s: %s", p.name, w, out)
				}
			}
			for _, d := range tc.dropped {
				if !strings.Contains(","+tr.Dropped()+",", ","+d+",") {
					t.Errorf("%s: dropped %q, want %s", p.name, tr.Dropped(), d)
				}
			}
			if p.up == "gemini" && tc.in == wire.InboundResponses && !strings.Contains(string(out), `"thinkingConfig":{"includeThoughts":true}`) {
				t.Errorf("%s: a summary without an effort: %s", p.name, out)
			}
		}
	}
}

// Strict mode refuses, on every pair, each field the matrix drops and each
// advisory field outside it, naming where the caller sent it; without it
// the same request goes through.
func TestFieldPolicy_StrictRefusesWhatWouldBeDropped(t *testing.T) {
	t.Parallel()
	type sample struct {
		p          *pairSpec
		what, body string
	}
	var samples []sample
	for _, c := range Matrix() {
		p := pairByDir(strings.ReplaceAll(c.Pair, "→", "_"))
		if body, ok := sampleBody(p.in, c.Feature); ok && c.Support == Dropped {
			samples = append(samples, sample{p, c.Feature.String(), body})
		}
	}
	for in, bodies := range advisorySamples {
		for path, body := range bodies {
			for _, p := range pairs {
				if p.in == in {
					samples = append(samples, sample{p, path, body})
				}
			}
		}
	}
	for _, s := range samples {
		req, err := Decode(s.p.in, []byte(s.body))
		if err != nil {
			t.Fatalf("%s %s: %v", s.p.name, s.what, err)
		}
		tr, _ := New(req, Target{Shape: s.p.up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
		if _, err := tr.AppendRequest(nil); err != nil || tr.Dropped() == "" {
			t.Errorf("%s %s, not strict: %v, dropped %q", s.p.name, s.what, err, tr.Dropped())
			continue
		}
		req.Strict = true
		tr, _ = New(req, Target{Shape: s.p.up, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
		_, err = tr.AppendRequest(nil)
		var we *wire.Error
		if !errors.As(err, &we) || !errors.Is(err, wire.ErrUnsupportedFeature) || we.Param == "" || strings.Contains(we.Param, "[]") {
			t.Errorf("%s %s, strict: want a 400 naming the field's place, got %v", s.p.name, s.what, err)
		}
	}
}

// What popular clients send by default: each hint is carried where the
// binding can carry it and otherwise dropped and named; strict mode names
// the place.
func TestFieldPolicy_ClientDefaults(t *testing.T) {
	t.Parallel()
	const (
		aiSDK  = `{"model":"m","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"weather?"}]}],"tools":[{"name":"weather","input_schema":{"type":"object"},"eager_input_streaming":true}]}`
		gemCLI = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0,"topP":1,"topK":64}}`
		// opencode marks the pushed-back tool call of a Claude model too.
		opencodeCall = `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"},"cache_control":{"type":"ephemeral"}}]},{"role":"tool","tool_call_id":"call_1","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
		opencode     = `{"model":"m","messages":[{"role":"system","content":"sys","cache_control":{"type":"ephemeral"}},{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c"},{"type":"text","text":"d"}],"cache_control":{"type":"ephemeral"}}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}},"cache_control":{"type":"ephemeral"}}]}`
	)
	for _, tc := range []struct {
		p               *pairSpec
		body            string
		dropped, sentAt string   // "" dropped: carried
		upstream        []string // what the upstream body holds
	}{
		{&messagesOpenAI, aiSDK, "tools[].eager_input_streaming", "tools[0].eager_input_streaming", nil},
		{&messagesGemini, aiSDK, "tools[].eager_input_streaming", "tools[0].eager_input_streaming", nil},
		{&messagesResponses, aiSDK, "tools[].eager_input_streaming", "tools[0].eager_input_streaming", nil},
		{&geminiOpenAI, gemCLI, "generationConfig.topK", "generationConfig.topK", nil},
		{&geminiResponses, gemCLI, "generationConfig.topK", "generationConfig.topK", nil},
		{&geminiAnthropic, gemCLI, "", "", []string{`"top_k":64`}},
		{&chatAnthropic, opencode, "", "", []string{
			`"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}]`,
			`{"type":"text","text":"a"}]`,
			`[{"type":"text","text":"c"},{"type":"text","text":"d","cache_control":{"type":"ephemeral"}}]`,
			`"input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}`,
		}},
		{&chatGemini, opencode, "cache_control", "messages[0].cache_control", nil},
		{&chatResponses, opencode, "cache_control", "messages[0].cache_control", nil},
		{&chatAnthropic, opencodeCall, "", "", []string{`"type":"tool_use"`, `"cache_control":{"type":"ephemeral"}`}},
		{&chatGemini, opencodeCall, "cache_control", "messages[1].tool_calls[0].cache_control", nil},
		{&chatResponses, opencodeCall, "cache_control", "messages[1].tool_calls[0].cache_control", nil},
	} {
		req, err := Decode(tc.p.in, []byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.p.name, err)
		}
		target := Target{Shape: tc.p.up, Model: "m", UpstreamModel: "u", Host: "h"}
		tr, _ := New(req, target, testNow)
		out, err := tr.AppendRequest(nil)
		if err != nil || tr.Dropped() != tc.dropped {
			t.Errorf("%s: %v, dropped %q, want %q", tc.p.name, err, tr.Dropped(), tc.dropped)
		}
		for _, w := range tc.upstream {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: the upstream body lacks %s: %s", tc.p.name, w, out)
			}
		}
		if tc.dropped != "" && strings.Contains(string(out), tc.dropped[strings.LastIndexByte(tc.dropped, '.')+1:]) {
			t.Errorf("%s: the upstream body holds %s: %s", tc.p.name, tc.dropped, out)
		}
		strict := *req
		strict.Strict = true
		tr, _ = New(&strict, target, testNow)
		_, err = tr.AppendRequest(nil)
		var we *wire.Error
		switch {
		case tc.sentAt == "" && err != nil:
			t.Errorf("%s strict: carried, yet %v", tc.p.name, err)
		case tc.sentAt != "" && (!errors.As(err, &we) || we.Param != tc.sentAt):
			t.Errorf("%s strict: want param %q, got %v", tc.p.name, tc.sentAt, err)
		}
	}
}

// A field no decoder knows is refused under its whole path in the body.
func TestDecode_UnknownFieldNamesItsPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in         wire.Inbound
		body, want string
	}{
		{wire.InboundMessages, `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"a","input_schema":{}},{"name":"b","input_schema":{},"x_hint":1}]}`, "tools[1].x_hint"},
		{wire.InboundChat, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":"yo","x_hint":1}]}`, "messages[1].x_hint"},
		{wire.InboundChat, `{"model":"m","x_hint":1,"messages":[{"role":"user","content":"hi"}]}`, "x_hint"},
		{wire.InboundResponses, `{"model":"m","input":"hi","text":{"x_hint":1}}`, "text.x_hint"},
	} {
		_, err := Decode(tc.in, []byte(tc.body))
		var we *wire.Error
		if !errors.As(err, &we) || we.Param != tc.want || !strings.Contains(we.Msg, `"`+tc.want+`"`) {
			t.Errorf("%s: want param %q, got %v", tc.body, tc.want, err)
		}
	}
}

// unknownPath ends its path with the field it was asked for, and finds
// nothing in a body the type knows whole.
func FuzzUnknownPath(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi","x":1}]}`), "x")
	f.Add([]byte(`{"model":"m","tools":[{"type":"function","function":{"name":"f","x":[]}}]}`), "x")
	f.Add([]byte(`[]`), "")
	f.Fuzz(func(t *testing.T, body []byte, field string) {
		path, ok := unknownPath(body, reflect.TypeFor[*chatRequest](), field)
		if ok && !strings.HasSuffix(path, field) {
			t.Errorf("path %q for field %q", path, field)
		}
	})
}

// A Messages caller's cache breakpoints, refused in strict mode, are named
// where they were sent: the system first, then the messages.
func TestFieldPolicy_StrictNamesMessagesCacheControl(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"model":"m","max_tokens":10,"system":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`:                            "system[1].cache_control",
		`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":[{"type":"text","text":"go","cache_control":{"type":"ephemeral"}}]}]}`: "messages[2].content[0].cache_control",
		`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]}`:                                     "tools[0].cache_control",
	} {
		req, err := Decode(wire.InboundMessages, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Strict = true
		tr, _ := New(req, Target{Shape: wire.ShapeGemini, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
		_, err = tr.AppendRequest(nil)
		var we *wire.Error
		if !errors.As(err, &we) || we.Param != want {
			t.Errorf("%s: want param %q, got %v", body, want, err)
		}
	}
}
