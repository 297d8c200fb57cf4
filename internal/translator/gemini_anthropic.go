package translator

import (
	"github.com/relay-llm/relay/internal/wire"
)

// geminiAnthropic serves Gemini generateContent callers through Anthropic
// Messages bindings. Anthropic's signed thinking reaches the caller as
// thought parts whose thoughtSignature is prefixed "anthropic:" (redacted
// thinking "anthropic-redacted:"), so a conversation sent back as it came
// replays the signed blocks Anthropic needs around tool use.
var geminiAnthropic = pairSpec{
	name: "gemini→anthropic", in: wire.InboundGemini, up: wire.ShapeAnthropic,
	newUpstream: newAnthropicUpstream, newCaller: newGeminiCaller,
	base: anthropicSupport,
	override: supportTable{
		FeatReasoning:       {Emulated, "thinkingBudget → thinking.budget_tokens (-1 → adaptive, 0 → off); thinkingLevel LOW, MEDIUM, HIGH → budget_tokens 1024, 4096, 16384; thoughts come back (with includeThoughts) as thought parts"},
		FeatThinkingHistory: {Yes, `thought parts whose thoughtSignature Relay prefixed "anthropic:" are replayed as signed thinking; others are dropped`},
		FeatStreaming:       {Yes, "text streams as it comes; each function call is one chunk once its arguments are whole; the last chunk carries finishReason and usageMetadata"},
	},
}
