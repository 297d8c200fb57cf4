package translator

import "testing"

func TestGolden_GenerateAnthropic(t *testing.T) {
	t.Parallel()
	runGolden(t, "generate_anthropic")
}
