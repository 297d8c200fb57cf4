package translator

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Anthropic's signed thinking goes to a Gemini caller as a prefixed
// thoughtSignature and comes back as signed Anthropic thinking.
func TestGeminiCaller_ThinkingSignatureRoundTrip(t *testing.T) {
	t.Parallel()
	req, err := Decode(wire.InboundGemini, []byte(`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.FromPath("m", false)
	c := newGeminiCaller(&req.C)
	out := c.response(nil, &canonical.Response{Model: "m", Finish: canonical.FinishStop, Parts: []canonical.Part{
		{Type: canonical.PartThinking, Text: "hmm", Signature: "c2ln", Origin: canonical.OriginAnthropic},
		{Type: canonical.PartRedactedThinking, Signature: "cmVk", Origin: canonical.OriginAnthropic},
		{Type: canonical.PartText, Text: "hello"},
	}})
	var a struct {
		Candidates []struct {
			Content json.RawMessage `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatal(err)
	}
	next := `{"contents":[{"parts":[{"text":"hi"}]},` + string(a.Candidates[0].Content) + `,{"parts":[{"text":"more"}]}]}`
	back, err := Decode(wire.InboundGemini, []byte(next))
	if err != nil {
		t.Fatal(err)
	}
	ps := back.C.Messages[1].Parts
	if len(ps) != 3 || ps[0].Type != canonical.PartThinking || ps[0].Signature != "c2ln" || ps[0].Origin != canonical.OriginAnthropic || ps[0].Text != "hmm" ||
		ps[1].Type != canonical.PartRedactedThinking || ps[1].Signature != "cmVk" || ps[2].Text != "hello" {
		t.Errorf("parts back: %+v\nfrom %s", ps, out)
	}
}

// Without includeThoughts the caller sees no thought text, as from Gemini.
func TestGeminiCaller_HidesThoughtsUnlessAsked(t *testing.T) {
	t.Parallel()
	req, err := Decode(wire.InboundGemini, []byte(`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":1024}}}`))
	if err != nil {
		t.Fatal(err)
	}
	out := newGeminiCaller(&req.C).response(nil, &canonical.Response{Parts: []canonical.Part{{Type: canonical.PartThinking, Text: "secret thoughts"}, {Type: canonical.PartText, Text: "hello"}}})
	if bytes.Contains(out, []byte("secret")) || !bytes.Contains(out, []byte("hello")) {
		t.Errorf("got %s", out)
	}
}
