package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// messagesOpenAI serves Anthropic Messages callers through OpenAI Chat
// Completions bindings. Tool results become tool messages right after
// their assistant turn, object arguments become strings, and the stream
// is rebuilt as Anthropic content blocks with contiguous indices; usage is
// asked for with stream_options.include_usage and repeated in
// message_delta, since Chat reports it only at the end.
var messagesOpenAI = pairSpec{
	name: "messages→openai", in: wire.InboundMessages, up: wire.ShapeOpenAI,
	newUpstream: newOpenAIUpstream, newCaller: newMessagesCaller,
	base: openaiSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "thinking budget_tokens → reasoning_effort (below 4096 low, below 16384 medium, else high); adaptive leaves the model's default; output_config.effort is sent as reasoning_effort; reasoning_content (or a string reasoning) comes back as thinking blocks with an empty signature"},
		FeatStreaming: {Yes, "message_start carries no input tokens (Chat reports usage at the end); message_delta carries the final counts"},
	},
}
