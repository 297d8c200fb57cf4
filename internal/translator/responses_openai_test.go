package translator

import "testing"

func TestGolden_ResponsesOpenAI(t *testing.T) {
	t.Parallel()
	runGolden(t, "responses_openai")
}
