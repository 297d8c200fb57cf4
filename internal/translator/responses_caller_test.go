package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/relay-llm/relay/internal/canonical"
)

// validateResponses checks what a Responses caller receives with openai-go's
// types: a body is a Response; a stream is the full event sequence —
// consecutive sequence numbers, every event named as its type, item ids and
// output and content indices consistent, each .done repeating exactly what
// its deltas said, a terminal event whose output is what the events built —
// and openai-go's ResponseAccumulator takes every event.
func validateResponses(t *testing.T, stream bool, out []byte) {
	t.Helper()
	if !stream {
		var r responses.Response
		if err := json.Unmarshal(out, &r); err != nil || r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") {
			t.Fatalf("not a response (%v): %s", err, out)
		}
		checkOutputItems(t, r.Output)
		if r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
			t.Errorf("usage %s", r.Usage.RawJSON())
		}
		return
	}
	evs := sseEvents(t, out)
	if len(evs) == 0 {
		t.Fatal("empty stream")
	}
	var acc responses.ResponseAccumulator
	type itemState struct {
		id, typ    string
		text, args strings.Builder
		done       bool
	}
	items := map[int64]*itemState{}
	var terminal *responses.Response
	var respID string
	errored := false
	for i, ev := range evs {
		var head struct {
			Type     string `json:"type"`
			Seq      *int64 `json:"sequence_number"`
			ItemID   string `json:"item_id"`
			Output   *int64 `json:"output_index"`
			Content  *int64 `json:"content_index"`
			Delta    string `json:"delta"`
			Text     string `json:"text"`
			Args     string `json:"arguments"`
			Refusal  string `json:"refusal"`
			Response *struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &head); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, ev[1])
		}
		if head.Type != ev[0] || head.Seq == nil || *head.Seq != int64(i) {
			t.Fatalf("event %d: name %q, type %q, sequence_number %v", i, ev[0], head.Type, head.Seq)
		}
		if terminal != nil || errored && head.Type != "response.failed" {
			t.Fatalf("event after the end: %s", ev[1])
		}
		var typed responses.ResponseStreamEventUnion
		if err := json.Unmarshal([]byte(ev[1]), &typed); err != nil {
			t.Fatalf("event %d does not decode: %v", i, err)
		}
		var server responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev[1]), &server); err != nil {
			t.Fatalf("event %d does not decode: %v", i, err)
		}
		if err := acc.AddEvent(server); err != nil && !(head.Type == "error" && errors.As(err, new(*responses.ResponseProtocolError))) {
			t.Fatalf("the accumulator refused event %d: %v: %s", i, err, ev[1])
		}
		if head.Response != nil {
			if respID == "" {
				respID = head.Response.ID
			}
			if head.Response.ID != respID || !strings.HasPrefix(respID, "resp_") {
				t.Errorf("response id %q, then %q", respID, head.Response.ID)
			}
		}
		it := (*itemState)(nil)
		if head.Output != nil && head.Type != "response.output_item.added" {
			it = items[*head.Output]
			if it == nil || head.ItemID != "" && head.ItemID != it.id || it.done {
				t.Fatalf("event %d names an item that is not open: %s", i, ev[1])
			}
			if head.Content != nil && *head.Content != 0 {
				t.Errorf("content_index %d", *head.Content)
			}
		}
		switch head.Type {
		case "response.created", "response.in_progress":
			if i > 1 {
				t.Errorf("%s at %d", head.Type, i)
			}
		case "response.output_item.added":
			e := typed.AsResponseOutputItemAdded()
			if _, dup := items[e.OutputIndex]; dup || e.OutputIndex != int64(len(items)) {
				t.Fatalf("output_index %d after %d items", e.OutputIndex, len(items))
			}
			items[e.OutputIndex] = &itemState{id: e.Item.ID, typ: e.Item.Type}
			checkItemID(t, e.Item.Type, e.Item.ID)
		case "response.output_text.delta", "response.refusal.delta", "response.reasoning_summary_text.delta":
			it.text.WriteString(head.Delta)
		case "response.function_call_arguments.delta":
			it.args.WriteString(head.Delta)
		case "response.output_text.done", "response.reasoning_summary_text.done":
			if head.Text != it.text.String() {
				t.Errorf("%s %q, deltas %q", head.Type, head.Text, it.text.String())
			}
		case "response.refusal.done":
			if head.Refusal != it.text.String() {
				t.Errorf("refusal.done %q, deltas %q", head.Refusal, it.text.String())
			}
		case "response.function_call_arguments.done":
			if head.Args != it.args.String() || !json.Valid([]byte(head.Args)) {
				t.Errorf("arguments.done %q, deltas %q", head.Args, it.args.String())
			}
		case "response.output_item.done":
			e := typed.AsResponseOutputItemDone()
			it.done = true
			switch e.Item.Type {
			case "message":
				if len(e.Item.Content) != 1 {
					t.Fatalf("message item %s", e.Item.RawJSON())
				}
				if c := e.Item.Content[0]; c.Text+c.Refusal != it.text.String() {
					t.Errorf("item text %q, deltas %q", c.Text+c.Refusal, it.text.String())
				}
			case "function_call":
				if e.Item.Arguments.OfString != it.args.String() {
					t.Errorf("item arguments %q, deltas %q", e.Item.Arguments.OfString, it.args.String())
				}
			}
		case "response.completed", "response.incomplete", "response.failed":
			r := typed.Response
			terminal = &r
			if want := map[string]string{"response.completed": "completed", "response.incomplete": "incomplete", "response.failed": "failed"}[head.Type]; string(r.Status) != want {
				t.Errorf("%s with status %s", head.Type, r.Status)
			}
		case "error":
			errored = true
		}
	}
	if terminal == nil {
		if !errored || respID != "" {
			t.Fatalf("the stream has no terminal event: %s", evs[len(evs)-1][1])
		}
		return
	}
	for idx, it := range items {
		if !it.done && terminal.Status != "failed" {
			t.Errorf("item %d never done", idx)
		}
	}
	checkOutputItems(t, terminal.Output)
	if terminal.Status != "failed" {
		if len(terminal.Output) != len(items) {
			t.Errorf("terminal output has %d items, the stream %d", len(terminal.Output), len(items))
		}
		for i, it := range terminal.Output {
			if items[int64(i)] == nil || it.ID != items[int64(i)].id {
				t.Errorf("terminal output[%d] is %s, not the item of that output_index", i, it.ID)
			}
		}
		snap := acc.Snapshot()
		if snap.OutputText() != terminal.OutputText() {
			t.Errorf("accumulated %q, terminal %q", snap.OutputText(), terminal.OutputText())
		}
		rebuilt, err := acc.ReconstructedResponse()
		if err != nil || rebuilt.ID != terminal.ID {
			t.Errorf("reconstructed: %v", err)
		}
		if terminal.Usage.TotalTokens != terminal.Usage.InputTokens+terminal.Usage.OutputTokens {
			t.Errorf("usage %s", terminal.Usage.RawJSON())
		}
	}
}

