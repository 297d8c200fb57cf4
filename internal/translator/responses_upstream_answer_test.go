package translator

import (
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

func sse(events ...string) []byte {
	var b strings.Builder
	for _, e := range events {
		name, data, _ := strings.Cut(e, " ")
		b.WriteString("event: " + name + "\ndata: " + data + "\n\n")
	}
	return []byte(b.String())
}

// Argument deltas are keyed by item_id (fc_…); the caller gets the call_id,
// and arguments that arrive only in .done (or only on the finished item)
// arrive once.
func TestResponsesStream_ItemIDsAndCallIDs(t *testing.T) {
	t.Parallel()
	stream := sse(
		`response.created {"type":"response.created","response":{"id":"resp_1","model":"gpt","created_at":7}}`,
		`response.output_item.added {"type":"response.output_item.added","output_index":0,"item":{"id":"fc_A","type":"function_call","call_id":"call_A","name":"f","arguments":""}}`,
		`response.function_call_arguments.delta {"type":"response.function_call_arguments.delta","item_id":"fc_A","delta":"{\"x\":"}`,
		`response.function_call_arguments.delta {"type":"response.function_call_arguments.delta","item_id":"fc_A","delta":"1}"}`,
		`response.function_call_arguments.done {"type":"response.function_call_arguments.done","item_id":"fc_A","arguments":"{\"x\":1}"}`,
		`response.output_item.done {"type":"response.output_item.done","item":{"id":"fc_A","type":"function_call","call_id":"call_A","name":"f","arguments":"{\"x\":1}"}}`,
		`response.output_item.added {"type":"response.output_item.added","output_index":1,"item":{"id":"fc_B","type":"function_call","call_id":"call_B","name":"g"}}`,
		`response.function_call_arguments.done {"type":"response.function_call_arguments.done","item_id":"fc_B","arguments":"{\"y\":2}"}`,
		`response.output_item.done {"type":"response.output_item.done","item":{"id":"fc_B","type":"function_call","call_id":"call_B","name":"g","arguments":"{\"y\":2}"}}`,
		`response.output_item.added {"type":"response.output_item.added","output_index":2,"item":{"id":"fc_C","type":"function_call","call_id":"call_C","name":"h"}}`,
		`response.output_item.done {"type":"response.output_item.done","item":{"id":"fc_C","type":"function_call","call_id":"call_C","name":"h","arguments":"{\"z\":3}"}}`,
		`response.completed {"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":8},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":4}}}}`,
	)
	req := minimalRequest(t, wire.InboundChat, true)
	req.C.IncludeUsage = true
	out, usage := translateAnswer(t, &chatResponses, req, caseMeta{}, 200, stream)
	validateChatStream(t, out)
	r := chatMessageOf(t, out, true)
	var got []string
	for _, c := range r.Message.ToolCalls {
		got = append(got, c.ID+" "+c.Function.Name+" "+c.Function.Arguments)
	}
	if strings.Join(got, "|") != `call_A f {"x":1}|call_B g {"y":2}|call_C h {"z":3}` || r.FinishReason != "tool_calls" {
		t.Errorf("calls %q finish %s", got, r.FinishReason)
	}
	if usage != (wire.Usage{Input: 20, Output: 9, CacheRead: 8, Reasoning: 4}) {
		t.Errorf("usage %+v", usage)
	}
}

func TestResponses_StatusesAndFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status, reason string
		want           canonical.FinishReason
	}{
		{"completed", "", canonical.FinishStop},
		{"incomplete", "max_output_tokens", canonical.FinishLength},
		{"incomplete", "content_filter", canonical.FinishContentFilter},
	} {
		r := &respResponse{Status: c.status}
		if c.reason != "" {
			r.IncompleteDetails = &struct {
				Reason string `json:"reason"`
			}{c.reason}
		}
		if got := finishFromResponse(r, false); got != c.want {
			t.Errorf("%s/%s → %s", c.status, c.reason, got)
		}
	}
	failed := sse(
		`response.created {"type":"response.created","response":{"id":"resp_1","model":"gpt"}}`,
		`response.failed {"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"boom"}}}`,
	)
	out, _ := translateAnswer(t, &messagesResponses, minimalRequest(t, wire.InboundMessages, true), caseMeta{}, 200, failed)
	validateMessagesStream(t, out)
	if !strings.Contains(string(out), "event: error") || !strings.Contains(string(out), "boom") {
		t.Errorf("failed response:\n%s", out)
	}
	tr, _ := New(minimalRequest(t, wire.InboundChat, false), chatResponses.target(), testNow)
	if _, err := tr.AppendResponse(nil, []byte(`{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}`)); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("a failed response body: %v", err)
	}
}

// target is a Target for the pair's upstream shape.
func (p *pairSpec) target() Target { return Target{Shape: p.up, UpstreamModel: "model"} }
