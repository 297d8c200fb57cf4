package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// chatConverse serves Chat Completions callers through Bedrock Converse
// bindings: tool calls keep Bedrock's toolUseId behind the call_ prefix,
// and ConverseStream's tool-use deltas become argument fragments under a
// per-response tool index.
var chatConverse = pairSpec{
	name: "chat→converse", in: wire.InboundChat, up: wire.ShapeBedrockConverse,
	newUpstream: newConverseUpstream, newCaller: newChatCaller,
	base: converseSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "reasoning_effort low, medium, high, xhigh → additionalModelRequestFields.thinking with budget_tokens 1024, 4096, 16384, 32768 (Claude models); reasoning comes back as reasoning_content"},
	},
}
