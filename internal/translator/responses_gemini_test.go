package translator

import "testing"

func TestGolden_ResponsesGemini(t *testing.T) {
	t.Parallel()
	runGolden(t, "responses_gemini")
}
