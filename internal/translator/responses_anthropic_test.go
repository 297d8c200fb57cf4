package translator

import "testing"

func TestGolden_ResponsesAnthropic(t *testing.T) {
	t.Parallel()
	runGolden(t, "responses_anthropic")
}
