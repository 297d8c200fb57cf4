package translator

import "testing"

func TestGolden_GenerateOpenAI(t *testing.T) {
	t.Parallel()
	runGolden(t, "generate_openai")
}
