package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// messagesGemini serves Anthropic Messages callers through Gemini
// bindings: tool_use ids are Relay's rgem_ ids behind the toolu_ prefix,
// carrying Gemini's thought signatures to the next turn; whole function
// calls stream as one input_json_delta.
var messagesGemini = pairSpec{
	name: "messages→gemini", in: wire.InboundMessages, up: wire.ShapeGemini,
	newUpstream: newGeminiUpstream, newCaller: newMessagesCaller,
	base: geminiSupport,
	override: supportTable{
		FeatReasoning: {Yes, "thinking.budget_tokens → thinkingConfig.thinkingBudget with includeThoughts (adaptive → -1, dynamic); thoughts come back as unsigned thinking blocks"},
		FeatStreaming: {Yes, "message_start carries Gemini's prompt count from the first chunk; message_delta the final counts"},
	},
}
