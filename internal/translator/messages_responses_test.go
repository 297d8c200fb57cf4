package translator

import "testing"

func TestGolden_MessagesResponses(t *testing.T) {
	t.Parallel()
	runGolden(t, "messages_responses")
}

func TestMessagesResponses_CassetteRequests(t *testing.T) {
	t.Parallel()
	cassetteRequestsThrough(t, &messagesResponses)
}
