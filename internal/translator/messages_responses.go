package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// messagesResponses serves Anthropic Messages callers through OpenAI
// Responses bindings: tool_use/tool_result become function_call and
// function_call_output items paired by call_id, and the event stream is
// rebuilt as Anthropic content blocks.
var messagesResponses = pairSpec{
	name: "messages→responses", in: wire.InboundMessages, up: wire.ShapeOpenAIResponses,
	newUpstream: newResponsesUpstream, newCaller: newMessagesCaller,
	base: responsesSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "thinking budget_tokens → reasoning.effort (below 4096 low, below 16384 medium, else high) with summary auto; summaries come back as unsigned thinking blocks"},
		FeatStreaming: {Yes, "message_start carries no input tokens (Responses reports usage at the end); message_delta carries the final counts"},
	},
}
