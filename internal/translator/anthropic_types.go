package translator

import (
	"encoding/json"

	"github.com/relay-llm/relay/internal/canonical"
)

// Anthropic Messages: the wire types both sides share, and the stop
// reasons. The messages caller side is anthropic_caller.go (decode a
// request) and anthropic_caller_answer.go (encode messages and their
// events); the anthropic upstream side is anthropic_upstream.go (encode a
// request) and anthropic_upstream_answer.go (decode messages and events).

// --- wire types ---

type anthRequest struct {
	Model         string            `json:"model"`
	MaxTokens     *int64            `json:"max_tokens,omitempty"`
	System        json.RawMessage   `json:"system,omitempty"`
	Messages      []anthMessage     `json:"messages"`
	StopSequences []string          `json:"stop_sequences,omitempty"`
	Temperature   *float64          `json:"temperature,omitempty"`
	TopP          *float64          `json:"top_p,omitempty"`
	TopK          *int64            `json:"top_k,omitempty"`
	Tools         []json.RawMessage `json:"tools,omitempty"`
	ToolChoice    *anthToolChoice   `json:"tool_choice,omitempty"`
	Thinking      *anthThinking     `json:"thinking,omitempty"`
	Metadata      *anthMetadata     `json:"metadata,omitempty"`
	OutputConfig  *anthOutputConfig `json:"output_config,omitempty"`
	ServiceTier   string            `json:"service_tier,omitempty"`
	Stream        bool              `json:"stream,omitempty"`

	// Known fields no translation can carry: present, they are a 400.
	Container  json.RawMessage `json:"container,omitempty"`
	MCPServers json.RawMessage `json:"mcp_servers,omitempty"`

	// Advisory fields no translation carries (advisoryFields).
	ContextManagement json.RawMessage `json:"context_management,omitempty"`
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthRequestOut is the request Relay sends: anthRequest's fields with
// typed messages and tools, so nothing is marshalled twice.
type anthRequestOut struct {
	Model         string            `json:"model"`
	MaxTokens     *int64            `json:"max_tokens"`
	System        []anthBlock       `json:"system,omitempty"`
	Messages      []anthTurn        `json:"messages"`
	StopSequences []string          `json:"stop_sequences,omitempty"`
	Temperature   *float64          `json:"temperature,omitempty"`
	TopP          *float64          `json:"top_p,omitempty"`
	TopK          *int64            `json:"top_k,omitempty"`
	Tools         []anthTool        `json:"tools,omitempty"`
	ToolChoice    *anthToolChoice   `json:"tool_choice,omitempty"`
	Thinking      *anthThinking     `json:"thinking,omitempty"`
	Metadata      *anthMetadata     `json:"metadata,omitempty"`
	OutputConfig  *anthOutputConfig `json:"output_config,omitempty"`
	ServiceTier   string            `json:"service_tier,omitempty"`
	Stream        bool              `json:"stream,omitempty"`
}

type anthTurn struct {
	Role    string      `json:"role"`
	Content []anthBlock `json:"content"`
}

type anthBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text,omitempty"`
	Source       *anthSource     `json:"source,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
	IsError      *bool           `json:"is_error,omitempty"`
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    *string         `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
	Citations    json.RawMessage `json:"citations,omitempty"`
	Title        string          `json:"title,omitempty"`
	Context      string          `json:"context,omitempty"`
}

type anthSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
}

type anthTool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	Strict       *bool           `json:"strict,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
	// DeferLoading is a caller's tool-search hint (advisory); Relay never
	// sends it.
	DeferLoading json.RawMessage `json:"defer_loading,omitempty"`
	// EagerInputStreaming asks Anthropic to stream the tool's input
	// without buffering (the AI SDK sets it on every tool when it
	// streams): a delivery hint, advisory; Relay never sends it.
	EagerInputStreaming json.RawMessage `json:"eager_input_streaming,omitempty"`
}

type anthToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

type anthThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens,omitempty"`
	Display      string `json:"display,omitempty"`
}

type anthMetadata struct {
	UserID string `json:"user_id,omitempty"`
}

type anthOutputConfig struct {
	Format *anthFormat `json:"format,omitempty"`
	Effort string      `json:"effort,omitempty"`
}

type anthFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// anthUsage is Anthropic's usage; message_delta overwrites the fields it
// carries one by one.
type anthUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// anthCounts keeps Anthropic's own counts across a stream.
type anthCounts struct{ input, output, cacheRead, cacheWrite, thinking int64 }

func (a *anthCounts) merge(u *anthUsage) {
	if u == nil {
		return
	}
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&a.input, u.InputTokens)
	set(&a.output, u.OutputTokens)
	set(&a.cacheWrite, u.CacheCreationInputTokens)
	set(&a.cacheRead, u.CacheReadInputTokens)
	if u.OutputTokensDetails != nil {
		a.thinking = u.OutputTokensDetails.ThinkingTokens
	}
}

// canonical maps by WIRE.md: Anthropic's input_tokens excludes cache reads
// and writes.
func (a *anthCounts) canonical() canonical.Usage {
	return canonical.Usage{Input: a.input + a.cacheRead + a.cacheWrite, Output: a.output, CacheRead: a.cacheRead, CacheWrite: a.cacheWrite, Reasoning: a.thinking}
}

type anthResponse struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Model        string      `json:"model"`
	Content      []anthBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        *anthUsage  `json:"usage"`
}

type anthEvent struct {
	Type         string        `json:"type"`
	Index        int           `json:"index"`
	Message      *anthResponse `json:"message"`
	ContentBlock *anthBlock    `json:"content_block"`
	Delta        *struct {
		Type         string  `json:"type"`
		Text         string  `json:"text"`
		PartialJSON  string  `json:"partial_json"`
		Thinking     string  `json:"thinking"`
		Signature    string  `json:"signature"`
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage *anthUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// --- stop reasons ---

func anthropicStop(f canonical.FinishReason) string {
	switch f {
	case canonical.FinishStopSequence:
		return "stop_sequence"
	case canonical.FinishLength:
		return "max_tokens"
	case canonical.FinishContextWindow:
		return "model_context_window_exceeded"
	case canonical.FinishToolCalls:
		return "tool_use"
	case canonical.FinishContentFilter, canonical.FinishRefusal:
		return "refusal"
	case canonical.FinishPause:
		return "pause_turn"
	}
	return "end_turn"
}

func finishFromAnthropic(s string) canonical.FinishReason {
	switch s {
	case "end_turn":
		return canonical.FinishStop
	case "stop_sequence":
		return canonical.FinishStopSequence
	case "max_tokens":
		return canonical.FinishLength
	case "model_context_window_exceeded":
		return canonical.FinishContextWindow
	case "tool_use":
		return canonical.FinishToolCalls
	case "refusal":
		return canonical.FinishRefusal
	case "pause_turn":
		return canonical.FinishPause
	}
	return canonical.FinishOther
}
