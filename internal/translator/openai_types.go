package translator

import (
	"encoding/json"

	"github.com/relay-llm/relay/internal/canonical"
)

// OpenAI Chat Completions: the wire types both sides share, and the
// finish reasons. The chat caller side is openai_caller.go (decode a
// request) and openai_caller_answer.go (encode completions and chunks);
// the openai upstream side is openai_upstream.go (encode a request) and
// openai_upstream_answer.go (decode completions and chunks).

// --- wire types ---

type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	MaxTokens           *int64          `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	// TopK is not OpenAI's: OpenAI-compatible servers (vLLM, Ollama) and
	// the clients that talk to them send it; a sampling hint (advisory).
	TopK             *int64              `json:"top_k,omitempty"`
	PresencePenalty  *float64            `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64            `json:"frequency_penalty,omitempty"`
	Seed             *int64              `json:"seed,omitempty"`
	LogitBias        json.RawMessage     `json:"logit_bias,omitempty"`
	Stop             json.RawMessage     `json:"stop,omitempty"`
	N                *int                `json:"n,omitempty"`
	Logprobs         *bool               `json:"logprobs,omitempty"`
	TopLogprobs      *int64              `json:"top_logprobs,omitempty"`
	ResponseFormat   *chatResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort  string              `json:"reasoning_effort,omitempty"`
	Verbosity        string              `json:"verbosity,omitempty"`
	Metadata         map[string]string   `json:"metadata,omitempty"`
	User             string              `json:"user,omitempty"`
	SafetyIdentifier string              `json:"safety_identifier,omitempty"`
	PromptCacheKey   string              `json:"prompt_cache_key,omitempty"`
	ServiceTier      string              `json:"service_tier,omitempty"`
	Store            *bool               `json:"store,omitempty"`
	Stream           bool                `json:"stream,omitempty"`
	StreamOptions    *chatStreamOptions  `json:"stream_options,omitempty"`

	// Advisory fields no translation carries (advisoryFields).
	PromptCacheRetention json.RawMessage `json:"prompt_cache_retention,omitempty"`

	// Known fields no translation can carry: present, they are a 400.
	Modalities       json.RawMessage `json:"modalities,omitempty"`
	Audio            json.RawMessage `json:"audio,omitempty"`
	Prediction       json.RawMessage `json:"prediction,omitempty"`
	WebSearchOptions json.RawMessage `json:"web_search_options,omitempty"`
	Functions        json.RawMessage `json:"functions,omitempty"`
	FunctionCall     json.RawMessage `json:"function_call,omitempty"`
}

type chatStreamOptions struct {
	IncludeUsage       *bool `json:"include_usage,omitempty"`
	IncludeObfuscation *bool `json:"include_obfuscation,omitempty"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Refusal    *string         `json:"refusal,omitempty"`
	// Relay's extension, as it puts them on responses: the reasoning text
	// and the signed thinking blocks to replay.
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ThinkingBlocks   []chatThinking  `json:"thinking_blocks,omitempty"`
	Audio            json.RawMessage `json:"audio,omitempty"`
	FunctionCall     json.RawMessage `json:"function_call,omitempty"`
	// Annotations are an answer's citations, pushed back with it.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Parsed is what the openai SDKs' parse and stream helpers add to an
	// answer (its JSON content, decoded), pushed back with it.
	Parsed json.RawMessage `json:"parsed,omitempty"`
	// CacheControl is Anthropic's cache breakpoint, which OpenAI-compatible
	// clients (the AI SDK's openai-compatible provider, opencode) set on
	// a whole message: it applies to the message's last part.
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type chatThinking struct {
	Type      string `json:"type"` // thinking | redacted_thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

type chatPart struct {
	Type       string        `json:"type"`
	Text       *string       `json:"text,omitempty"`
	ImageURL   *chatImageURL `json:"image_url,omitempty"`
	InputAudio *chatAudio    `json:"input_audio,omitempty"`
	File       *chatFile     `json:"file,omitempty"`
	Refusal    *string       `json:"refusal,omitempty"`
	// CacheControl is Anthropic's cache breakpoint on this part.
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type chatImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type chatAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

type chatFile struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type chatToolCall struct {
	Index    *int             `json:"index,omitempty"` // stream deltas only
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function chatFunctionCall `json:"function"`
	// CacheControl is a cache breakpoint on a pushed-back call, as opencode
	// sends for Claude models; never sent.
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type chatFunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
	// ParsedArguments is the SDKs' decoded copy of Arguments on a pushed-back
	// answer; never sent.
	ParsedArguments json.RawMessage `json:"parsed_arguments,omitempty"`
}

type chatTool struct {
	Type     string          `json:"type"`
	Function *chatFunction   `json:"function,omitempty"`
	Custom   json.RawMessage `json:"custom,omitempty"`
	// CacheControl is Anthropic's cache breakpoint after this tool.
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type chatNamedChoice struct {
	Type     string `json:"type"`
	Function *struct {
		Name string `json:"name"`
	} `json:"function,omitempty"`
	AllowedTools json.RawMessage `json:"allowed_tools,omitempty"`
	Custom       json.RawMessage `json:"custom,omitempty"`
}

type chatResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *chatJSONSchema `json:"json_schema,omitempty"`
}

type chatJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *chatUsage) canonical() canonical.Usage {
	c := canonical.Usage{Input: u.PromptTokens, Output: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		c.CacheRead, c.CacheWrite = d.CachedTokens, d.CacheWriteTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		c.Reasoning = d.ReasoningTokens
	}
	return c
}

// chatCompletion is an upstream completion or chunk: the fields Relay reads.
type chatCompletion struct {
	ID      string       `json:"id"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage"`
	Error   *struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatOutMessage `json:"message"`
	Delta        *chatOutMessage `json:"delta"`
	FinishReason *string         `json:"finish_reason"`
}

type chatOutMessage struct {
	Content          *string        `json:"content"`
	Refusal          *string        `json:"refusal"`
	ReasoningContent *string        `json:"reasoning_content"`
	ToolCalls        []chatToolCall `json:"tool_calls"`
	// Reasoning is the other servers' spelling of reasoning_content
	// (Ollama, Groq, Together, OpenRouter; newer vLLM): a string. It is
	// raw because OpenAI-like servers may put an object there.
	Reasoning json.RawMessage `json:"reasoning"`
}

// reasoning is the message's or delta's reasoning text, from whichever
// member the server uses (profile.Answer.Reasoning names it per host);
// reasoning_content wins when a server sends both, so the text is read
// once. A reasoning member that is not a string is not reasoning text and
// is left alone.
func (m *chatOutMessage) reasoning() string {
	if m.ReasoningContent != nil && *m.ReasoningContent != "" {
		return *m.ReasoningContent
	}
	if len(m.Reasoning) < 2 || m.Reasoning[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(m.Reasoning, &s) != nil {
		return ""
	}
	return s
}

// --- finish reasons ---

func chatFinish(f canonical.FinishReason) string {
	switch f {
	case canonical.FinishLength, canonical.FinishContextWindow:
		return "length"
	case canonical.FinishToolCalls:
		return "tool_calls"
	case canonical.FinishContentFilter, canonical.FinishRefusal:
		return "content_filter"
	}
	return "stop"
}

func finishFromChat(s string) canonical.FinishReason {
	switch s {
	case "stop":
		return canonical.FinishStop
	case "length":
		return canonical.FinishLength
	case "tool_calls", "function_call":
		return canonical.FinishToolCalls
	case "content_filter":
		return canonical.FinishContentFilter
	}
	return canonical.FinishOther
}
