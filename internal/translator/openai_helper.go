package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Chat Completions: the chat caller side (decode a request, encode
// completions and chunks) and the openai upstream side (encode a request,
// decode completions and chunks).

// --- wire types ---

type chatRequest struct {
	Model               string              `json:"model"`
	Messages            []chatMessage       `json:"messages"`
	Tools               []chatTool          `json:"tools,omitempty"`
	ToolChoice          json.RawMessage     `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool               `json:"parallel_tool_calls,omitempty"`
	MaxTokens           *int64              `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64              `json:"max_completion_tokens,omitempty"`
	Temperature         *float64            `json:"temperature,omitempty"`
	TopP                *float64            `json:"top_p,omitempty"`
	PresencePenalty     *float64            `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64            `json:"frequency_penalty,omitempty"`
	Seed                *int64              `json:"seed,omitempty"`
	LogitBias           json.RawMessage     `json:"logit_bias,omitempty"`
	Stop                json.RawMessage     `json:"stop,omitempty"`
	N                   *int                `json:"n,omitempty"`
	Logprobs            *bool               `json:"logprobs,omitempty"`
	TopLogprobs         *int64              `json:"top_logprobs,omitempty"`
	ResponseFormat      *chatResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string              `json:"reasoning_effort,omitempty"`
	Verbosity           string              `json:"verbosity,omitempty"`
	Metadata            map[string]string   `json:"metadata,omitempty"`
	User                string              `json:"user,omitempty"`
	SafetyIdentifier    string              `json:"safety_identifier,omitempty"`
	PromptCacheKey      string              `json:"prompt_cache_key,omitempty"`
	ServiceTier         string              `json:"service_tier,omitempty"`
	Store               *bool               `json:"store,omitempty"`
	Stream              bool                `json:"stream,omitempty"`
	StreamOptions       *chatStreamOptions  `json:"stream_options,omitempty"`

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

// ============================================================
// Caller side: decode a Chat request.
// ============================================================

func decodeChatRequest(body []byte, r *canonical.Request) error {
	var q chatRequest
	if err := decodeStrict(body, &q); err != nil {
		return err
	}
	switch {
	case q.Model == "":
		return badField("model", "a model is required")
	case len(q.Messages) == 0:
		return badField("messages", "at least one message is required")
	case !isNull(q.Audio):
		return unsupported("audio", "audio output")
	case !isNull(q.Modalities) && !textOnly(q.Modalities):
		return unsupported("modalities", "only text output")
	case !isNull(q.Prediction):
		return unsupported("prediction", "predicted outputs")
	case !isNull(q.WebSearchOptions):
		return unsupported("web_search_options", "built-in web search")
	case !isNull(q.Functions), !isNull(q.FunctionCall):
		return unsupported("functions", "deprecated functions; use tools")
	}
	r.Model = q.Model
	if present(q.PromptCacheRetention) {
		advise(r, "prompt_cache_retention")
	}
	leading := true
	for i := range q.Messages {
		m := &q.Messages[i]
		at := "messages[" + strconv.Itoa(i) + "]"
		if m.Role != "system" && m.Role != "developer" {
			leading = false
		}
		if !isNull(m.Audio) || !isNull(m.FunctionCall) {
			return unsupported(at+".audio", "audio and deprecated function_call history")
		}
		if present(m.Annotations) {
			advise(r, "messages[].annotations")
		}
		if present(m.Parsed) {
			advise(r, "messages[].parsed")
		}
		switch m.Role {
		case "system", "developer":
			parts, err := chatContent(m.Content, at+".content", false)
			if err != nil {
				return err
			}
			if leading {
				r.System = append(r.System, parts...)
			} else {
				r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleSystem, Parts: parts, Name: m.Name})
			}
		case "user":
			parts, err := chatContent(m.Content, at+".content", true)
			if err != nil {
				return err
			}
			r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleUser, Parts: parts, Name: m.Name})
		case "assistant":
			msg := canonical.Message{Role: canonical.RoleAssistant, Name: m.Name}
			for j, tb := range m.ThinkingBlocks {
				switch tb.Type {
				case "thinking":
					// Only Anthropic answers carry signed blocks (see the
					// chat caller encoder), so the signature is Anthropic's.
					msg.Parts = append(msg.Parts, canonical.Part{Type: canonical.PartThinking, Text: tb.Thinking, Signature: tb.Signature, Origin: originIf(tb.Signature, canonical.OriginAnthropic)})
				case "redacted_thinking":
					msg.Parts = append(msg.Parts, canonical.Part{Type: canonical.PartRedactedThinking, Signature: tb.Data, Origin: canonical.OriginAnthropic})
				default:
					return badField(fmt.Sprintf("%s.thinking_blocks[%d].type", at, j), "expected thinking or redacted_thinking")
				}
			}
			parts, err := chatContent(m.Content, at+".content", false)
			if err != nil {
				return err
			}
			msg.Parts = append(msg.Parts, parts...)
			if m.Refusal != nil && *m.Refusal != "" {
				msg.Parts = append(msg.Parts, canonical.Part{Type: canonical.PartRefusal, Text: *m.Refusal})
			}
			for j := range m.ToolCalls {
				tc := &m.ToolCalls[j]
				if tc.Type != "" && tc.Type != "function" {
					return unsupported(fmt.Sprintf("%s.tool_calls[%d].type", at, j), "custom tool calls")
				}
				if tc.ID == "" || tc.Function.Name == "" {
					return badField(fmt.Sprintf("%s.tool_calls[%d]", at, j), "a tool call needs an id and a function name")
				}
				if present(tc.Function.ParsedArguments) {
					advise(r, "messages[].tool_calls[].function.parsed_arguments")
				}
				msg.Parts = append(msg.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{
					ID: canonicalID(chatCallPrefix, tc.ID), Name: tc.Function.Name, Arguments: tc.Function.Arguments,
				}})
			}
			r.Messages = append(r.Messages, msg)
		case "tool":
			if m.ToolCallID == "" {
				return badField(at+".tool_call_id", "a tool message needs the id of the call it answers")
			}
			parts, err := chatContent(m.Content, at+".content", false)
			if err != nil {
				return err
			}
			r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleTool, Parts: []canonical.Part{{
				Type: canonical.PartToolResult, ToolResult: &canonical.ToolResult{CallID: canonicalID(chatCallPrefix, m.ToolCallID), Content: parts},
			}}})
		case "function":
			return unsupported(at+".role", "deprecated function messages; use tool")
		default:
			return badField(at+".role", "unknown role %q", m.Role)
		}
	}
	for i := range q.Tools {
		t := &q.Tools[i]
		at := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "function" {
			return unsupported(at+".type", "only function tools")
		}
		if t.Function == nil || t.Function.Name == "" {
			return badField(at+".function.name", "a function tool needs a name")
		}
		r.Tools = append(r.Tools, canonical.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters, Strict: t.Function.Strict})
	}
	if err := chatToolChoice(q.ToolChoice, &r.ToolChoice); err != nil {
		return err
	}
	r.ParallelToolCalls = q.ParallelToolCalls
	r.MaxOutputTokens = q.MaxCompletionTokens
	if r.MaxOutputTokens == nil {
		r.MaxOutputTokens = q.MaxTokens
	}
	r.Temperature, r.TopP = q.Temperature, q.TopP
	r.PresencePenalty, r.FrequencyPenalty = q.PresencePenalty, q.FrequencyPenalty
	r.Seed = q.Seed
	if !isNull(q.LogitBias) && string(bytes.TrimSpace(q.LogitBias)) != "{}" {
		r.LogitBias = q.LogitBias
	}
	stop, err := stopList(q.Stop, "stop")
	if err != nil {
		return err
	}
	r.Stop = stop
	if q.N != nil {
		r.N = *q.N
	}
	r.Logprobs = q.Logprobs != nil && *q.Logprobs
	r.TopLogprobs = q.TopLogprobs
	if f := q.ResponseFormat; f != nil {
		switch f.Type {
		case "text":
		case "json_object":
			r.ResponseFormat = &canonical.ResponseFormat{Type: canonical.FormatJSONObject}
		case "json_schema":
			if f.JSONSchema == nil {
				return badField("response_format.json_schema", "a json_schema response format needs json_schema")
			}
			s := f.JSONSchema
			r.ResponseFormat = &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: s.Name, Description: s.Description, Schema: s.Schema, Strict: s.Strict}
		default:
			return badField("response_format.type", "unknown type %q", f.Type)
		}
	}
	if q.ReasoningEffort != "" {
		r.Reasoning = &canonical.Reasoning{Effort: q.ReasoningEffort}
	}
	r.Verbosity = q.Verbosity
	if len(q.Metadata) > 0 {
		r.Metadata = q.Metadata
	}
	r.User = q.SafetyIdentifier
	if r.User == "" {
		r.User = q.User
	}
	r.PromptCacheKey, r.ServiceTier = q.PromptCacheKey, q.ServiceTier
	if q.Store != nil && *q.Store {
		r.State = &canonical.State{Store: q.Store}
	}
	r.Stream = q.Stream
	if o := q.StreamOptions; o != nil && o.IncludeUsage != nil {
		r.IncludeUsage = *o.IncludeUsage
	}
	return nil
}

func originIf(sig string, o canonical.Origin) canonical.Origin {
	if sig == "" {
		return canonical.OriginNone
	}
	return o
}

func textOnly(raw json.RawMessage) bool {
	var m []string
	return json.Unmarshal(raw, &m) == nil && (len(m) == 0 || len(m) == 1 && m[0] == "text")
}

// stopList reads a stop field: a string or an array of strings.
func stopList(raw json.RawMessage, field string) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badField(field, "expected a string or an array of strings")
	}
	return many, nil
}

// chatContent reads a message's content: a string, null, or parts. Media
// parts are allowed in user messages only.
func chatContent(raw json.RawMessage, at string, media bool) ([]canonical.Part, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, nil
	}
	if s, ok, err := textContent(raw, at); ok {
		if err != nil {
			return nil, err
		}
		return []canonical.Part{{Type: canonical.PartText, Text: s}}, nil
	}
	var parts []chatPart
	if err := strictUnmarshal(raw, &parts, at); err != nil {
		return nil, err
	}
	out := make([]canonical.Part, 0, len(parts))
	for i := range parts {
		p := &parts[i]
		pat := at + "[" + strconv.Itoa(i) + "]"
		switch p.Type {
		case "text":
			if p.Text == nil {
				return nil, badField(pat+".text", "a text part needs text")
			}
			out = append(out, canonical.Part{Type: canonical.PartText, Text: *p.Text})
		case "refusal":
			if p.Refusal != nil {
				out = append(out, canonical.Part{Type: canonical.PartRefusal, Text: *p.Refusal})
			}
		case "image_url":
			if !media {
				return nil, badField(pat+".type", "images are allowed in user messages only")
			}
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return nil, badField(pat+".image_url.url", "an image part needs a URL")
			}
			img := &canonical.Image{Detail: p.ImageURL.Detail}
			if mt, data, ok := parseDataURI(p.ImageURL.URL); ok {
				img.MediaType, img.Data = mt, data
			} else if strings.HasPrefix(p.ImageURL.URL, "data:") {
				return nil, badField(pat+".image_url.url", "a data URI must be data:<media type>;base64,<data>")
			} else {
				img.URL = p.ImageURL.URL
			}
			out = append(out, canonical.Part{Type: canonical.PartImage, Image: img})
		case "input_audio":
			if !media || p.InputAudio == nil {
				return nil, badField(pat+".input_audio", "audio is allowed in user messages only")
			}
			out = append(out, canonical.Part{Type: canonical.PartAudio, Audio: &canonical.Audio{Data: p.InputAudio.Data, Format: p.InputAudio.Format}})
		case "file":
			if !media || p.File == nil {
				return nil, badField(pat+".file", "files are allowed in user messages only")
			}
			f := &canonical.File{FileID: p.File.FileID, Filename: p.File.Filename}
			if mt, data, ok := parseDataURI(p.File.FileData); ok {
				f.MediaType, f.Data = mt, data
			} else if p.File.FileData != "" {
				f.Data = p.File.FileData
			}
			out = append(out, canonical.Part{Type: canonical.PartFile, File: f})
		default:
			return nil, badField(pat+".type", "unknown content part type %q", p.Type)
		}
	}
	return out, nil
}

// strictUnmarshal decodes a nested value refusing unknown fields; errors
// name the field under at.
func strictUnmarshal(raw json.RawMessage, v any, at string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		we, _ := bodyError(err).(*wire.Error)
		if we == nil {
			return badField(at, "malformed value")
		}
		if we.Param != "" {
			we.Param = at + "." + we.Param
			if we.Kind == wire.ErrUnsupportedFeature {
				we.Msg = fmt.Sprintf("The field %q is not one Relay can translate to another shape; send it only to a model bound in the caller's own shape.", we.Param)
			} else {
				we.Msg = fmt.Sprintf("Invalid %q: malformed value.", we.Param)
			}
		}
		return we
	}
	return nil
}

func chatToolChoice(raw json.RawMessage, tc *canonical.ToolChoice) error {
	if isNull(raw) {
		return nil
	}
	if ok, err := toolChoiceMode(raw, tc); ok {
		return err
	}
	var named chatNamedChoice
	if err := strictUnmarshal(raw, &named, "tool_choice"); err != nil {
		return err
	}
	if named.Type != "function" || named.Function == nil || named.Function.Name == "" {
		return unsupported("tool_choice", "only none, auto, required or a named function")
	}
	tc.Mode, tc.Name = canonical.ToolChoiceTool, named.Function.Name
	return nil
}

// ============================================================
// Caller side: encode completions and chunks.
// ============================================================

// chatCaller writes answers for a Chat Completions caller.
type chatCaller struct {
	req          *canonical.Request
	includeUsage bool

	// Stream state.
	prefix   []byte // "data: {…,"choices":[" — the part every chunk repeats
	started  bool
	finished bool
	parts    []chatPartState // by canonical part index
	nextTool int
	usage    canonical.Usage
}

type chatPartState struct {
	kind     canonical.PartType
	tool     int // the per-response tool-call index
	argsSent bool
	origin   canonical.Origin
	thinking []byte // thinking text, for the signed block
	sig      []byte
}

func newChatCaller(r *canonical.Request) caller {
	return &chatCaller{req: r, includeUsage: r.IncludeUsage}
}

func chatID(id string) string {
	if id == "" {
		return "chatcmpl-relay"
	}
	if strings.HasPrefix(id, "chatcmpl-") {
		return id
	}
	return "chatcmpl-" + id
}

func appendChatUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = appendInt(dst, u.Input)
	dst = append(dst, `,"completion_tokens":`...)
	dst = appendInt(dst, u.Output)
	dst = append(dst, `,"total_tokens":`...)
	dst = appendInt(dst, u.Total())
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = appendInt(dst, u.CacheRead)
	if u.CacheWrite > 0 {
		dst = append(dst, `,"cache_write_tokens":`...)
		dst = appendInt(dst, u.CacheWrite)
	}
	dst = append(dst, `},"completion_tokens_details":{"reasoning_tokens":`...)
	dst = appendInt(dst, u.Reasoning)
	return append(dst, "}}"...)
}

func (c *chatCaller) response(dst []byte, r *canonical.Response) []byte {
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, chatID(r.ID))
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = appendInt(dst, r.Created)
	dst = append(dst, `,"model":`...)
	dst = wire.AppendString(dst, r.Model)
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	var text, refusal, reasoning strings.Builder
	hasText, hasRefusal := false, false
	var calls, blocks []*canonical.Part
	for i := range r.Parts {
		p := &r.Parts[i]
		switch p.Type {
		case canonical.PartText:
			hasText = true
			text.WriteString(p.Text)
		case canonical.PartRefusal:
			hasRefusal = true
			refusal.WriteString(p.Text)
		case canonical.PartThinking:
			reasoning.WriteString(p.Text)
			if p.Origin == canonical.OriginAnthropic && p.Signature != "" {
				blocks = append(blocks, p)
			}
		case canonical.PartRedactedThinking:
			blocks = append(blocks, p)
		case canonical.PartToolCall:
			calls = append(calls, p)
		}
	}
	if hasText || len(calls) == 0 && !hasRefusal {
		dst = wire.AppendString(dst, text.String())
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"refusal":`...)
	if hasRefusal {
		dst = wire.AppendString(dst, refusal.String())
	} else {
		dst = append(dst, "null"...)
	}
	if len(calls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i, p := range calls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = wire.AppendString(dst, callerID(chatCallPrefix, p.ToolCall.ID))
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = wire.AppendString(dst, p.ToolCall.Name)
			dst = append(dst, `,"arguments":`...)
			args := p.ToolCall.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			dst = wire.AppendString(dst, args)
			dst = append(dst, "}}"...)
		}
		dst = append(dst, ']')
	}
	if reasoning.Len() > 0 {
		dst = append(dst, `,"reasoning_content":`...)
		dst = wire.AppendString(dst, reasoning.String())
	}
	if len(blocks) > 0 {
		dst = append(dst, `,"thinking_blocks":[`...)
		for i, p := range blocks {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendThinkingBlock(dst, p.Type, p.Text, p.Signature)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"annotations":[]},"logprobs":null,"finish_reason":`...)
	finish := r.Finish
	if finish == canonical.FinishStop && len(calls) > 0 {
		finish = canonical.FinishToolCalls
	}
	dst = wire.AppendString(dst, chatFinish(finish))
	dst = append(dst, `}],"usage":`...)
	dst = appendChatUsage(dst, r.Usage)
	return append(dst, "}\n"...)
}

func appendThinkingBlock(dst []byte, typ canonical.PartType, text, sig string) []byte {
	if typ == canonical.PartRedactedThinking {
		dst = append(dst, `{"type":"redacted_thinking","data":`...)
		dst = wire.AppendString(dst, sig)
		return append(dst, '}')
	}
	dst = append(dst, `{"type":"thinking","thinking":`...)
	dst = wire.AppendString(dst, text)
	dst = append(dst, `,"signature":`...)
	dst = wire.AppendString(dst, sig)
	return append(dst, '}')
}

func (c *chatCaller) part(i int) *chatPartState {
	for len(c.parts) <= i {
		c.parts = append(c.parts, chatPartState{tool: -1})
	}
	return &c.parts[i]
}

// openChunk starts a chunk with one choice and opens its delta.
func (c *chatCaller) openChunk(dst []byte) []byte {
	dst = append(dst, c.prefix...)
	return append(dst, `{"index":0,"delta":{`...)
}

func closeChunk(dst []byte) []byte {
	return append(dst, "},\"finish_reason\":null}]}\n\n"...)
}

func (c *chatCaller) start(dst []byte, id, model string, created int64) []byte {
	c.started = true
	c.prefix = append(c.prefix[:0], `data: {"id":`...)
	c.prefix = wire.AppendString(c.prefix, chatID(id))
	c.prefix = append(c.prefix, `,"object":"chat.completion.chunk","created":`...)
	c.prefix = appendInt(c.prefix, created)
	c.prefix = append(c.prefix, `,"model":`...)
	c.prefix = wire.AppendString(c.prefix, model)
	c.prefix = append(c.prefix, `,"choices":[`...)
	dst = c.openChunk(dst)
	dst = append(dst, `"role":"assistant","content":""`...)
	return closeChunk(dst)
}

func (c *chatCaller) event(dst []byte, ev *canonical.Event) []byte {
	if !c.started && ev.Kind != canonical.EventError {
		dst = c.start(dst, ev.ID, ev.Model, ev.Created)
		if ev.Kind == canonical.EventStart {
			c.usage = ev.Usage
			return dst
		}
	}
	switch ev.Kind {
	case canonical.EventPartStart:
		p := c.part(ev.Index)
		p.kind, p.origin = ev.Part, ev.Origin
		switch ev.Part {
		case canonical.PartToolCall:
			p.tool = c.nextTool
			c.nextTool++
			dst = c.openChunk(dst)
			dst = append(dst, `"tool_calls":[{"index":`...)
			dst = appendInt(dst, int64(p.tool))
			dst = append(dst, `,"id":`...)
			dst = wire.AppendString(dst, callerID(chatCallPrefix, ev.ID))
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = wire.AppendString(dst, ev.Name)
			dst = append(dst, `,"arguments":""}}]`...)
			dst = closeChunk(dst)
		case canonical.PartRedactedThinking:
			dst = c.openChunk(dst)
			dst = append(dst, `"thinking_blocks":[`...)
			dst = appendThinkingBlock(dst, ev.Part, "", ev.Text)
			dst = append(dst, ']')
			dst = closeChunk(dst)
		}
	case canonical.EventDelta:
		p := c.part(ev.Index)
		switch p.kind {
		case canonical.PartText:
			if ev.Text != "" {
				dst = c.openChunk(dst)
				dst = append(dst, `"content":`...)
				dst = wire.AppendString(dst, ev.Text)
				dst = closeChunk(dst)
			}
		case canonical.PartRefusal:
			if ev.Text != "" {
				dst = c.openChunk(dst)
				dst = append(dst, `"refusal":`...)
				dst = wire.AppendString(dst, ev.Text)
				dst = closeChunk(dst)
			}
		case canonical.PartThinking:
			if ev.Text != "" {
				dst = c.openChunk(dst)
				dst = append(dst, `"reasoning_content":`...)
				dst = wire.AppendString(dst, ev.Text)
				dst = closeChunk(dst)
				if p.origin == canonical.OriginAnthropic {
					p.thinking = append(p.thinking, ev.Text...)
				}
			}
			p.sig = append(p.sig, ev.Signature...)
		case canonical.PartToolCall:
			if ev.Text != "" && p.tool >= 0 {
				p.argsSent = true
				dst = c.toolArgs(dst, p.tool, ev.Text)
			}
		}
	case canonical.EventPartEnd:
		p := c.part(ev.Index)
		switch p.kind {
		case canonical.PartToolCall:
			if !p.argsSent && p.tool >= 0 {
				// A call without arguments still gets valid JSON.
				p.argsSent = true
				dst = c.toolArgs(dst, p.tool, "{}")
			}
		case canonical.PartThinking:
			if p.origin == canonical.OriginAnthropic && len(p.sig) > 0 {
				dst = c.openChunk(dst)
				dst = append(dst, `"thinking_blocks":[`...)
				dst = appendThinkingBlock(dst, canonical.PartThinking, string(p.thinking), string(p.sig))
				dst = append(dst, ']')
				dst = closeChunk(dst)
			}
		}
	case canonical.EventUsage:
		c.usage = ev.Usage
	case canonical.EventFinish:
		dst = c.finish(dst, ev.Finish)
	case canonical.EventDone:
		if !c.finished {
			dst = c.finish(dst, canonical.FinishStop)
		}
		if c.includeUsage {
			dst = append(dst, c.prefix...)
			dst = append(dst, `],"usage":`...)
			dst = appendChatUsage(dst, c.usage)
			dst = append(dst, "}\n\n"...)
		}
		dst = append(dst, "data: [DONE]\n\n"...)
	case canonical.EventError:
		dst = c.streamError(dst, ev.Err)
	}
	return dst
}

func (c *chatCaller) toolArgs(dst []byte, tool int, args string) []byte {
	dst = c.openChunk(dst)
	dst = append(dst, `"tool_calls":[{"index":`...)
	dst = appendInt(dst, int64(tool))
	dst = append(dst, `,"function":{"arguments":`...)
	dst = wire.AppendString(dst, args)
	dst = append(dst, "}}]"...)
	return closeChunk(dst)
}

func (c *chatCaller) finish(dst []byte, f canonical.FinishReason) []byte {
	if c.finished {
		return dst
	}
	c.finished = true
	for i := range c.parts {
		if p := &c.parts[i]; p.kind == canonical.PartToolCall && !p.argsSent && p.tool >= 0 {
			p.argsSent = true
			dst = c.toolArgs(dst, p.tool, "{}")
		}
	}
	if f == canonical.FinishStop && c.nextTool > 0 {
		f = canonical.FinishToolCalls
	}
	dst = c.openChunk(dst)
	dst = append(dst, `},"finish_reason":`...)
	dst = wire.AppendString(dst, chatFinish(f))
	return append(dst, "}]}\n\n"...)
}

func (c *chatCaller) errorBody(dst []byte, e *canonical.Error, _ string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendChatError(dst, e)
	return append(dst, "}\n"...)
}

func (c *chatCaller) streamError(dst []byte, e *canonical.Error) []byte {
	dst = append(dst, `data: {"error":`...)
	dst = appendChatError(dst, e)
	return append(dst, "}\n\n"...)
}

func appendChatError(dst []byte, e *canonical.Error) []byte {
	dst = append(dst, `{"message":`...)
	dst = wire.AppendString(dst, e.Message)
	dst = append(dst, `,"type":`...)
	dst = wire.AppendString(dst, wire.OpenAIType(canonical.StatusForKind(e.Kind)))
	dst = append(dst, `,"param":`...)
	if e.Param != "" {
		dst = wire.AppendString(dst, e.Param)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"code":`...)
	code := e.Code
	if code == "" {
		code = string(e.Kind)
	}
	dst = wire.AppendString(dst, code)
	return append(dst, '}')
}

// ============================================================
// Upstream side: the openai shape.
// ============================================================

var openaiSupport = supportTable{
	FeatTopK:            {Rejected, "Chat Completions has no top_k"},
	FeatFileInput:       {Yes, "a file part with PDF data or a file id; other media types are rejected"},
	FeatToolResultError: {Emulated, `the result goes as the tool message's content, prefixed "Error: " (Chat has no error flag)`},
	FeatToolResultImage: {Rejected, "a Chat tool message carries text only"},
	FeatThinkingHistory: {Emulated, "dropped: another provider's signed thinking cannot be replayed to OpenAI"},
	FeatCacheControl:    {Dropped, "OpenAI caches prompts automatically"},
	FeatPrefill:         {Rejected, "Chat Completions does not continue a final assistant message"},
	FeatStop:            {Yes, "at most 4 sequences; more are rejected"},
	FeatServiceTier:     {Emulated, "auto → auto, standard_only → default, OpenAI's own tiers as given; other tiers are dropped"},
	FeatJSONSchema:      {Yes, `the schema is sent with the name "response" and strict: true`},
	FeatUser:            {Yes, "sent as safety_identifier"},
}

// openaiUpstream speaks Chat Completions to the binding.
type openaiUpstream struct {
	now time.Time

	// Stream state.
	started   bool
	next      int // next canonical part index
	open      int // the open text, refusal or thinking part; -1 when none
	openKind  canonical.PartType
	tools     map[int]int // upstream tool index → canonical part index
	lastTool  int         // canonical index of the last tool part still open; -1
	finished  bool
	sawTools  bool
	completed bool
}

func newOpenAIUpstream(now time.Time) upstream {
	return &openaiUpstream{now: now, open: -1, lastTool: -1}
}

func (u *openaiUpstream) path(*Target, bool) string {
	return wire.UpstreamPath(wire.InboundChat, wire.ShapeOpenAI)
}

func (u *openaiUpstream) encode(dst []byte, x *encoder) ([]byte, error) {
	r := x.r
	if err := commonChecks(x); err != nil {
		return dst, err
	}
	q := chatRequest{Model: x.t.UpstreamModel, Stream: r.Stream}
	if r.Stream {
		t := true
		q.StreamOptions = &chatStreamOptions{IncludeUsage: &t}
	}
	if len(r.System) > 0 {
		content, err := json.Marshal(canonical.TextOf(r.System, "\n"))
		if err != nil {
			return dst, err
		}
		q.Messages = append(q.Messages, chatMessage{Role: "system", Content: content})
	}
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == canonical.RoleAssistant {
		if err := x.check(FeatPrefill); err != nil {
			return dst, err
		}
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		switch m.Role {
		case canonical.RoleSystem:
			content, _ := json.Marshal(canonical.TextOf(m.Parts, "\n"))
			q.Messages = append(q.Messages, chatMessage{Role: "system", Content: content})
		case canonical.RoleUser:
			content, err := chatUserContent(m.Parts, x)
			if err != nil {
				return dst, err
			}
			q.Messages = append(q.Messages, chatMessage{Role: "user", Content: content, Name: m.Name})
		case canonical.RoleAssistant:
			out := chatMessage{Role: "assistant", Name: m.Name}
			var text strings.Builder
			hasText := false
			for _, p := range m.Parts {
				switch p.Type {
				case canonical.PartText:
					hasText = true
					text.WriteString(p.Text)
				case canonical.PartToolCall:
					out.ToolCalls = append(out.ToolCalls, chatToolCall{ID: openaiID(p.ToolCall.ID), Type: "function",
						Function: chatFunctionCall{Name: p.ToolCall.Name, Arguments: orEmptyObject(p.ToolCall.Arguments)}})
				case canonical.PartThinking, canonical.PartRedactedThinking:
					// Dropped by rule (FeatThinkingHistory).
				}
			}
			if hasText {
				out.Content, _ = json.Marshal(text.String())
			}
			if !hasText && len(out.ToolCalls) == 0 {
				out.Content = json.RawMessage(`""`)
			}
			q.Messages = append(q.Messages, out)
		case canonical.RoleTool:
			for _, p := range m.Parts {
				if p.Type != canonical.PartToolResult {
					continue
				}
				text, err := toolResultText(p.ToolResult, x)
				if err != nil {
					return dst, err
				}
				content, _ := json.Marshal(text)
				q.Messages = append(q.Messages, chatMessage{Role: "tool", ToolCallID: openaiID(p.ToolResult.CallID), Content: content})
			}
		}
	}
	for _, t := range r.Tools {
		q.Tools = append(q.Tools, chatTool{Type: "function", Function: &chatFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
	}
	switch r.ToolChoice.Mode {
	case canonical.ToolChoiceAuto:
		q.ToolChoice = json.RawMessage(`"auto"`)
	case canonical.ToolChoiceNone:
		q.ToolChoice = json.RawMessage(`"none"`)
	case canonical.ToolChoiceRequired:
		q.ToolChoice = json.RawMessage(`"required"`)
	case canonical.ToolChoiceTool:
		q.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": r.ToolChoice.Name}})
	}
	if len(r.Tools) > 0 {
		q.ParallelToolCalls = r.ParallelToolCalls
	}
	q.MaxCompletionTokens = r.MaxOutputTokens
	q.Temperature, q.TopP = r.Temperature, r.TopP
	if r.TopK != nil {
		if err := x.check(FeatTopK); err != nil {
			return dst, err
		}
	}
	if len(r.Stop) > 0 {
		if len(r.Stop) > 4 {
			return dst, x.reject(FeatStop, "OpenAI takes at most 4 stop sequences")
		}
		q.Stop, _ = json.Marshal(r.Stop)
	}
	if f := r.ResponseFormat; f != nil {
		switch f.Type {
		case canonical.FormatJSONObject:
			q.ResponseFormat = &chatResponseFormat{Type: "json_object"}
		case canonical.FormatJSONSchema:
			name := f.Name
			if name == "" {
				name = "response"
			}
			strict := f.Strict
			if strict == nil {
				t := true
				strict = &t
			}
			q.ResponseFormat = &chatResponseFormat{Type: "json_schema", JSONSchema: &chatJSONSchema{Name: name, Description: f.Description, Schema: f.Schema, Strict: strict}}
		}
	}
	if rs := r.Reasoning; rs != nil {
		q.ReasoningEffort = rs.Effort
		if q.ReasoningEffort == "" && rs.Enabled != nil && *rs.Enabled && !rs.Adaptive {
			q.ReasoningEffort = effortForBudget(rs.BudgetTokens)
		}
	}
	q.SafetyIdentifier = r.User
	// Only Responses callers set these (a Chat caller's own binding is
	// never translated).
	q.Metadata, q.PromptCacheKey, q.Verbosity = r.Metadata, r.PromptCacheKey, r.Verbosity
	switch r.ServiceTier {
	case "":
	case "auto":
		q.ServiceTier = "auto"
	case "standard_only":
		q.ServiceTier = "default"
	case "default", "flex", "priority", "scale":
		q.ServiceTier = r.ServiceTier
	default:
		x.drop(FeatServiceTier)
	}
	b, err := json.Marshal(&q)
	if err != nil {
		return dst, fmt.Errorf("encode chat request: %w", err)
	}
	return append(dst, b...), nil
}

func orEmptyObject(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}

// effortForBudget maps a thinking budget to an OpenAI reasoning effort.
func effortForBudget(budget int64) string {
	switch {
	case budget <= 0:
		return "medium"
	case budget < 4096:
		return "low"
	case budget < 16384:
		return "medium"
	}
	return "high"
}

// toolResultText is a tool result as one text: Chat's tool messages and
// Responses' string outputs. An error result is prefixed.
func toolResultText(tr *canonical.ToolResult, x *encoder) (string, error) {
	for _, p := range tr.Content {
		if p.Type != canonical.PartText {
			if err := x.check(FeatToolResultImage); err != nil {
				return "", err
			}
		}
	}
	text := canonical.TextOf(tr.Content, "\n")
	if tr.IsError {
		if err := x.check(FeatToolResultError); err != nil {
			return "", err
		}
		text = "Error: " + text
	}
	return text, nil
}

func chatUserContent(parts []canonical.Part, x *encoder) (json.RawMessage, error) {
	if len(parts) == 1 && parts[0].Type == canonical.PartText {
		return json.Marshal(parts[0].Text)
	}
	out := make([]chatPart, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case canonical.PartText:
			t := p.Text
			out = append(out, chatPart{Type: "text", Text: &t})
		case canonical.PartImage:
			url := p.Image.URL
			if url == "" {
				url = dataURI(p.Image.MediaType, p.Image.Data)
			}
			out = append(out, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: url, Detail: p.Image.Detail}})
		case canonical.PartAudio:
			out = append(out, chatPart{Type: "input_audio", InputAudio: &chatAudio{Data: p.Audio.Data, Format: p.Audio.Format}})
		case canonical.PartFile:
			f := &chatFile{FileID: p.File.FileID, Filename: p.File.Filename}
			switch {
			case p.File.FileID != "":
			case p.File.Data != "" && p.File.MediaType == "application/pdf":
				f.FileData = dataURI(p.File.MediaType, p.File.Data)
				if f.Filename == "" {
					f.Filename = "document.pdf"
				}
			default:
				return nil, x.reject(FeatFileInput, "Chat Completions takes PDF data or file ids")
			}
			out = append(out, chatPart{Type: "file", File: f})
		}
	}
	if len(out) == 0 {
		return json.RawMessage(`""`), nil
	}
	return json.Marshal(out)
}

func (u *openaiUpstream) decodeResponse(body []byte, r *canonical.Response) error {
	var c chatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("decode chat completion: %w", err)
	}
	if c.Error != nil {
		return fmt.Errorf("the completion is an error: %s", c.Error.Message)
	}
	r.ID, r.Model, r.Created = c.ID, c.Model, c.Created
	if c.Usage != nil {
		r.Usage = c.Usage.canonical()
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 || ch.Message == nil {
			continue
		}
		m := ch.Message
		if m.ReasoningContent != nil && *m.ReasoningContent != "" {
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartThinking, Text: *m.ReasoningContent})
		}
		if m.Content != nil && *m.Content != "" {
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartText, Text: *m.Content})
		}
		if m.Refusal != nil && *m.Refusal != "" {
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartRefusal, Text: *m.Refusal})
		}
		for _, tc := range m.ToolCalls {
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		}
		if ch.FinishReason != nil {
			r.Finish = finishFromChat(*ch.FinishReason)
		}
		if m.Refusal != nil && *m.Refusal != "" && r.Finish == canonical.FinishStop {
			r.Finish = canonical.FinishRefusal
		}
	}
	if len(c.Choices) == 0 {
		return fmt.Errorf("the completion has no choices")
	}
	return nil
}

