package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// responsesConverse serves OpenAI Responses callers through Bedrock
// Converse bindings: toolUseIds become call_ ids, reasoning comes back as
// reasoning items.
var responsesConverse = pairSpec{
	name: "responses→converse", in: wire.InboundResponses, up: wire.ShapeBedrockConverse,
	newUpstream: newStatelessUpstream(newConverseUpstream), newCaller: newResponsesCaller,
	base: converseSupport,
	override: withState(supportTable{
		FeatReasoning: {Emulated, "reasoning.effort low, medium, high, xhigh → additionalModelRequestFields.thinking with budget_tokens 1024, 4096, 16384, 32768 (Claude models); reasoning comes back as reasoning items"},
		FeatStreaming: {Yes, "ConverseStream's content blocks become output items; metadata's usage arrives in response.completed"},
	}),
}
