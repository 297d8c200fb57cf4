package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// responsesAnthropic serves OpenAI Responses callers through Anthropic
// Messages bindings. Anthropic's rules (required max_tokens, no system
// turns, tool results right after their calls, object arguments) are
// applied by the anthropic encoder; thinking comes back as reasoning items
// whose encrypted_content carries Anthropic's signature, so a caller that
// replays its output items replays signed thinking in tool loops.
var responsesAnthropic = pairSpec{
	name: "responses→anthropic", in: wire.InboundResponses, up: wire.ShapeAnthropic,
	newUpstream: newStatelessUpstream(newAnthropicUpstream), newCaller: newResponsesCaller,
	base: anthropicSupport,
	override: withState(supportTable{
		FeatReasoning:       {Emulated, "reasoning.effort low, medium, high, xhigh → thinking enabled with budget_tokens 1024, 4096, 16384, 32768 (kept below max_tokens); none and minimal → thinking off; thinking comes back as reasoning items (summary: the thinking text; encrypted_content: the signature)"},
		FeatThinkingHistory: {Yes, "reasoning items Relay returned for Anthropic are replayed signed; other reasoning items are dropped"},
		FeatStreaming:       {Yes, "content blocks become output items; the final usage (Anthropic's cumulative counts) arrives in response.completed"},
	}),
}
