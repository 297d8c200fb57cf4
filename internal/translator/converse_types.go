package translator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
)

// AWS Bedrock Converse: the wire types both sides share, its stop reasons
// and its usage. Converse is one shape for every Bedrock model (Claude,
// Llama, Mistral, Nova …); Bedrock maps it to each model's own API.

type cvRequest struct {
	Messages        []cvMessage       `json:"messages"`
	System          []cvSystemBlock   `json:"system,omitempty"`
	InferenceConfig *cvInference      `json:"inferenceConfig,omitempty"`
	ToolConfig      *cvToolConfig     `json:"toolConfig,omitempty"`
	Additional      map[string]any    `json:"additionalModelRequestFields,omitempty"`
	RequestMetadata map[string]string `json:"requestMetadata,omitempty"`
}

type cvMessage struct {
	Role    string    `json:"role"`
	Content []cvBlock `json:"content"`
}

type cvSystemBlock struct {
	Text       string        `json:"text,omitempty"`
	CachePoint *cvCachePoint `json:"cachePoint,omitempty"`
}

type cvCachePoint struct {
	Type string `json:"type"`
}

// cvBlock is a content block: exactly one member is set.
type cvBlock struct {
	Text             *string       `json:"text,omitempty"`
	Image            *cvImage      `json:"image,omitempty"`
	Document         *cvDocument   `json:"document,omitempty"`
	ToolUse          *cvToolUse    `json:"toolUse,omitempty"`
	ToolResult       *cvToolResult `json:"toolResult,omitempty"`
	ReasoningContent *cvReasoning  `json:"reasoningContent,omitempty"`
	CachePoint       *cvCachePoint `json:"cachePoint,omitempty"`
	// JSON is a toolResult content block's JSON value.
	JSON json.RawMessage `json:"json,omitempty"`
}

type cvImage struct {
	Format string   `json:"format"`
	Source cvSource `json:"source"`
}

type cvDocument struct {
	Format string   `json:"format"`
	Name   string   `json:"name"`
	Source cvSource `json:"source"`
}

type cvSource struct {
	Bytes string `json:"bytes"` // base64
}

type cvToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type cvToolResult struct {
	ToolUseID string    `json:"toolUseId"`
	Content   []cvBlock `json:"content"`
	Status    string    `json:"status,omitempty"`
}

type cvReasoning struct {
	ReasoningText   *cvReasoningText `json:"reasoningText,omitempty"`
	RedactedContent string           `json:"redactedContent,omitempty"` // base64
}

type cvReasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

type cvInference struct {
	MaxTokens     *int64   `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

type cvToolConfig struct {
	Tools      []cvTool      `json:"tools"`
	ToolChoice *cvToolChoice `json:"toolChoice,omitempty"`
}

type cvTool struct {
	ToolSpec   *cvToolSpec   `json:"toolSpec,omitempty"`
	CachePoint *cvCachePoint `json:"cachePoint,omitempty"`
}

type cvToolSpec struct {
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	InputSchema cvInputSchema `json:"inputSchema"`
}

type cvInputSchema struct {
	JSON json.RawMessage `json:"json"`
}

type cvToolChoice struct {
	Auto *struct{}   `json:"auto,omitempty"`
	Any  *struct{}   `json:"any,omitempty"`
	Tool *cvToolName `json:"tool,omitempty"`
}

type cvToolName struct {
	Name string `json:"name"`
}

// --- answers ---

type cvResponse struct {
	Output struct {
		Message *cvMessage `json:"message"`
	} `json:"output"`
	StopReason string   `json:"stopReason"`
	Usage      *cvUsage `json:"usage"`
}

// cvUsage is Converse's usage: inputTokens excludes the tokens read from
// and written to the prompt cache, as Anthropic's input_tokens does.
type cvUsage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
}

func (u *cvUsage) canonical() canonical.Usage {
	return canonical.Usage{
		Input:      u.InputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
		Output:     u.OutputTokens,
		CacheRead:  u.CacheReadInputTokens,
		CacheWrite: u.CacheWriteInputTokens,
	}
}

// Stream event payloads (ConverseStream), one per :event-type.
type cvStreamEvent struct {
	Role              string          `json:"role"`              // messageStart
	ContentBlockIndex *int            `json:"contentBlockIndex"` // contentBlock*
	Start             *cvBlockStart   `json:"start"`             // contentBlockStart
	Delta             *cvBlockDelta   `json:"delta"`             // contentBlockDelta
	StopReason        string          `json:"stopReason"`        // messageStop
	Usage             *cvUsage        `json:"usage"`             // metadata
	Message           string          `json:"message"`           // exceptions
	Additional        json.RawMessage `json:"additionalModelResponseFields"`
}

type cvBlockStart struct {
	ToolUse *struct {
		ToolUseID string `json:"toolUseId"`
		Name      string `json:"name"`
	} `json:"toolUse"`
}

type cvBlockDelta struct {
	Text    *string `json:"text"`
	ToolUse *struct {
		Input string `json:"input"`
	} `json:"toolUse"`
	ReasoningContent *struct {
		Text            *string `json:"text"`
		Signature       *string `json:"signature"`
		RedactedContent *string `json:"redactedContent"`
	} `json:"reasoningContent"`
}

// --- stop reasons ---

func finishFromConverse(s string) canonical.FinishReason {
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
	case "guardrail_intervened", "content_filtered":
		return canonical.FinishContentFilter
	}
	return canonical.FinishOther
}

// --- ids ---

// converseCallPrefix starts every toolUseId Bedrock mints; a caller's
// prefix in front of it comes off again (canonicalID).
const converseCallPrefix = "tooluse_"

// converseID makes id acceptable as a toolUseId (^[a-zA-Z0-9_-]+$, at
// most 64 characters). Ids that already are pass unchanged; others map,
// deterministically, to a hash, so a call and its result keep matching.
func converseID(id string) string {
	ok := id != "" && len(id) <= 64
	for i := 0; i < len(id) && ok; i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if ok {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "tooluse_rx" + hex.EncodeToString(sum[:12])
}

// converseImageFormat is the Converse image format of a media type, ""
// for one Bedrock does not take.
func converseImageFormat(mediaType string) string {
	switch mediaType {
	case "image/png":
		return "png"
	case "image/jpeg", "image/jpg":
		return "jpeg"
	case "image/gif":
		return "gif"
	case "image/webp":
		return "webp"
	}
	return ""
}

// converseDocFormat is the Converse document format of a media type.
func converseDocFormat(mediaType string) string {
	switch mediaType {
	case "application/pdf":
		return "pdf"
	case "text/plain":
		return "txt"
	case "text/csv":
		return "csv"
	case "text/html":
		return "html"
	case "text/markdown":
		return "md"
	}
	return ""
}

// converseDocName is a document name Bedrock accepts (alphanumerics,
// single spaces, hyphens, parentheses, brackets); it must be unique in
// the request, so the index is part of it.
func converseDocName(filename string, n int) string {
	var b strings.Builder
	space := false
	for _, c := range filename {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '(' || c == ')' || c == '[' || c == ']'
		switch {
		case ok:
			b.WriteRune(c)
			space = false
		case !space && b.Len() > 0:
			b.WriteByte(' ')
			space = true
		}
	}
	name := strings.TrimSpace(b.String())
	if name == "" {
		name = "document"
	}
	return name + "-" + string(rune('0'+n%10))
}
