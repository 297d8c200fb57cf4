package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// responsesOpenAI serves OpenAI Responses callers through Chat Completions
// bindings. Input items become messages (function calls and their outputs
// paired by call_id, which is the Chat tool_call id), the Chat answer
// becomes output items; nothing is stored, so Responses state is refused.
var responsesOpenAI = pairSpec{
	name: "responses→openai", in: wire.InboundResponses, up: wire.ShapeOpenAI,
	newUpstream: newStatelessUpstream(newOpenAIUpstream), newCaller: newResponsesCaller,
	base: openaiSupport,
	override: withState(supportTable{
		FeatReasoning:  {Emulated, "reasoning.effort → reasoning_effort; reasoning.summary is not sent (Chat has none); reasoning_content (or a string reasoning) comes back as a reasoning item's summary"},
		FeatJSONSchema: {Yes, `response_format json_schema with the caller's name (else "response") and strict (else true)`},
		FeatStreaming:  {Yes, "chunks become Responses events; Relay asks for include_usage, and response.completed carries the usage"},
	}),
}
