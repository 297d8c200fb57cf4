package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// geminiOpenAI serves Gemini generateContent callers through OpenAI Chat
// Completions bindings: contents become messages (functionResponse parts
// tool messages paired with their calls), functionDeclarations tools, and
// Chat's answer comes back as a GenerateContentResponse whose function
// calls carry Chat's call ids.
var geminiOpenAI = pairSpec{
	name: "gemini→openai", in: wire.InboundGemini, up: wire.ShapeOpenAI,
	newUpstream: newOpenAIUpstream, newCaller: newGeminiCaller,
	base: openaiSupport,
	override: supportTable{
		FeatReasoning: {Emulated, "thinkingLevel → reasoning_effort; thinkingBudget → reasoning_effort (below 4096 low, below 16384 medium, else high); -1 leaves the model's default; reasoning_content (or a string reasoning) comes back (with includeThoughts) as thought parts"},
		FeatStreaming: {Yes, "text streams as it comes; each function call is one chunk once its arguments are whole; the last chunk carries finishReason and usageMetadata"},
	},
}
