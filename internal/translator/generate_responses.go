package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// generateResponses serves /v1/generate callers through OpenAI Responses
// bindings. Requests are stateless (store: false); reasoning summaries
// come back as thinking parts.
var generateResponses = pairSpec{
	name: "generate→responses", in: wire.InboundGenerate, up: wire.ShapeOpenAIResponses,
	newUpstream: newResponsesUpstream, newCaller: newGenerateCaller,
	base: responsesSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "effort → reasoning.effort; budget_tokens → reasoning.effort (below 4096 low, below 16384 medium, else high) with summary auto"},
		FeatStreaming: {Yes, "output items become parts; response.completed's usage fills the end event"},
	},
}
