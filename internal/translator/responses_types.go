package translator

import (
	"encoding/json"

	"github.com/relay-llm/relay/internal/canonical"
)

// OpenAI Responses: the wire types both sides share (the upstream's
// request and answers, then the caller's request), and the finish
// reasons. The Responses caller side is responses_caller.go (decode a
// request), responses_caller_answer.go (encode a response object) and
// responses_caller_stream.go (encode the event stream and errors); the
// openai_responses upstream side is responses_upstream.go (encode a
// request) and responses_upstream_answer.go (decode response objects and
// events).

// --- wire types ---

type respRequest struct {
	Model             string            `json:"model"`
	Input             []any             `json:"input"`
	Instructions      string            `json:"instructions,omitempty"`
	MaxOutputTokens   *int64            `json:"max_output_tokens,omitempty"`
	Temperature       *float64          `json:"temperature,omitempty"`
	TopP              *float64          `json:"top_p,omitempty"`
	Tools             []respTool        `json:"tools,omitempty"`
	ToolChoice        any               `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	Text              *respText         `json:"text,omitempty"`
	Reasoning         *respReasoning    `json:"reasoning,omitempty"`
	Metadata          map[string]string `json:"metadata,omitempty"`
	SafetyIdentifier  string            `json:"safety_identifier,omitempty"`
	PromptCacheKey    string            `json:"prompt_cache_key,omitempty"`
	ServiceTier       string            `json:"service_tier,omitempty"`
	Store             bool              `json:"store"`
	Stream            bool              `json:"stream,omitempty"`
}

type respMessageItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type respInputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type respFunctionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type respFunctionOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output any    `json:"output"`
}

type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict"`
}

type respText struct {
	Format    *respFormat `json:"format,omitempty"`
	Verbosity string      `json:"verbosity,omitempty"`
}

type respFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type respReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type respResponse struct {
	ID                string `json:"id"`
	CreatedAt         int64  `json:"created_at"`
	Model             string `json:"model"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Output []respOutItem `json:"output"`
	Usage  *respUsage    `json:"usage"`
}

type respOutItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Args    string `json:"arguments"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
	EncryptedContent string `json:"encrypted_content"`
}

type respUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (u *respUsage) canonical() canonical.Usage {
	c := canonical.Usage{Input: u.InputTokens, Output: u.OutputTokens}
	if d := u.InputTokensDetails; d != nil {
		c.CacheRead, c.CacheWrite = d.CachedTokens, d.CacheWriteTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		c.Reasoning = d.ReasoningTokens
	}
	return c
}

type respEvent struct {
	Type         string        `json:"type"`
	Response     *respResponse `json:"response"`
	OutputIndex  int           `json:"output_index"`
	ContentIndex int           `json:"content_index"`
	SummaryIndex int           `json:"summary_index"`
	ItemID       string        `json:"item_id"`
	Item         *respOutItem  `json:"item"`
	Part         *struct {
		Type string `json:"type"`
	} `json:"part"`
	Delta     string  `json:"delta"`
	Arguments *string `json:"arguments"`
	Code      string  `json:"code"`
	Message   string  `json:"message"`
}

// --- wire types (the caller's request) ---

// respCallerRequest is a Responses caller's body: every field of
// CreateResponse Relay knows, so that decodeStrict refuses the rest.
type respCallerRequest struct {
	Model             string            `json:"model"`
	Input             json.RawMessage   `json:"input"`
	Instructions      json.RawMessage   `json:"instructions"`
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	MaxOutputTokens   *int64            `json:"max_output_tokens"`
	Temperature       *float64          `json:"temperature"`
	TopP              *float64          `json:"top_p"`
	Text              *respText         `json:"text"`
	Reasoning         *respReasoningIn  `json:"reasoning"`
	Metadata          map[string]string `json:"metadata"`
	User              string            `json:"user"`
	SafetyIdentifier  string            `json:"safety_identifier"`
	PromptCacheKey    string            `json:"prompt_cache_key"`
	ServiceTier       string            `json:"service_tier"`
	Store             *bool             `json:"store"`
	Stream            bool              `json:"stream"`
	StreamOptions     *struct {
		IncludeObfuscation *bool `json:"include_obfuscation"`
	} `json:"stream_options"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Include            []string        `json:"include"`
	Truncation         string          `json:"truncation"`

	// Known fields no translation can carry: present, they are a 400.
	Background   *bool           `json:"background"`
	Prompt       json.RawMessage `json:"prompt"`
	MaxToolCalls *int64          `json:"max_tool_calls"`
	TopLogprobs  *int64          `json:"top_logprobs"`

	// Advisory fields no translation carries (advisoryFields).
	ClientMetadata       json.RawMessage `json:"client_metadata"`
	PromptCacheRetention json.RawMessage `json:"prompt_cache_retention"`
}

type respReasoningIn struct {
	Effort          *string `json:"effort"`
	Summary         *string `json:"summary"`
	GenerateSummary *string `json:"generate_summary"` // deprecated spelling of summary
}

// respInItem is one input item, whatever its type: message (typed or
// not), function_call, function_call_output, reasoning.
type respInItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Status           string          `json:"status"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        *string         `json:"arguments"`
	ParsedArguments  json.RawMessage `json:"parsed_arguments"` // the openai SDKs' decoded copy of Arguments
	Output           json.RawMessage `json:"output"`
	Summary          []respTextIn    `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
	// Namespace is the namespace of a call to a namespaced tool; Relay
	// offers those tools by their own names (see decodeResponsesRequest).
	Namespace string `json:"namespace"`
}

type respTextIn struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// respInPart is one content part of an input message or function output.
type respInPart struct {
	Type        string          `json:"type"`
	Text        *string         `json:"text"`
	ImageURL    *string         `json:"image_url"`
	Detail      string          `json:"detail"`
	FileID      string          `json:"file_id"`
	FileData    string          `json:"file_data"`
	FileURL     string          `json:"file_url"`
	Filename    string          `json:"filename"`
	Refusal     *string         `json:"refusal"`
	Annotations json.RawMessage `json:"annotations"`
	Logprobs    json.RawMessage `json:"logprobs"`
	// Parsed is the openai SDKs' decoded copy of a structured answer.
	Parsed json.RawMessage `json:"parsed"`
}

type respToolIn struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
	// Tools are a namespace's function tools.
	Tools []json.RawMessage `json:"tools"`
}

// --- finish reasons ---

// finishFromResponse maps a Response's status.
func finishFromResponse(r *respResponse, tools bool) canonical.FinishReason {
	switch r.Status {
	case "incomplete":
		if r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter" {
			return canonical.FinishContentFilter
		}
		return canonical.FinishLength
	case "completed":
		if tools {
			return canonical.FinishToolCalls
		}
		return canonical.FinishStop
	}
	return canonical.FinishOther
}

// --- thinking other providers signed ---

// Relay's encrypted_content for thinking other providers signed: a
// Responses caller replays reasoning items as they came, so Anthropic's
// signature (or redacted data) rides in the one opaque field Responses has
// for it and goes back to Anthropic on the next turn.
const (
	respAnthropicThinking = "rant_"
	respAnthropicRedacted = "rantr_"
)
