package proxy_test

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/relay-llm/relay/internal/wire"
)

// A stored Responses answer passed through from an openai_responses
// binding that spans many reads (the mock echoes the instructions, as
// OpenAI does) reaches the caller byte for byte, and the state kept is the
// same answer: the last read is held until the state is kept, and holding
// must never overwrite a read not yet written.
func TestResponsesState_LargePassthroughAnswerIsWhole(t *testing.T) {
	t.Parallel()
	f := statefulFixture(t, nil)
	client := f.openai()
	// 200 KB of instructions, no two 1 KB runs alike, so a read written
	// twice or lost shows in the echo.
	var b strings.Builder
	for i := 0; b.Len() < 200<<10; i++ {
		b.WriteString("line ")
		b.WriteString(strings.Repeat(string(rune('a'+i%26)), 1+i%7))
		b.WriteString(" of the system prompt, number ")
		b.WriteString(strings.Repeat("x", i%13))
		b.WriteString(".\n")
	}
	instructions := b.String()
	out, err := client.Responses.New(t.Context(), responses.ResponseNewParams{
		Model:        string(wire.ShapeOpenAIResponses),
		Instructions: openai.String(instructions),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Instructions.OfString != instructions {
		t.Fatalf("the answer's instructions differ from the request's (%d bytes back, %d sent)", len(out.Instructions.OfString), len(instructions))
	}
	got, err := client.Responses.Get(t.Context(), out.ID, responses.ResponseGetParams{})
	if err != nil || got.Instructions.OfString != instructions {
		t.Fatalf("the kept answer differs: %v (%d bytes)", err, len(got.Instructions.OfString))
	}
}
