package wire

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

func TestClassify_EveryKind(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, k := range kinds {
		err := fmt.Errorf("route request: %w", Errorf(k.kind, "detail"))
		status, code := Classify(err)
		if status != k.status || code != k.code {
			t.Errorf("%v: got %d %s", k.kind, status, code)
		}
		if seen[code] {
			t.Errorf("code %s used twice", code)
		}
		seen[code] = true
	}
	if status, code := Classify(fmt.Errorf("something else")); status != http.StatusBadGateway || code != "upstream_error" {
		t.Errorf("unknown error: %d %s", status, code)
	}
}

func TestAppendErrorBody_CallerShapes(t *testing.T) {
	t.Parallel()
	err := Errorf(ErrModelNotFound, `The model "x\"y" does not exist.`)
	body, status := AppendErrorBody(nil, DialectOpenAI, err, "req_1")
	if status != http.StatusNotFound {
		t.Errorf("status %d", status)
	}
	var oa struct {
		Error struct {
			Message, Type, Code string
			Param               *string
		}
	}
	if err := json.Unmarshal(body, &oa); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if oa.Error.Message != err.Msg || oa.Error.Type != "not_found_error" || oa.Error.Code != "model_not_found" || oa.Error.Param != nil {
		t.Errorf("openai body %s", body)
	}

	body, _ = AppendErrorBody(nil, DialectAnthropic, Errorf(ErrRequestTooLarge, "big"), "req_2")
	var an struct {
		Type      string
		Error     struct{ Type, Message string }
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &an); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if an.Type != "error" || an.Error.Type != "request_too_large" || an.Error.Message != "big" || an.RequestID != "req_2" {
		t.Errorf("anthropic body %s", body)
	}
}

func TestAppendStreamError_ValidEvents(t *testing.T) {
	t.Parallel()
	for _, in := range []Inbound{InboundChat, InboundResponses, InboundMessages} {
		ev := AppendStreamError(nil, in, `broke "badly"`, 7)
		tr := NewStreamTracker(map[Inbound]Shape{InboundChat: ShapeOpenAI, InboundResponses: ShapeOpenAIResponses, InboundMessages: ShapeAnthropic}[in])
		evs, _ := readAllString(t, string(ev))
		if len(evs) != 1 || !json.Valid(evs[0].Data) {
			t.Fatalf("%s: %q", in, ev)
		}
		tr.Observe(evs[0])
		if !tr.Errored() {
			t.Errorf("%s: the tracker does not see an error in %q", in, ev)
		}
	}
}

// TestErrorsDoc keeps docs/errors.md in step with the one mapping.
func TestErrorsDoc(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		row := fmt.Sprintf("| `%s` | %d | `%s` | `%s` |", k.code, k.status, OpenAIType(k.status), AnthropicType(k.status))
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/errors.md lacks the row %s", row)
		}
	}
}

// /v1/generate's error event carries Relay's error object under "error".
func TestAppendStreamError_Generate(t *testing.T) {
	t.Parallel()
	ev := AppendStreamError(nil, InboundGenerate, `broke "badly"`, 0)
	evs, _ := readAllString(t, string(ev))
	var d struct {
		Type  string `json:"type"`
		Error struct {
			Message, Type, Code string
			Param               *string
		} `json:"error"`
	}
	if len(evs) != 1 || string(evs[0].Name) != "error" || json.Unmarshal(evs[0].Data, &d) != nil ||
		d.Type != "error" || d.Error.Message != `broke "badly"` || d.Error.Type != "server_error" || d.Error.Code != StreamErrorCode || d.Error.Param != nil {
		t.Fatalf("%q", ev)
	}
	if InboundGenerate.String() != "relay_generate" || InboundGenerate.Dialect() != DialectOpenAI {
		t.Errorf("%s %v", InboundGenerate, InboundGenerate.Dialect())
	}
}