func checkItemID(t *testing.T, typ, id string) {
	t.Helper()
	prefix := map[string]string{"message": "msg_", "function_call": "fc_", "reasoning": "rs_"}[typ]
	if prefix == "" || !strings.HasPrefix(id, prefix) {
		t.Errorf("%s item id %q", typ, id)
	}
}

func checkOutputItems(t *testing.T, out []responses.ResponseOutputItemUnion) {
	t.Helper()
	ids := map[string]bool{}
	for _, it := range out {
		checkItemID(t, it.Type, it.ID)
		if ids[it.ID] {
			t.Errorf("item id %q twice", it.ID)
		}
		ids[it.ID] = true
		if it.Type == "function_call" && (!strings.HasPrefix(it.CallID, "call_") || !json.Valid([]byte(it.Arguments.OfString)) || it.CallID == it.ID) {
			t.Errorf("function call %s", it.RawJSON())
		}
	}
}

// Every Responses answer a translator produced in the golden cases —
// response objects, stream events, error bodies — validates against the
// official spec's schemas.
func TestResponsesOutput_MatchesOpenAISpec(t *testing.T) {
	t.Parallel()
	doc := openAISpec(t)
	// Each event is checked against its own member of the
	// ResponseStreamEvent union (the union's error says only "no match").
	eventSchemas := map[string]string{}
	for _, ref := range doc.Components.Schemas["ResponseStreamEvent"].Value.AnyOf {
		if typ := ref.Value.Properties["type"]; typ != nil && len(typ.Value.Enum) == 1 {
			eventSchemas[typ.Value.Enum[0].(string)] = strings.TrimPrefix(ref.Ref, "#/components/schemas/")
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "responses_*", "*", "response.golden"))
	if len(files) < 40 {
		t.Fatalf("only %d responses answers", len(files))
	}
	counts := map[string]int{}
	for _, f := range files {
		out := readFile(t, f)
		if bytes.HasPrefix(out, []byte("HTTP ")) {
			_, body, _ := bytes.Cut(out, []byte("\n"))
			validateAgainst(t, doc, "ErrorResponse", body)
			counts["error body"]++
			continue
		}
		if !isSSE(out) {
			validateAgainst(t, doc, "Response", out)
			counts["response"]++
			continue
		}
		for _, ev := range sseEvents(t, out) {
			schema := eventSchemas[ev[0]]
			if schema == "" {
				t.Fatalf("the spec has no event %s", ev[0])
			}
			validateAgainst(t, doc, schema, []byte(ev[1]))
			counts[ev[0]]++
		}
	}
	for _, want := range []string{"response", "error body", "response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.reasoning_summary_part.added", "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
		"response.reasoning_summary_part.done", "response.completed", "response.incomplete", "response.failed", "error"} {
		if counts[want] == 0 {
			t.Errorf("no %s validated", want)
		}
	}
	// The validator does refuse what the spec forbids.
	for schema, bad := range map[string]string{
		"ResponseStreamEvent": `{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":1,"sequence_number":0,"logprobs":[]}`,
		"Response":            `{"id":"resp_1","object":"response","created_at":1,"status":"bogus","error":null,"incomplete_details":null,"instructions":null,"model":"m","tools":[],"output":[],"parallel_tool_calls":true,"metadata":{},"tool_choice":"auto","temperature":1,"top_p":1}`,
	} {
		var v any
		_ = json.Unmarshal([]byte(bad), &v)
		if doc.Components.Schemas[schema].Value.VisitJSON(v, specValidation...) == nil {
			t.Errorf("%s accepts %s", schema, bad)
		}
	}
}

