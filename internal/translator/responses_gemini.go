package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// responsesGemini serves OpenAI Responses callers through Gemini bindings.
// Gemini's calls often have no id: the call_id a Responses caller sees is
// Relay's rgem_ id behind the call_ prefix, which carries Gemini's thought
// signature back on the next turn.
var responsesGemini = pairSpec{
	name: "responses→gemini", in: wire.InboundResponses, up: wire.ShapeGemini,
	newUpstream: newStatelessUpstream(newGeminiUpstream), newCaller: newResponsesCaller,
	base: geminiSupport,
	override: withState(supportTable{
		FeatReasoning: {Emulated, "reasoning.effort → thinkingConfig.thinkingBudget (none and minimal 0, low 1024, medium 8192, high 24576, xhigh 32768) with includeThoughts; thoughts come back as reasoning items' summaries"},
		FeatStreaming: {Yes, "each chunk's parts become output-item events; the last chunk's finishReason and usageMetadata end the stream with response.completed or response.incomplete"},
	}),
}
