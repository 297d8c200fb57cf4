package translator

import "testing"

func TestGolden_GenerateResponses(t *testing.T) {
	t.Parallel()
	runGolden(t, "generate_responses")
}
