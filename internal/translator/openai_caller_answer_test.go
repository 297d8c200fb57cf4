package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/canonical"

	"github.com/relay-llm/relay/internal/wire"
)

// validateCaller checks what a caller receives with its own SDK's types:
// every body parses, every stream chunk accumulates, the stream ends the
// way the SDK expects.
func validateCaller(t *testing.T, in wire.Inbound, stream bool, status int, out []byte) {
	t.Helper()
	if bytes.HasPrefix(out, []byte("HTTP ")) {
		_, body, _ := bytes.Cut(out, []byte("\n"))
		validateErrorBody(t, in, body)
		return
	}
	switch {
	case in == wire.InboundChat && stream:
		validateChatStream(t, out)
	case in == wire.InboundChat:
		var c openai.ChatCompletion
		if err := json.Unmarshal(out, &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 {
			t.Errorf("not a chat completion (%v): %s", err, out)
		}
	case in == wire.InboundMessages && stream:
		validateMessagesStream(t, out)
	case in == wire.InboundMessages:
		validateMessage(t, out)
	case in == wire.InboundResponses:
		validateResponses(t, stream, out)
	case in == wire.InboundGenerate:
		validateGenerate(t, stream, out)
	}
}

func validateErrorBody(t *testing.T, in wire.Inbound, body []byte) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Errorf("error body %s: %v", body, err)
	}
	if in == wire.InboundMessages && e.Type != "error" {
		t.Errorf("an Anthropic caller's error lacks type error: %s", body)
	}
}

// sseEvents splits a caller stream into its events' (name, data).
func sseEvents(t *testing.T, out []byte) [][2]string {
	t.Helper()
	r := wire.NewEventReader(bytes.NewReader(out), nil, 1<<20)
	var evs [][2]string
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if !bytes.HasSuffix(ev.Raw, []byte("\n\n")) {
			t.Errorf("event not terminated by a blank line: %q", ev.Raw)
		}
		evs = append(evs, [2]string{string(ev.Name), string(ev.Data)})
	}
	return evs
}

func validateChatStream(t *testing.T, out []byte) {
	t.Helper()
	evs := sseEvents(t, out)
	if len(evs) == 0 {
		t.Fatal("empty stream")
	}
	var acc openai.ChatCompletionAccumulator
	finished, errored := false, false
	for i, ev := range evs {
		if ev[0] != "" {
			t.Errorf("chat event with a name: %v", ev)
		}
		if ev[1] == "[DONE]" {
			if i != len(evs)-1 || errored {
				t.Errorf("[DONE] at %d of %d", i, len(evs))
			}
			continue
		}
		if strings.HasPrefix(ev[1], `{"error"`) {
			if i != len(evs)-1 {
				t.Errorf("events after the error: %v", evs[i:])
			}
			errored = true
			continue
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(ev[1]), &c); err != nil {
			t.Fatalf("chunk %d: %v: %s", i, err, ev[1])
		}
		if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") {
			t.Errorf("chunk %d: %s", i, ev[1])
		}
		if !acc.AddChunk(c) {
			t.Fatalf("the accumulator refused chunk %d: %s", i, ev[1])
		}
		if len(c.Choices) > 0 && c.Choices[0].FinishReason != "" {
			if finished {
				t.Errorf("two finish chunks")
			}
			finished = true
		} else if finished && len(c.Choices) > 0 {
			t.Errorf("a delta after the finish chunk: %s", ev[1])
		}
	}
	if last := evs[len(evs)-1][1]; last != "[DONE]" && !errored {
		t.Errorf("the stream ends with %s, not [DONE]", last)
	}
	if !errored && !finished {
		t.Errorf("no finish_reason")
	}
	for _, tc := range acc.Choices {
		for _, call := range tc.Message.ToolCalls {
			if !json.Valid([]byte(call.Function.Arguments)) || !strings.HasPrefix(call.ID, "call_") {
				t.Errorf("tool call %+v", call)
			}
		}
	}
}

// --- conformance with OpenAI's official spec ---

var (
	specOnce sync.Once
	specDoc  *openapi3.T
	specErr  error
)

