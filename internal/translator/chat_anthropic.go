package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// chatAnthropic serves Chat Completions callers through Anthropic Messages
// bindings. Anthropic's rules (required max_tokens, no system turns, strict
// role alternation, tool results right after their calls, object
// arguments, signed thinking) are applied by the anthropic encoder; Chat's
// answers come from the chat encoder, with Anthropic's signed thinking in
// the reasoning_content and thinking_blocks extension fields.
var chatAnthropic = pairSpec{
	name: "chat→anthropic", in: wire.InboundChat, up: wire.ShapeAnthropic,
	newUpstream: newAnthropicUpstream, newCaller: newChatCaller,
	base: anthropicSupport,
	override: supportTable{
		FeatStreaming: {Yes, "tool-call indices count per response; Relay reads Anthropic's cumulative usage and sends the usage chunk when include_usage asks"},
	},
}
