package canonical

import (
	"encoding/json"
	"testing"
)

func TestTextOf(t *testing.T) {
	t.Parallel()
	ps := []Part{{Type: PartText, Text: "a"}, {Type: PartImage, Image: &Image{URL: "u"}}, {Type: PartText, Text: "b"}}
	if got := TextOf(ps, "\n"); got != "a\nb" {
		t.Errorf("TextOf = %q", got)
	}
	if got := TextOf(ps[:2], "\n"); got != "a" {
		t.Errorf("one part: %q", got)
	}
	if got := TextOf(nil, "\n"); got != "" {
		t.Errorf("none: %q", got)
	}
}

// The JSON form is the natural body of /v1/generate: it must round-trip.
func TestRequest_JSONRoundTrip(t *testing.T) {
	t.Parallel()
	max, temp, tr := int64(100), 0.5, true
	r := Request{
		Model: "m", System: []Part{{Type: PartText, Text: "s", CacheHint: json.RawMessage(`{"type":"ephemeral"}`)}},
		Messages: []Message{
			{Role: RoleUser, Parts: []Part{{Type: PartText, Text: "hi"}, {Type: PartImage, Image: &Image{MediaType: "image/png", Data: "AAAA"}}}},
			{Role: RoleAssistant, Parts: []Part{{Type: PartThinking, Text: "t", Signature: "sig", Origin: OriginAnthropic}, {Type: PartToolCall, ToolCall: &ToolCall{ID: "c1", Name: "f", Arguments: `{"a":1}`}}}},
			{Role: RoleTool, Parts: []Part{{Type: PartToolResult, ToolResult: &ToolResult{CallID: "c1", Name: "f", Content: []Part{{Type: PartText, Text: "ok"}}, IsError: true}}}},
		},
		Tools:           []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`), Strict: &tr}},
		ToolChoice:      ToolChoice{Mode: ToolChoiceTool, Name: "f"},
		MaxOutputTokens: &max, Temperature: &temp, Stop: []string{"x"},
		ResponseFormat: &ResponseFormat{Type: FormatJSONSchema, Name: "n", Schema: json.RawMessage(`{"type":"object"}`)},
		Reasoning:      &Reasoning{Enabled: &tr, BudgetTokens: 2048},
		State:          &State{PreviousResponseID: "resp_1", Store: &tr},
	}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var back Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(&back)
	if string(b) != string(b2) {
		t.Errorf("round trip:\n%s\n%s", b, b2)
	}
}