// reference is the path of rel under ../shared/reference beside the
// repository: the providers' published specs and recorded exchanges, which
// a user's clone does not have. Without them the test skips, loudly; where
// CI is set (CI runs with the reference beside the checkout) their absence
// fails the test instead, so CI never skips a conformance check.
func reference(t *testing.T, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "reference", rel)
	if _, err := os.Stat(p); err != nil {
		msg := fmt.Sprintf("REFERENCE MISSING: %s is not beside this checkout (%v); this conformance test runs where it is (CI)", p, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// openAISpec loads OpenAI's published spec from the reference (OpenAPI
// 3.1; kin-openapi loads it and validates with its JSON Schema 2020-12
// validator).
func openAISpec(t *testing.T) *openapi3.T {
	t.Helper()
	path := reference(t, "openai-openapi.yaml")
	specOnce.Do(func() {
		specDoc, specErr = openapi3.NewLoader().LoadFromFile(path)
	})
	if specErr != nil {
		t.Fatalf("load the OpenAI spec: %v", specErr)
	}
	return specDoc
}

// specValidation: kin-openapi's OpenAPI 3.0-style validator, which honours
// the spec's nullable: true (it still uses it on enums such as
// finish_reason) and its 3.1 anyOf [{type: "null"}] alike; the JSON
// Schema 2020-12 validator ignores nullable and refuses the spec's own
// null finish_reason.
var specValidation []openapi3.SchemaValidationOption

func validateAgainst(t *testing.T, doc *openapi3.T, schema string, data []byte) {
	t.Helper()
	ref := doc.Components.Schemas[schema]
	if ref == nil || ref.Value == nil {
		t.Fatalf("the spec has no schema %s", schema)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	if err := ref.Value.VisitJSON(v, specValidation...); err != nil {
		t.Errorf("%s does not validate against %s: %v", data, schema, err)
	}
}

// Every OpenAI-shaped answer a translator produced in the golden cases —
// completions, chunks, in-stream errors and error bodies — validates
// against the official spec's schemas.
func TestChatOutput_MatchesOpenAISpec(t *testing.T) {
	t.Parallel()
	doc := openAISpec(t)
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "chat_*", "*", "response.golden"))
	if len(files) < 50 {
		t.Fatalf("only %d chat answers", len(files))
	}
	var completions, chunks, errs int
	for _, f := range files {
		out := readFile(t, f)
		if bytes.HasPrefix(out, []byte("HTTP ")) {
			_, body, _ := bytes.Cut(out, []byte("\n"))
			validateAgainst(t, doc, "ErrorResponse", body)
			errs++
			continue
		}
		if !isSSE(out) {
			validateAgainst(t, doc, "CreateChatCompletionResponse", out)
			completions++
			continue
		}
		for _, ev := range sseEvents(t, out) {
			switch {
			case ev[1] == "[DONE]":
			case strings.HasPrefix(ev[1], `{"error"`):
				validateAgainst(t, doc, "ErrorResponse", []byte(ev[1]))
				errs++
			default:
				validateAgainst(t, doc, "CreateChatCompletionStreamResponse", []byte(ev[1]))
				chunks++
			}
		}
	}
	// The validator does refuse what the spec forbids.
	for schema, bad := range map[string]string{
		"CreateChatCompletionStreamResponse": `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"bogus"}]}`,
		"CreateChatCompletionResponse":       `{"object":"chat.completion","created":1,"model":"m","choices":[]}`,
		"ErrorResponse":                      `{"error":{"message":"m"}}`,
	} {
		var v any
		_ = json.Unmarshal([]byte(bad), &v)
		if doc.Components.Schemas[schema].Value.VisitJSON(v, specValidation...) == nil {
			t.Errorf("%s accepts %s", schema, bad)
		}
	}
	if completions == 0 || chunks == 0 || errs == 0 {
		t.Errorf("validated %d completions, %d chunks, %d errors", completions, chunks, errs)
	}
}

// A thinking part written before later parts start (the caller's part
// table grows under it) still yields its whole signed block.
func TestChatCaller_ThinkingSurvivesGrowth(t *testing.T) {
	t.Parallel()
	c := newChatCaller(&canonical.Request{}).(*chatCaller)
	var out []byte
	out = c.event(out, &canonical.Event{Kind: canonical.EventStart, ID: "r"})
	out = c.event(out, &canonical.Event{Kind: canonical.EventPartStart, Index: 0, Part: canonical.PartThinking, Origin: canonical.OriginAnthropic})
	out = c.event(out, &canonical.Event{Kind: canonical.EventDelta, Index: 0, Text: "think"})
	for i := 1; i < 30; i++ {
		out = c.event(out, &canonical.Event{Kind: canonical.EventPartStart, Index: i, Part: canonical.PartText})
	}
	out = c.event(out, &canonical.Event{Kind: canonical.EventDelta, Index: 0, Signature: "sig"})
	out = c.event(out, &canonical.Event{Kind: canonical.EventPartEnd, Index: 0})
	if !strings.Contains(string(out), `"thinking_blocks":[{"type":"thinking","thinking":"think","signature":"sig"}]`) {
		t.Errorf("%s", out)
	}
}
