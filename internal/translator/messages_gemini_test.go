package translator

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/relay-llm/relay/internal/wire"
)

func TestGolden_MessagesGemini(t *testing.T) {
	t.Parallel()
	runGolden(t, "messages_gemini")
}

// Gemini's own call ids and signatures survive an Anthropic caller's
// round trip through the toolu_ ids; the caller's thinking blocks (foreign,
// unsigned) stay behind.
func TestMessagesGemini_IDsAndSignaturesRoundTrip(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "golden", "messages_gemini", "thought_signatures")
	req, err := Decode(wire.InboundMessages, readFile(t, filepath.Join(dir, "request.json")))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := translateAnswer(t, &messagesGemini, req, caseMeta{}, 200, readFile(t, filepath.Join(dir, "upstream.body")))
	var msg anthropic.Message
	if err := json.Unmarshal(out, &msg); err != nil {
		t.Fatal(err)
	}
	p := msg.ToParam()
	var results []anthropic.ContentBlockParamUnion
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			results = append(results, anthropic.NewToolResultBlock(b.ID, "ok "+b.Name, false))
		}
	}
	next := anthropic.MessageNewParams{
		Model: "m", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris and the time there?")), p, anthropic.NewUserMessage(results...)},
		Tools:    []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{}}}, {OfTool: &anthropic.ToolParam{Name: "get_time", InputSchema: anthropic.ToolInputSchemaParam{}}}},
	}
	body, _ := json.Marshal(next)
	req2, err := Decode(wire.InboundMessages, body)
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
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
	model, res := g.Contents[1], g.Contents[2]
	if len(model.Parts) != 2 || model.Parts[0].FunctionCall.ID != "fc-7f3a" || model.Parts[1].FunctionCall.ID != "fc-7f3b" ||
		model.Parts[0].ThoughtSignature != "CiQBcsjafQ1nUwz2dYV4ACRsZ2Rc0z4dk1VNe+VeMq2Pz0hA7gA=" || model.Parts[1].ThoughtSignature != "" {
		t.Errorf("model turn %s", up)
	}
	if len(res.Parts) != 2 || res.Parts[0].FunctionResponse.ID != "fc-7f3a" || res.Parts[0].FunctionResponse.Name != "get_weather" || res.Parts[1].FunctionResponse.ID != "fc-7f3b" {
		t.Errorf("results %s", up)
	}
}

func TestMessagesGemini_CassetteRequests(t *testing.T) {
	t.Parallel()
	cassetteRequestsThrough(t, &messagesGemini)
}
