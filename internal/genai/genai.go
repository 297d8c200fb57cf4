// Package genai holds the OpenTelemetry GenAI semantic conventions Relay
// emits next to its own names: the attribute keys on spans, the label names
// of the gen_ai_* metrics on /metrics, and how Relay's words (inbound shape,
// a host's provider) map onto the conventions' values.
//
// The conventions are still marked Development upstream; Relay pins one
// version (SemconvVersion) and changes it deliberately. It imports nothing
// of Relay's, so both the proxy (spans) and the metrics registry use it.
package genai

import "strings"

// SemconvVersion is the semantic-conventions release whose GenAI attribute
// and metric names Relay emits.
const SemconvVersion = "1.41.0"

// Span attribute keys.
const (
	OperationName       = "gen_ai.operation.name"
	ProviderName        = "gen_ai.provider.name"
	RequestModel        = "gen_ai.request.model"
	ResponseModel       = "gen_ai.response.model"
	InputTokens         = "gen_ai.usage.input_tokens"
	OutputTokens        = "gen_ai.usage.output_tokens"
	CacheReadTokens     = "gen_ai.usage.cache_read.input_tokens"
	CacheCreationTokens = "gen_ai.usage.cache_creation.input_tokens"
	ReasoningTokens     = "gen_ai.usage.reasoning.output_tokens"
	TokenType           = "gen_ai.token.type"
	ErrorType           = "error.type"
	TokenTypeInput      = "input"
	TokenTypeOutput     = "output"
	OperationChat       = "chat"
	OperationEmbeddings = "embeddings"
	OperationGenerate   = "generate_content"
	ProviderGemini      = "gcp.gemini"
	// The tool attributes of an execute_tool operation, and the MCP
	// conventions' method name, for the MCP gateway's tools/call spans.
	ToolName             = "gen_ai.tool.name"
	ToolType             = "gen_ai.tool.type"
	ToolTypeExtension    = "extension"
	OperationExecuteTool = "execute_tool"
	MCPMethodName        = "mcp.method.name"
	ProviderUnrecognised = "_OTHER"
)

// Operation names the GenAI operation of a request by its inbound shape
// (wire.Inbound's String form), "" for requests that are not a model
// operation (token counting, model lists).
func Operation(inbound string) string {
	switch {
	case strings.Contains(inbound, "count_tokens"), inbound == "", inbound == "none":
		return ""
	case strings.Contains(inbound, "embed"):
		return OperationEmbeddings
	case strings.HasPrefix(inbound, "gemini"):
		return OperationGenerate
	}
	return OperationChat
}

// Provider maps a host's provider onto the conventions' provider names:
// openai and anthropic as they are, google as gcp.gemini, anything else
// (your own vLLM or Ollama) as _OTHER.
func Provider(hostProvider string) string {
	switch strings.ToLower(hostProvider) {
	case "openai":
		return "openai"
	case "anthropic":
		return "anthropic"
	case "google", "gemini":
		return ProviderGemini
	}
	return ProviderUnrecognised
}
