package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// chatGemini serves Chat Completions callers through Gemini bindings.
// Gemini's function calls have no ids and arrive whole: Relay mints
// rgem_ ids that carry the thought signature, and streams each call as one
// argument delta under an index that keeps rising across chunks.
var chatGemini = pairSpec{
	name: "chat→gemini", in: wire.InboundChat, up: wire.ShapeGemini,
	newUpstream: newGeminiUpstream, newCaller: newChatCaller,
	base: geminiSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "reasoning_effort → thinkingConfig.thinkingBudget (none and minimal 0, low 1024, medium 8192, high 24576, xhigh 32768) with includeThoughts; thoughts come back as reasoning_content"},
		FeatStreaming: {Yes, "each chunk's parts become deltas; the last chunk's finishReason and usageMetadata end the stream with the usage chunk (when asked) and [DONE]"},
	},
}