// Parts the golden cases do not reach: a refusal, a call without
// arguments, Anthropic's redacted thinking, overlapping parts; then the
// same stream cut by an error after the first item ended.
func TestResponsesCaller_EveryPartKind(t *testing.T) {
	t.Parallel()
	evs := []canonical.Event{
		{Kind: canonical.EventStart, ID: "msg_01X", Model: "claude-x", Created: 7, Usage: canonical.Usage{Input: 10}},
		{Kind: canonical.EventPartStart, Index: 0, Part: canonical.PartRedactedThinking, Origin: canonical.OriginAnthropic, Text: "REDACTED"},
		{Kind: canonical.EventPartEnd, Index: 0},
		{Kind: canonical.EventPartStart, Index: 1, Part: canonical.PartRefusal},
		{Kind: canonical.EventPartStart, Index: 2, Part: canonical.PartToolCall, ID: "toolu_1", Name: "f"},
		{Kind: canonical.EventDelta, Index: 1, Text: "I can't"},
		{Kind: canonical.EventDelta, Index: 1, Text: " help."},
		{Kind: canonical.EventPartEnd, Index: 2},
		{Kind: canonical.EventPartEnd, Index: 1},
		{Kind: canonical.EventUsage, Usage: canonical.Usage{Input: 10, Output: 4}},
		{Kind: canonical.EventFinish, Finish: canonical.FinishToolCalls},
		{Kind: canonical.EventDone},
	}
	run := func(evs []canonical.Event) []byte {
		c := newResponsesCaller(&canonical.Request{Model: "m", Stream: true})
		var out []byte
		for i := range evs {
			out = c.event(out, &evs[i])
		}
		return out
	}
	out := run(evs)
	validateResponses(t, true, out)
	for _, want := range []string{`"encrypted_content":"rantr_REDACTED"`, `"type":"response.refusal.done","sequence_number":`, `"refusal":"I can't help."`,
		`"arguments":"{}","call_id":"call_toolu_1","name":"f"`, `"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0},"output_tokens":4`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %s in\n%s", want, out)
		}
	}

	cut := append(append([]canonical.Event{}, evs[:6]...), canonical.Event{Kind: canonical.EventError, Err: &canonical.Error{Kind: canonical.ErrOverloaded, Status: 503, Message: "overloaded", Code: "overloaded_error"}})
	out = run(cut)
	validateResponses(t, true, out)
	evsOut := sseEvents(t, out)
	if n := len(evsOut); n < 2 || evsOut[n-2][0] != "error" || evsOut[n-1][0] != "response.failed" ||
		!strings.Contains(evsOut[n-1][1], `"error":{"code":"server_error","message":"overloaded"}`) || !strings.Contains(evsOut[n-1][1], `"output":[{"id":"rs_01X_0"`) {
		t.Errorf("cut stream ends %v", evsOut[max(0, len(evsOut)-2):])
	}
}
