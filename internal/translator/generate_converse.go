package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// generateConverse serves /v1/generate callers through Bedrock Converse
// bindings.
var generateConverse = pairSpec{
	name: "generate→converse", in: wire.InboundGenerate, up: wire.ShapeBedrockConverse,
	newUpstream: newConverseUpstream, newCaller: newGenerateCaller,
	base: converseSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "budget_tokens → additionalModelRequestFields.thinking with that budget; effort low, medium, high, xhigh → 1024, 4096, 16384, 32768 (Claude models)"},
	},
}
