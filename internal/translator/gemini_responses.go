package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// geminiResponses serves Gemini generateContent callers through OpenAI
// Responses bindings: functionCall and functionResponse parts become
// function_call and function_call_output items paired by call_id, and
// reasoning summaries come back as thought parts when the caller asked
// for thoughts.
var geminiResponses = pairSpec{
	name: "gemini→responses", in: wire.InboundGemini, up: wire.ShapeOpenAIResponses,
	newUpstream: newResponsesUpstream, newCaller: newGeminiCaller,
	base: responsesSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "thinkingLevel → reasoning.effort; thinkingBudget → reasoning.effort (below 4096 low, below 16384 medium, else high) with summary auto; summaries come back (with includeThoughts) as thought parts"},
		FeatStreaming: {Yes, "text streams as it comes; each function call is one chunk once its arguments are whole; the last chunk carries finishReason and usageMetadata"},
	},
}
