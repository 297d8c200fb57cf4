package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// geminiConverse serves Gemini generateContent callers through Bedrock
// Converse bindings: function calls carry Bedrock's toolUseId as their
// id; a streamed call's input arrives whole in one chunk once its block
// stops.
var geminiConverse = pairSpec{
	name: "gemini→converse", in: wire.InboundGemini, up: wire.ShapeBedrockConverse,
	newUpstream: newConverseUpstream, newCaller: newGeminiCaller,
	base: converseSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "thinkingBudget → additionalModelRequestFields.thinking budget_tokens (Claude models); reasoning comes back as thought parts"},
	},
}
