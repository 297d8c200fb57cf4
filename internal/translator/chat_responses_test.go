package translator

import "testing"

func TestGolden_ChatResponses(t *testing.T) {
	t.Parallel()
	runGolden(t, "chat_responses")
}
