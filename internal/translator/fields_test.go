package translator

import (
	"encoding/json"
	"os"
	"path/filepath"
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
		msgs := append(list("messages"), map[string]any{"role": "assistant", "content": content})
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
