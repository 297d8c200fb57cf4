package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// generateOpenAI serves /v1/generate callers through OpenAI Chat
// Completions bindings. Usage is asked for with
// stream_options.include_usage, so the end event carries it.
var generateOpenAI = pairSpec{
	name: "generate→openai", in: wire.InboundGenerate, up: wire.ShapeOpenAI,
	newUpstream: newOpenAIUpstream, newCaller: newGenerateCaller,
	base: openaiSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "effort is sent as reasoning_effort; budget_tokens → reasoning_effort (below 4096 low, below 16384 medium, else high); enabled without a budget leaves the model's default; reasoning_content (or a string reasoning) comes back as thinking parts"},
		FeatStreaming: {Yes, "text, reasoning_content and tool-call deltas become part events; the final usage chunk fills the end event"},
	},
}
