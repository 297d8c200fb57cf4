package translator

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/relay-llm/relay/internal/wire"
)

func TestGolden_ChatGemini(t *testing.T) {
	t.Parallel()
	runGolden(t, "chat_gemini")
}

// Gemini's thought signatures survive a Chat caller's round trip: the ids
// Relay hands out carry them, and the next turn's request echoes them on
// the same function calls, with each result named after its function.
func TestChatGemini_ThoughtSignatureRoundTrip(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "golden", "chat_gemini", "thought_signatures_stream")
	req, err := Decode(wire.InboundChat, readFile(t, filepath.Join(dir, "request.json")))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := translateAnswer(t, &chatGemini, req, caseMeta{}, 200, readFile(t, filepath.Join(dir, "upstream.body")))
	var acc openai.ChatCompletionAccumulator
	for _, ev := range sseEvents(t, out) {
		var c openai.ChatCompletionChunk
		if ev[1] == "[DONE]" {
			continue
		}
		if err := json.Unmarshal([]byte(ev[1]), &c); err != nil || !acc.AddChunk(c) {
			t.Fatalf("chunk %s: %v", ev[1], err)
		}
	}
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != 2 {
		t.Fatalf("calls %+v", calls)
	}
	next := map[string]any{
		"model": "m",
		"messages": []any{
			map[string]any{"role": "user", "content": "Weather in Paris and the time there?"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": calls[0].ID, "type": "function", "function": map[string]any{"name": calls[0].Function.Name, "arguments": calls[0].Function.Arguments}},
				map[string]any{"id": calls[1].ID, "type": "function", "function": map[string]any{"name": calls[1].Function.Name, "arguments": calls[1].Function.Arguments}},
			}},
			// The results come back in the other order.
			map[string]any{"role": "tool", "tool_call_id": calls[1].ID, "content": "09:00"},
			map[string]any{"role": "tool", "tool_call_id": calls[0].ID, "content": `{"temp":21}`},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}},
	}
	body, _ := json.Marshal(next)
	req2, err := Decode(wire.InboundChat, body)
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := New(req2, Target{Shape: wire.ShapeGemini, UpstreamModel: "gemini-3-pro-preview"}, testNow)
	up, err := tr.AppendRequest(nil)
	if err != nil {
		t.Fatal(err)
	}
	var g gemRequest
	if err := json.Unmarshal(up, &g); err != nil {
		t.Fatal(err)
	}
	model := g.Contents[1]
	if model.Role != "model" || len(model.Parts) != 2 {
		t.Fatalf("model turn %s", up)
	}
	if sig := model.Parts[0].ThoughtSignature; sig != "CiQBcsjafQ1nUwz2dYV4ACRsZ2Rc0z4dk1VNe+VeMq2Pz0hA7gA=" {
		t.Errorf("first call's signature %q", sig)
	}
	if sig := model.Parts[1].ThoughtSignature; sig != "" {
		t.Errorf("second call got signature %q; Gemini gave it none", sig)
	}
	results := g.Contents[2]
	if results.Role != "user" || len(results.Parts) != 2 || results.Parts[0].FunctionResponse.Name != "get_time" || results.Parts[1].FunctionResponse.Name != "get_weather" ||
		string(results.Parts[1].FunctionResponse.Response) != `{"temp":21}` || string(results.Parts[0].FunctionResponse.Response) != `{"output":"09:00"}` {
		t.Errorf("function responses %s", up)
	}
}

func TestGeminiCallID_RoundTrips(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ gid, sig string }{
		{"", ""}, {"", "CiQBcsjafQ1nUwz2dYV4ACRsZ2Rc0z4dk1VNe+VeMq2Pz0hA7gA="}, {"fc-1", "not base64!"}, {"fc-2", ""},
	} {
		id := geminiCallID("resp1", 3, c.gid, c.sig)
		if id != geminiCallID("resp1", 3, c.gid, c.sig) {
			t.Errorf("%+v: not stable", c)
		}
		if c.gid == "" && id == geminiCallID("resp1", 4, c.gid, c.sig) {
			t.Errorf("%+v: index does not change the id", c)
		}
		if anthropicID(callerID(anthropicCallPrefix, id)) != callerID(anthropicCallPrefix, id) {
			t.Errorf("%s is not a valid Anthropic id", id)
		}
		for _, prefix := range []string{chatCallPrefix, anthropicCallPrefix} {
			back := canonicalID(prefix, callerID(prefix, id))
			gid, sig, provided, ok := parseGeminiID(back)
			if !ok || gid != c.gid || sig != c.sig || provided != (c.gid != "") {
				t.Errorf("%+v via %s: got %q %q %v %v", c, prefix, gid, sig, provided, ok)
			}
		}
	}
	if _, _, _, ok := parseGeminiID("call_abc"); ok {
		t.Error("a foreign id parsed")
	}
	if _, _, _, ok := parseGeminiID(geminiIDPrefix + "!!"); ok {
		t.Error("a broken id parsed")
	}
}
