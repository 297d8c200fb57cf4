package translator

import "testing"

func TestGolden_GenerateGemini(t *testing.T) {
	t.Parallel()
	runGolden(t, "generate_gemini")
}
