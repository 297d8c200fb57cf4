package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// generateAnthropic serves /v1/generate callers through Anthropic Messages
// bindings. Signed thinking comes back with origin anthropic and is
// replayed when the caller sends it back; tool-call ids are Anthropic's.
var generateAnthropic = pairSpec{
	name: "generate→anthropic", in: wire.InboundGenerate, up: wire.ShapeAnthropic,
	newUpstream: newAnthropicUpstream, newCaller: newGenerateCaller,
	base: anthropicSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "budget_tokens → thinking enabled with that budget; enabled without a budget → adaptive thinking; effort low, medium, high, xhigh → budget_tokens 1024, 4096, 16384, 32768 (kept below max_tokens); none and minimal → thinking off"},
		FeatStreaming: {Yes, "content blocks become parts with the same order; message_delta's usage fills the end event"},
	},
}
