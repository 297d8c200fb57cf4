package translator

import (
	"bytes"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

// TestResponsesCaller_CallsNameTheirNamespace: Codex offers each MCP
// server's tools inside a namespace tool (mcp__<server>) and routes a
// function_call by its namespace. Translated to an upstream of another
// shape the tool is offered by its own name, so the caller's answer must
// name the namespace again on the call — in the whole answer and in the
// stream's items — or Codex answers "unsupported call".
func TestResponsesCaller_CallsNameTheirNamespace(t *testing.T) {
	t.Parallel()
	body := `{"model":"m","input":"Echo hello with a tool.","tools":[
		{"type":"function","name":"exec_command","parameters":{"type":"object"}},
		{"type":"namespace","name":"mcp__relay","description":"Tools in the mcp__relay namespace.","tools":[
			{"type":"function","name":"tools__echo","strict":false,"parameters":{"type":"object","properties":{"text":{"type":"string"}}}}]}]}`
	streamed := strings.Replace(body, `"model":"m",`, `"model":"m","stream":true,`, 1)
	answer := `{"id":"msg_1","type":"message","role":"assistant","model":"u","content":[
		{"type":"tool_use","id":"toolu_1","name":"tools__echo","input":{"text":"hello"}},
		{"type":"tool_use","id":"toolu_2","name":"exec_command","input":{}}],
		"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}`
	events := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"u\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"tools__echo\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"text\\\":\\\"hello\\\"}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

	req, err := Decode(wire.InboundResponses, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(req, Target{Shape: wire.ShapeAnthropic, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	up, err := tr.AppendRequest(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(up), `"name":"tools__echo"`) || strings.Contains(string(up), "namespace") {
		t.Fatalf("the upstream is offered the namespace's tool by its own name, and no namespace: %s", up)
	}
	out, err := tr.AppendResponse(nil, []byte(answer))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"namespace":"mcp__relay","name":"tools__echo"`) {
		t.Errorf("the call of the namespaced tool does not name its namespace: %s", out)
	}
	if strings.Count(string(out), `"namespace"`) != 1 {
		t.Errorf("a top-level tool's call names a namespace: %s", out)
	}

	sreq, err := Decode(wire.InboundResponses, []byte(streamed))
	if err != nil {
		t.Fatal(err)
	}
	st, err := New(sreq, Target{Shape: wire.ShapeAnthropic, Model: "m", UpstreamModel: "u", Host: "h"}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	r := wire.NewEventReader(bytes.NewReader([]byte(events)), nil, 1<<20)
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if got, err = st.AppendEvent(got, ev); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = st.AppendEnd(got)
	for _, name := range []string{"response.output_item.added", "response.output_item.done", "response.completed"} {
		i := bytes.Index(got, []byte("event: "+name+"\n"))
		if i < 0 {
			t.Fatalf("no %s in the stream:\n%s", name, got)
		}
		line := got[i:]
		line = line[:bytes.Index(line, []byte("\n\n"))]
		if !bytes.Contains(line, []byte(`"namespace":"mcp__relay","name":"tools__echo"`)) {
			t.Errorf("%s does not name the call's namespace: %s", name, line)
		}
	}
}