func (u *openaiUpstream) decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || u.completed {
		return evs, nil
	}
	if string(data) == "[DONE]" {
		u.completed = true
		evs = u.closeAll(evs)
		if !u.finished {
			u.finished = true
			evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: canonical.FinishStop})
		}
		return append(evs, canonical.Event{Kind: canonical.EventDone}), nil
	}
	var c chatCompletion
	if err := json.Unmarshal(data, &c); err != nil {
		return evs, fmt.Errorf("decode chat chunk: %w", err)
	}
	if c.Error != nil {
		u.completed = true
		var code string
		_ = json.Unmarshal(c.Error.Code, &code)
		typ := c.Error.Type
		if code != "" {
			typ = code
		}
		e := streamErrorOf(typ, 0, c.Error.Message)
		return append(evs, canonical.Event{Kind: canonical.EventError, Err: e}), nil
	}
	if !u.started {
		u.started = true
		created := c.Created
		if created == 0 {
			created = u.now.Unix()
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventStart, ID: c.ID, Model: c.Model, Created: created})
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if d := ch.Delta; d != nil {
			if d.ReasoningContent != nil && *d.ReasoningContent != "" {
				evs = u.textDelta(evs, canonical.PartThinking, *d.ReasoningContent)
			}
			if d.Content != nil && *d.Content != "" {
				evs = u.textDelta(evs, canonical.PartText, *d.Content)
			}
			if d.Refusal != nil && *d.Refusal != "" {
				evs = u.textDelta(evs, canonical.PartRefusal, *d.Refusal)
			}
			for _, tc := range d.ToolCalls {
				idx := 0
				if tc.Index != nil {
					idx = *tc.Index
				}
				at, ok := u.tools[idx]
				if !ok {
					evs = u.closeOpen(evs)
					if u.lastTool >= 0 {
						evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: u.lastTool})
					}
					if u.tools == nil {
						u.tools = map[int]int{}
					}
					at = u.next
					u.next++
					u.tools[idx] = at
					u.lastTool = at
					u.sawTools = true
					evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: canonical.PartToolCall, ID: tc.ID, Name: tc.Function.Name})
				}
				if tc.Function.Arguments != "" {
					evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: tc.Function.Arguments})
				}
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" && !u.finished {
			u.finished = true
			evs = u.closeAll(evs)
			f := finishFromChat(*ch.FinishReason)
			if f == canonical.FinishStop && u.sawTools {
				f = canonical.FinishToolCalls
			}
			evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: f})
		}
	}
	if c.Usage != nil {
		evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: c.Usage.canonical()})
	}
	return evs, nil
}

// textDelta appends text to the open part of that kind, opening one.
func (u *openaiUpstream) textDelta(evs []canonical.Event, kind canonical.PartType, text string) []canonical.Event {
	if u.open < 0 || u.openKind != kind {
		evs = u.closeOpen(evs)
		u.open, u.openKind = u.next, kind
		u.next++
		evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: u.open, Part: kind})
	}
	return append(evs, canonical.Event{Kind: canonical.EventDelta, Index: u.open, Text: text})
}

func (u *openaiUpstream) closeOpen(evs []canonical.Event) []canonical.Event {
	if u.open >= 0 {
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: u.open})
		u.open = -1
	}
	return evs
}

func (u *openaiUpstream) closeAll(evs []canonical.Event) []canonical.Event {
	evs = u.closeOpen(evs)
	if u.lastTool >= 0 {
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: u.lastTool})
		u.lastTool = -1
	}
	return evs
}

func (u *openaiUpstream) atEOF(evs []canonical.Event) ([]canonical.Event, bool) {
	return evs, u.completed
}
