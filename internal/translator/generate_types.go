package translator

import "encoding/json"

// Relay's own shape, /v1/generate: the canonical request, response and
// stream as a documented JSON wire shape (docs/inference-api.md,
// openapi/inference.yaml). Only the caller side exists: a generate request
// is always served through a binding of a provider's shape. This file
// holds the wire types; generate_caller.go decodes a request and
// generate_caller_answer.go encodes answers.
//
// Request: system (a string or text parts), messages with typed parts
// (text, image, tool_call, tool_result, thinking, redacted_thinking),
// tools, tool_choice, sampling, stop, max_output_tokens, response_format,
// reasoning, metadata, user, stream. Response: content parts, finish_reason,
// usage. Stream: SSE events start, part_start, delta, part_end and a
// terminal end that carries finish_reason and usage; error ends a stream
// that failed.

// --- wire types ---

type genRequest struct {
	Model             string             `json:"model"`
	System            json.RawMessage    `json:"system,omitempty"`
	Messages          []genMessage       `json:"messages"`
	Tools             []genTool          `json:"tools,omitempty"`
	ToolChoice        json.RawMessage    `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool              `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   *int64             `json:"max_output_tokens,omitempty"`
	Temperature       *float64           `json:"temperature,omitempty"`
	TopP              *float64           `json:"top_p,omitempty"`
	TopK              *int64             `json:"top_k,omitempty"`
	Seed              *int64             `json:"seed,omitempty"`
	PresencePenalty   *float64           `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64           `json:"frequency_penalty,omitempty"`
	Stop              []string           `json:"stop,omitempty"`
	ResponseFormat    *genResponseFormat `json:"response_format,omitempty"`
	Reasoning         *genReasoning      `json:"reasoning,omitempty"`
	Metadata          map[string]string  `json:"metadata,omitempty"`
	User              string             `json:"user,omitempty"`
	Stream            bool               `json:"stream,omitempty"`
}

type genMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// genPart is every part type's fields in one struct; decodeGenPart checks
// that a part carries only its own type's.
type genPart struct {
	Type string  `json:"type"`
	Text *string `json:"text,omitempty"`
	// image
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	Detail    string `json:"detail,omitempty"`
	// tool_call
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// tool_result
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Content    json.RawMessage `json:"content,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	// thinking, redacted_thinking (Data), tool_call
	Signature string `json:"signature,omitempty"`
	Origin    string `json:"origin,omitempty"`
}

type genTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type genToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type genResponseFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type genReasoning struct {
	Enabled      *bool  `json:"enabled,omitempty"`
	Effort       string `json:"effort,omitempty"`
	BudgetTokens *int64 `json:"budget_tokens,omitempty"`
}
