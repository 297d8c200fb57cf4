package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// generateGemini serves /v1/generate callers through Gemini bindings.
// Gemini's function calls have no ids: Relay mints rgem_ ids that carry
// the call's thought signature, so sending a call back as it came keeps
// the signature.
var generateGemini = pairSpec{
	name: "generate→gemini", in: wire.InboundGenerate, up: wire.ShapeGemini,
	newUpstream: newGeminiUpstream, newCaller: newGenerateCaller,
	base: geminiSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "budget_tokens → thinkingConfig.thinkingBudget; enabled without a budget → dynamic (-1); effort none and minimal 0, low 1024, medium 8192, high 24576, xhigh 32768; thoughts come back as thinking parts"},
		FeatStreaming: {Yes, "each chunk's parts become deltas; the last chunk's finishReason and usageMetadata fill the end event"},
	},
}
