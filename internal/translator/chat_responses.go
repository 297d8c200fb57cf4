package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// chatResponses serves Chat Completions callers through OpenAI Responses
// bindings. Chat is stateless, so Relay sends store: false unless the
// caller asked to store; function calls pair with their outputs by
// call_id, and argument deltas are matched to calls by item_id.
var chatResponses = pairSpec{
	name: "chat→responses", in: wire.InboundChat, up: wire.ShapeOpenAIResponses,
	newUpstream: newResponsesUpstream, newCaller: newChatCaller,
	base: responsesSupport,
	override: supportTable{
		FeatReasoning: {Yes, "reasoning.effort; reasoning summaries come back as reasoning_content"},
		FeatStreaming: {Yes, "Responses events become chunks; response.completed brings the usage chunk (when asked) and [DONE]"},
	},
}
