package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// messagesConverse serves Anthropic Messages callers through Bedrock
// Converse bindings (any Bedrock model; Claude on Bedrock is better served
// by the anthropic shape with a bedrock host, which keeps every Messages
// feature): toolUseIds behind the toolu_ prefix, cache_control as
// cachePoint blocks, signed reasoning replayed.
var messagesConverse = pairSpec{
	name: "messages→converse", in: wire.InboundMessages, up: wire.ShapeBedrockConverse,
	newUpstream: newConverseUpstream, newCaller: newMessagesCaller,
	base: converseSupport,
	override: supportTable{
		FeatReasoning: {Yes, "thinking → additionalModelRequestFields.thinking as sent (Claude models); reasoning comes back as thinking blocks with their signatures"},
	},
}
