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

// Anthropic Messages: the messages caller side (decode a request, encode
// messages and their event stream) and the anthropic upstream side (encode
// a request, decode messages and events).

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

// ============================================================
// Caller side: decode a Messages request.
// ============================================================

func decodeMessagesRequest(body []byte, r *canonical.Request) error {
	var q anthRequest
	if err := decodeStrict(body, &q); err != nil {
		return err
	}
	switch {
	case q.Model == "":
		return badField("model", "a model is required")
	case q.MaxTokens == nil:
		return badField("max_tokens", "max_tokens is required")
	case len(q.Messages) == 0:
		return badField("messages", "at least one message is required")
	case !isNull(q.Container):
		return unsupported("container", "code-execution containers")
	case !isNull(q.MCPServers):
		return unsupported("mcp_servers", "Anthropic's MCP connector")
	}
	if present(q.ContextManagement) {
		advise(r, "context_management")
	}
	r.Model = q.Model
	r.MaxOutputTokens = q.MaxTokens
	sys, err := anthSystem(q.System, "system")
	if err != nil {
		return err
	}
	r.System = sys
	for i := range q.Messages {
		m := &q.Messages[i]
		at := "messages[" + strconv.Itoa(i) + "]"
		if m.Role == "system" {
			// A system turn inside the conversation (Claude Code sends
			// them): leading ones join the system prompt.
			parts, err := anthSystem(m.Content, at+".content")
			if err != nil {
				return err
			}
			if len(r.Messages) == 0 {
				r.System = append(r.System, parts...)
			} else {
				r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleSystem, Parts: parts})
			}
			continue
		}
		blocks, err := anthContent(m.Content, at+".content")
		if err != nil {
			return err
		}
		for j := range blocks {
			if present(blocks[j].Citations) {
				advise(r, "messages[].content[].citations")
			}
		}
		switch m.Role {
		case "user":
			var results, rest []canonical.Part
			for j := range blocks {
				p, err := anthPart(&blocks[j], fmt.Sprintf("%s.content[%d]", at, j), false)
				if err != nil {
					return err
				}
				if p.Type == canonical.PartToolResult {
					results = append(results, p)
				} else {
					rest = append(rest, p)
				}
			}
			if len(results) > 0 {
				r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleTool, Parts: results})
			}
			if len(rest) > 0 || len(results) == 0 {
				r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleUser, Parts: rest})
			}
		case "assistant":
			msg := canonical.Message{Role: canonical.RoleAssistant}
			for j := range blocks {
				p, err := anthPart(&blocks[j], fmt.Sprintf("%s.content[%d]", at, j), true)
				if err != nil {
					return err
				}
				msg.Parts = append(msg.Parts, p)
			}
			r.Messages = append(r.Messages, msg)
		default:
			return badField(at+".role", "expected user, assistant or system, got %q", m.Role)
		}
	}
	for i, raw := range q.Tools {
		at := "tools[" + strconv.Itoa(i) + "]"
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raw, &head)
		if head.Type != "" && head.Type != "custom" {
			return unsupported(at, "Anthropic server tool "+strconv.Quote(head.Type))
		}
		var t anthTool
		if err := strictUnmarshal(raw, &t, at); err != nil {
			return err
		}
		if t.Name == "" {
			return badField(at+".name", "a tool needs a name")
		}
		if present(t.DeferLoading) {
			advise(r, "tools[].defer_loading")
		}
		r.Tools = append(r.Tools, canonical.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema, Strict: t.Strict, CacheHint: t.CacheControl})
	}
	if tc := q.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto":
			r.ToolChoice.Mode = canonical.ToolChoiceAuto
		case "any":
			r.ToolChoice.Mode = canonical.ToolChoiceRequired
		case "none":
			r.ToolChoice.Mode = canonical.ToolChoiceNone
		case "tool":
			if tc.Name == "" {
				return badField("tool_choice.name", "a tool choice of type tool needs a name")
			}
			r.ToolChoice = canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: tc.Name}
		default:
			return badField("tool_choice.type", "unknown type %q", tc.Type)
		}
		if d := tc.DisableParallelToolUse; d != nil && *d {
			f := false
			r.ParallelToolCalls = &f
		}
	}
	if th := q.Thinking; th != nil {
		t, f := true, false
		switch th.Type {
		case "enabled":
			r.Reasoning = &canonical.Reasoning{Enabled: &t, BudgetTokens: th.BudgetTokens}
		case "adaptive":
			r.Reasoning = &canonical.Reasoning{Enabled: &t, Adaptive: true}
		case "disabled":
			r.Reasoning = &canonical.Reasoning{Enabled: &f}
		default:
			return badField("thinking.type", "unknown type %q", th.Type)
		}
	}
	if oc := q.OutputConfig; oc != nil {
		if f := oc.Format; f != nil {
			if f.Type != "json_schema" {
				return badField("output_config.format.type", "unknown type %q", f.Type)
			}
			r.ResponseFormat = &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Schema: f.Schema}
		}
		if oc.Effort != "" {
			if r.Reasoning == nil {
				r.Reasoning = &canonical.Reasoning{}
			}
			r.Reasoning.Effort = oc.Effort
		}
	}
	if q.Metadata != nil {
		r.User = q.Metadata.UserID
	}
	r.Stop = q.StopSequences
	r.Temperature, r.TopP, r.TopK = q.Temperature, q.TopP, q.TopK
	r.ServiceTier = q.ServiceTier
	r.Stream = q.Stream
	return nil
}

// anthSystem reads a system prompt, or a system turn's content at at: a
// string or text blocks.
func anthSystem(raw json.RawMessage, at string) ([]canonical.Part, error) {
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
	var blocks []anthBlock
	if err := strictUnmarshal(raw, &blocks, at); err != nil {
		return nil, err
	}
	out := make([]canonical.Part, 0, len(blocks))
	for i := range blocks {
		b := &blocks[i]
		if b.Type != "text" || b.Text == nil {
			return nil, badField(fmt.Sprintf("%s[%d]", at, i), "system blocks must be text")
		}
		if !isNull(b.Citations) {
			return nil, unsupported(fmt.Sprintf("%s[%d].citations", at, i), "citations")
		}
		out = append(out, canonical.Part{Type: canonical.PartText, Text: *b.Text, CacheHint: b.CacheControl})
	}
	return out, nil
}

// anthContent reads a message's content: a string or blocks.
func anthContent(raw json.RawMessage, at string) ([]anthBlock, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, badField(at, "content is required")
	}
	if s, ok, err := textContent(raw, at); ok {
		if err != nil {
			return nil, err
		}
		return []anthBlock{{Type: "text", Text: &s}}, nil
	}
	var blocks []anthBlock
	if err := strictUnmarshal(raw, &blocks, at); err != nil {
		return nil, err
	}
	return blocks, nil
}

// anthPart reads one content block.
// anthPart reads one content block; its citations are the caller's to
// note (advisory at the top level of a message).
func anthPart(b *anthBlock, at string, assistant bool) (canonical.Part, error) {
	switch b.Type {
	case "text":
		if b.Text == nil {
			return canonical.Part{}, badField(at+".text", "a text block needs text")
		}
		return canonical.Part{Type: canonical.PartText, Text: *b.Text, CacheHint: b.CacheControl}, nil
	case "image":
		if assistant {
			return canonical.Part{}, badField(at, "images are allowed in user messages only")
		}
		if b.Source == nil {
			return canonical.Part{}, badField(at+".source", "an image needs a source")
		}
		switch b.Source.Type {
		case "base64":
			return canonical.Part{Type: canonical.PartImage, Image: &canonical.Image{MediaType: b.Source.MediaType, Data: b.Source.Data}, CacheHint: b.CacheControl}, nil
		case "url":
			return canonical.Part{Type: canonical.PartImage, Image: &canonical.Image{URL: b.Source.URL}, CacheHint: b.CacheControl}, nil
		}
		return canonical.Part{}, unsupported(at+".source.type", "image sources other than base64 and url")
	case "document":
		if assistant || b.Source == nil {
			return canonical.Part{}, badField(at, "a document needs a source, in a user message")
		}
		f := &canonical.File{MediaType: b.Source.MediaType, Data: b.Source.Data, URL: b.Source.URL, FileID: b.Source.FileID, Filename: b.Title}
		if b.Source.Type == "text" {
			f.MediaType, f.Data = "text/plain", b64(b.Source.Data)
		}
		return canonical.Part{Type: canonical.PartFile, File: f, CacheHint: b.CacheControl}, nil
	case "tool_use":
		if !assistant {
			return canonical.Part{}, badField(at, "tool_use blocks belong in assistant messages")
		}
		if b.ID == "" || b.Name == "" {
			return canonical.Part{}, badField(at, "a tool_use block needs an id and a name")
		}
		return canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: canonicalID(anthropicCallPrefix, b.ID), Name: b.Name, Arguments: argsText(b.Input)}, CacheHint: b.CacheControl}, nil
	case "tool_result":
		if assistant {
			return canonical.Part{}, badField(at, "tool_result blocks belong in user messages")
		}
		if b.ToolUseID == "" {
			return canonical.Part{}, badField(at+".tool_use_id", "a tool_result needs the id of its tool_use")
		}
		tr := &canonical.ToolResult{CallID: canonicalID(anthropicCallPrefix, b.ToolUseID), IsError: b.IsError != nil && *b.IsError}
		raw := bytes.TrimSpace(b.Content)
		switch {
		case isNull(raw):
		case raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return canonical.Part{}, badField(at+".content", "malformed string")
			}
			tr.Content = []canonical.Part{{Type: canonical.PartText, Text: s}}
		default:
			var inner []anthBlock
			if err := strictUnmarshal(raw, &inner, at+".content"); err != nil {
				return canonical.Part{}, err
			}
			for k := range inner {
				ip := &inner[k]
				iat := fmt.Sprintf("%s.content[%d]", at, k)
				if ip.Type != "text" && ip.Type != "image" {
					return canonical.Part{}, unsupported(iat+".type", "tool results of text and images only")
				}
				if !isNull(ip.Citations) {
					return canonical.Part{}, unsupported(iat+".citations", "citations")
				}
				p, err := anthPart(ip, iat, false)
				if err != nil {
					return canonical.Part{}, err
				}
				tr.Content = append(tr.Content, p)
			}
		}
		return canonical.Part{Type: canonical.PartToolResult, ToolResult: tr, CacheHint: b.CacheControl}, nil
	case "thinking":
		if !assistant {
			return canonical.Part{}, badField(at, "thinking blocks belong in assistant messages")
		}
		p := canonical.Part{Type: canonical.PartThinking}
		if b.Thinking != nil {
			p.Text = *b.Thinking
		}
		if b.Signature != nil {
			p.Signature = *b.Signature
			p.Origin = originIf(p.Signature, canonical.OriginAnthropic)
		}
		return p, nil
	case "redacted_thinking":
		return canonical.Part{Type: canonical.PartRedactedThinking, Signature: b.Data, Origin: canonical.OriginAnthropic}, nil
	}
	return canonical.Part{}, unsupported(at+".type", "content blocks of type "+strconv.Quote(b.Type))
}

// ============================================================
// Caller side: encode messages and their events.
// ============================================================

// messagesCaller writes answers for a Messages caller.
type messagesCaller struct {
	req *canonical.Request
	// showForeign: the caller turned thinking on, so reasoning from other
	// providers is shown as (unsigned) thinking blocks.
	showForeign bool

	// Stream state.
	started   bool
	id, model string
	blocks    []anthBlockState // by canonical part index
	next      int              // next block index
	usage     canonical.Usage
	finish    canonical.FinishReason
	stopSeq   string
	sawTools  bool
}

type anthBlockState struct {
	kind   canonical.PartType
	origin canonical.Origin
	block  int // the block index once opened; -1 before
	closed bool
	// tool calls open at once; text and thinking on their first delta,
	// so an empty block is never sent.
	id, name string
	sig      string
}

func newMessagesCaller(r *canonical.Request) caller {
	show := r.Reasoning != nil && r.Reasoning.Enabled != nil && *r.Reasoning.Enabled
	return &messagesCaller{req: r, showForeign: show}
}

func messageID(id string) string {
	if id == "" {
		return "msg_relay"
	}
	if strings.HasPrefix(id, "msg_") {
		return id
	}
	return "msg_" + id
}

func (c *messagesCaller) shows(p *canonical.Part) bool {
	switch p.Type {
	case canonical.PartThinking:
		return p.Origin == canonical.OriginAnthropic || c.showForeign && p.Text != ""
	case canonical.PartRedactedThinking:
		return p.Origin == canonical.OriginAnthropic
	}
	return true
}

func appendAnthUsage(dst []byte, u canonical.Usage, start bool) []byte {
	in := max(u.Input-u.CacheRead-u.CacheWrite, 0)
	dst = append(dst, `{"input_tokens":`...)
	dst = appendInt(dst, in)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = appendInt(dst, u.CacheWrite)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = appendInt(dst, u.CacheRead)
	dst = append(dst, `,"output_tokens":`...)
	if start {
		dst = appendInt(dst, 0)
	} else {
		dst = appendInt(dst, u.Output)
		if u.Reasoning > 0 {
			dst = append(dst, `,"output_tokens_details":{"thinking_tokens":`...)
			dst = appendInt(dst, u.Reasoning)
			dst = append(dst, '}')
		}
	}
	return append(dst, '}')
}

// appendToolInput appends a call's arguments as the object Anthropic
// callers expect; arguments that are not a JSON object become {}.
func appendToolInput(dst []byte, args string) []byte {
	if obj, ok := argsObject(args); ok {
		var b bytes.Buffer
		if json.Compact(&b, obj) == nil {
			return append(dst, b.Bytes()...)
		}
	}
	return append(dst, "{}"...)
}

func (c *messagesCaller) response(dst []byte, r *canonical.Response) []byte {
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, messageID(r.ID))
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = wire.AppendString(dst, r.Model)
	dst = append(dst, `,"content":[`...)
	n := 0
	tools := false
	for i := range r.Parts {
		p := &r.Parts[i]
		if !c.shows(p) {
			continue
		}
		switch p.Type {
		case canonical.PartText, canonical.PartRefusal:
			if p.Text == "" {
				continue
			}
		case canonical.PartToolCall:
			tools = true
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		switch p.Type {
		case canonical.PartText, canonical.PartRefusal:
			dst = append(dst, `{"type":"text","text":`...)
			dst = wire.AppendString(dst, p.Text)
			dst = append(dst, '}')
		case canonical.PartThinking:
			dst = append(dst, `{"type":"thinking","thinking":`...)
			dst = wire.AppendString(dst, p.Text)
			dst = append(dst, `,"signature":`...)
			dst = wire.AppendString(dst, anthSignature(p))
			dst = append(dst, '}')
		case canonical.PartRedactedThinking:
			dst = append(dst, `{"type":"redacted_thinking","data":`...)
			dst = wire.AppendString(dst, p.Signature)
			dst = append(dst, '}')
		case canonical.PartToolCall:
			dst = append(dst, `{"type":"tool_use","id":`...)
			dst = wire.AppendString(dst, callerID(anthropicCallPrefix, p.ToolCall.ID))
			dst = append(dst, `,"name":`...)
			dst = wire.AppendString(dst, p.ToolCall.Name)
			dst = append(dst, `,"input":`...)
			dst = appendToolInput(dst, p.ToolCall.Arguments)
			dst = append(dst, '}')
		}
	}
	finish := r.Finish
	if finish == canonical.FinishStop && tools {
		finish = canonical.FinishToolCalls
	}
	dst = append(dst, `],"stop_reason":`...)
	dst = wire.AppendString(dst, anthropicStop(finish))
	dst = append(dst, `,"stop_sequence":`...)
	if finish == canonical.FinishStopSequence && r.StopSequence != "" {
		dst = wire.AppendString(dst, r.StopSequence)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"usage":`...)
	dst = appendAnthUsage(dst, r.Usage, false)
	return append(dst, "}\n"...)
}

// anthSignature is the signature a thinking block carries to an Anthropic
// caller: Anthropic's own, else empty (foreign reasoning is not signed).
func anthSignature(p *canonical.Part) string {
	if p.Origin == canonical.OriginAnthropic {
		return p.Signature
	}
	return ""
}

func (c *messagesCaller) block(i int) *anthBlockState {
	for len(c.blocks) <= i {
		c.blocks = append(c.blocks, anthBlockState{block: -1})
	}
	return &c.blocks[i]
}

func (c *messagesCaller) start(dst []byte, id, model string, u canonical.Usage) []byte {
	c.started = true
	c.id, c.model = messageID(id), model
	dst = append(dst, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	dst = wire.AppendString(dst, c.id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = wire.AppendString(dst, c.model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	dst = appendAnthUsage(dst, u, true)
	return append(dst, "}}\n\n"...)
}

// open sends content_block_start for b.
func (c *messagesCaller) open(dst []byte, b *anthBlockState) []byte {
	b.block = c.next
	c.next++
	dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	dst = appendInt(dst, int64(b.block))
	dst = append(dst, `,"content_block":`...)
	switch b.kind {
	case canonical.PartThinking:
		dst = append(dst, `{"type":"thinking","thinking":"","signature":""}`...)
	case canonical.PartRedactedThinking:
		dst = append(dst, `{"type":"redacted_thinking","data":`...)
		dst = wire.AppendString(dst, b.sig)
		dst = append(dst, '}')
	case canonical.PartToolCall:
		dst = append(dst, `{"type":"tool_use","id":`...)
		dst = wire.AppendString(dst, callerID(anthropicCallPrefix, b.id))
		dst = append(dst, `,"name":`...)
		dst = wire.AppendString(dst, b.name)
		dst = append(dst, `,"input":{}}`...)
	default:
		dst = append(dst, `{"type":"text","text":""}`...)
	}
	return append(dst, "}\n\n"...)
}

func (c *messagesCaller) delta(dst []byte, b *anthBlockState, typ, key, value string) []byte {
	dst = append(dst, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	dst = appendInt(dst, int64(b.block))
	dst = append(dst, `,"delta":{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","`...)
	dst = append(dst, key...)
	dst = append(dst, `":`...)
	dst = wire.AppendString(dst, value)
	return append(dst, "}}\n\n"...)
}

func (c *messagesCaller) stop(dst []byte, b *anthBlockState) []byte {
	if b.block < 0 || b.closed {
		return dst
	}
	b.closed = true
	dst = append(dst, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	dst = appendInt(dst, int64(b.block))
	return append(dst, "}\n\n"...)
}

func (c *messagesCaller) event(dst []byte, ev *canonical.Event) []byte {
	if !c.started && ev.Kind != canonical.EventError {
		dst = c.start(dst, ev.ID, ev.Model, ev.Usage)
		c.usage = ev.Usage
		if ev.Kind == canonical.EventStart {
			return dst
		}
	}
	switch ev.Kind {
	case canonical.EventPartStart:
		b := c.block(ev.Index)
		b.kind, b.origin, b.id, b.name = ev.Part, ev.Origin, ev.ID, ev.Name
		switch ev.Part {
		case canonical.PartToolCall:
			c.sawTools = true
			dst = c.open(dst, b)
		case canonical.PartRedactedThinking:
			if ev.Origin == canonical.OriginAnthropic {
				b.sig = ev.Text
				dst = c.open(dst, b)
			}
		}
	case canonical.EventDelta:
		b := c.block(ev.Index)
		switch b.kind {
		case canonical.PartText, canonical.PartRefusal:
			if ev.Text == "" {
				break
			}
			if b.block < 0 {
				dst = c.open(dst, b)
			}
			dst = c.delta(dst, b, "text_delta", "text", ev.Text)
		case canonical.PartThinking:
			if b.origin != canonical.OriginAnthropic && !c.showForeign {
				break
			}
			if ev.Text != "" {
				if b.block < 0 {
					dst = c.open(dst, b)
				}
				dst = c.delta(dst, b, "thinking_delta", "thinking", ev.Text)
			}
			if ev.Signature != "" && b.origin == canonical.OriginAnthropic {
				if b.block < 0 {
					dst = c.open(dst, b)
				}
				dst = c.delta(dst, b, "signature_delta", "signature", ev.Signature)
			}
		case canonical.PartToolCall:
			if ev.Text != "" && b.block >= 0 {
				dst = c.delta(dst, b, "input_json_delta", "partial_json", ev.Text)
			}
		}
	case canonical.EventPartEnd:
		dst = c.stop(dst, c.block(ev.Index))
	case canonical.EventUsage:
		c.usage = ev.Usage
	case canonical.EventFinish:
		c.finish, c.stopSeq = ev.Finish, ev.StopSequence
	case canonical.EventDone:
		for i := range c.blocks {
			dst = c.stop(dst, &c.blocks[i])
		}
		finish := c.finish
		if (finish == canonical.FinishStop || finish == canonical.FinishNone) && c.sawTools {
			finish = canonical.FinishToolCalls
		}
		dst = append(dst, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
		dst = wire.AppendString(dst, anthropicStop(finish))
		dst = append(dst, `,"stop_sequence":`...)
		if finish == canonical.FinishStopSequence && c.stopSeq != "" {
			dst = wire.AppendString(dst, c.stopSeq)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `},"usage":`...)
		dst = appendAnthUsage(dst, c.usage, false)
		dst = append(dst, "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	case canonical.EventError:
		dst = c.streamError(dst, ev.Err)
	}
	return dst
}

func anthErrorType(e *canonical.Error) string {
	if e.Kind == canonical.ErrOverloaded {
		return "overloaded_error"
	}
	return wire.AnthropicType(canonical.StatusForKind(e.Kind))
}

func (c *messagesCaller) errorBody(dst []byte, e *canonical.Error, requestID string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = wire.AppendString(dst, wire.AnthropicType(e.Status))
	dst = append(dst, `,"message":`...)
	dst = wire.AppendString(dst, e.Message)
	dst = append(dst, `},"request_id":`...)
	dst = wire.AppendString(dst, requestID)
	return append(dst, "}\n"...)
}

func (c *messagesCaller) streamError(dst []byte, e *canonical.Error) []byte {
	dst = append(dst, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"...)
	dst = wire.AppendString(dst, anthErrorType(e))
	dst = append(dst, `,"message":`...)
	dst = wire.AppendString(dst, e.Message)
	return append(dst, "}}\n\n"...)
}

// ============================================================
// Upstream side: the anthropic shape.
// ============================================================

var anthropicSupport = supportTable{
	FeatSystemMid:       {Emulated, `hoisted into system in order (Anthropic has no system turns); the position is lost`},
	FeatSameRoleTurns:   {Emulated, "merged into one turn, as Anthropic itself would; tool results regrouped right after their calls"},
	FeatMessageName:     {Rejected, "Anthropic messages have no participant name"},
	FeatImageBase64:     {Yes, "jpeg, png, gif and webp; other media types are rejected"},
	FeatImageDetail:     {Rejected, "Anthropic has no image detail level (auto is accepted)"},
	FeatAudioInput:      {Rejected, "Anthropic takes no audio"},
	FeatFileInput:       {Yes, "PDF and plain-text data become document blocks; file ids are rejected"},
	FeatParallelOff:     {Yes, "tool_choice.disable_parallel_tool_use"},
	FeatThinkingHistory: {Yes, "Anthropic-signed blocks are replayed; unsigned or foreign reasoning is dropped"},
	FeatReasoning:       {Emulated, "reasoning_effort low, medium, high, xhigh → thinking enabled with budget_tokens 1024, 4096, 16384, 32768 (kept below max_tokens); none and minimal → thinking off"},
	FeatMaxTokens:       {Yes, "max_tokens defaults to the model's catalog max output, else 4096"},
	FeatTemperature:     {Yes, "0–1; values above 1 are rejected"},
	FeatN:               {Rejected, "Anthropic returns one answer per request"},
	FeatLogprobs:        {Rejected, "Anthropic returns no log probabilities"},
	FeatLogitBias:       {Rejected, "Anthropic has no logit bias"},
	FeatSeed:            {Rejected, "Anthropic has no seed"},
	FeatPenalties:       {Rejected, "Anthropic has no presence or frequency penalty"},
	FeatJSONObject:      {Rejected, "Anthropic structured output needs a schema"},
	FeatJSONSchema:      {Yes, "output_config.format; the schema's name is not sent"},
	FeatVerbosity:       {Rejected, "Anthropic has no verbosity setting"},
	FeatMetadata:        {Dropped, "Anthropic metadata holds user_id only"},
	FeatUser:            {Yes, "metadata.user_id"},
	FeatServiceTier:     {Emulated, "auto → auto, default → standard_only; other tiers are dropped"},
	FeatStore:           {Rejected, "Anthropic does not store completions"},
	FeatPromptCacheKey:  {Dropped, "Anthropic caches by cache_control breakpoints, not keys"},
	FeatPrefill:         {Yes, "Anthropic continues the final assistant message"},
	FeatToolStrict:      {Yes, "tools[].strict"},
}

// anthropicUpstream speaks Messages to the binding.
type anthropicUpstream struct {
	now time.Time

	// Stream state.
	started   bool
	parts     map[int]int // block index → canonical part index; absent: ignored block
	next      int
	counts    anthCounts
	completed bool
}

func newAnthropicUpstream(now time.Time) upstream { return &anthropicUpstream{now: now} }

func (u *anthropicUpstream) path(*Target, bool) string {
	return wire.UpstreamPath(wire.InboundMessages, wire.ShapeAnthropic)
}

// anthropicMedia are the image types Anthropic accepts.
var anthropicMedia = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

func (u *anthropicUpstream) encode(dst []byte, x *encoder) ([]byte, error) {
	r := x.r
	q := anthRequestOut{Model: x.t.UpstreamModel, Stream: r.Stream, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, StopSequences: r.Stop}
	if err := commonChecks(x); err != nil {
		return dst, err
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1) {
		return dst, x.reject(FeatTemperature, "Anthropic's temperature runs from 0 to 1")
	}
	system, msgs := r.HoistedSystem()
	if len(system) > 0 {
		blocks := make([]anthBlock, 0, len(system))
		for _, p := range system {
			if p.Text == "" {
				continue
			}
			t := p.Text
			blocks = append(blocks, anthBlock{Type: "text", Text: &t, CacheControl: p.CacheHint})
		}
		q.System = blocks
	}
	msgs = canonical.GroupToolResults(msgs)
	add := func(role string, bs ...anthBlock) {
		if len(bs) == 0 {
			return
		}
		if n := len(q.Messages); n > 0 && q.Messages[n-1].Role == role {
			q.Messages[n-1].Content = append(q.Messages[n-1].Content, bs...)
			return
		}
		q.Messages = append(q.Messages, anthTurn{Role: role, Content: bs})
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Name != "" {
			if err := x.check(FeatMessageName); err != nil {
				return dst, err
			}
		}
		switch m.Role {
		case canonical.RoleUser, canonical.RoleTool:
			for _, p := range m.Parts {
				b, ok, err := anthBlockOf(&p, x)
				if err != nil {
					return dst, err
				}
				if ok {
					add("user", b)
				}
			}
		case canonical.RoleAssistant:
			for _, p := range m.Parts {
				switch p.Type {
				case canonical.PartThinking:
					// Only Anthropic's own signed thinking goes back.
					if p.Origin == canonical.OriginAnthropic && p.Signature != "" {
						t, s := p.Text, p.Signature
						add("assistant", anthBlock{Type: "thinking", Thinking: &t, Signature: &s})
					}
				case canonical.PartRedactedThinking:
					if p.Origin == canonical.OriginAnthropic {
						add("assistant", anthBlock{Type: "redacted_thinking", Data: p.Signature})
					}
				case canonical.PartText, canonical.PartRefusal:
					if p.Text != "" {
						t := p.Text
						add("assistant", anthBlock{Type: "text", Text: &t, CacheControl: p.CacheHint})
					}
				case canonical.PartToolCall:
					input, ok := argsObject(p.ToolCall.Arguments)
					if !ok {
						return dst, badField("messages[].tool_calls[].function.arguments", "the arguments of tool call %q are not a JSON object", p.ToolCall.ID)
					}
					add("assistant", anthBlock{Type: "tool_use", ID: anthropicID(p.ToolCall.ID), Name: p.ToolCall.Name, Input: input, CacheControl: p.CacheHint})
				}
			}
		}
	}
	if len(q.Messages) == 0 {
		return dst, badField("messages", "no message has content Anthropic can take")
	}
	for _, t := range r.Tools {
		schema := t.Parameters
		if isNull(schema) {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		q.Tools = append(q.Tools, anthTool{Name: t.Name, Description: t.Description, InputSchema: schema, Strict: t.Strict, CacheControl: t.CacheHint})
	}
	tc := &anthToolChoice{}
	switch r.ToolChoice.Mode {
	case canonical.ToolChoiceAuto:
		tc.Type = "auto"
	case canonical.ToolChoiceNone:
		tc.Type = "none"
	case canonical.ToolChoiceRequired:
		tc.Type = "any"
	case canonical.ToolChoiceTool:
		tc.Type, tc.Name = "tool", r.ToolChoice.Name
	}
	if p := r.ParallelToolCalls; p != nil && !*p && len(r.Tools) > 0 && tc.Type != "none" {
		if tc.Type == "" {
			tc.Type = "auto"
		}
		t := true
		tc.DisableParallelToolUse = &t
	}
	if tc.Type != "" && (len(r.Tools) > 0 || tc.Type == "none") {
		q.ToolChoice = tc
	}
	maxTokens := int64(DefaultMaxTokens)
	switch {
	case r.MaxOutputTokens != nil:
		maxTokens = *r.MaxOutputTokens
	case x.t.MaxOutputTokens > 0:
		maxTokens = x.t.MaxOutputTokens
	}
	q.MaxTokens = &maxTokens
	if rs := r.Reasoning; rs != nil {
		switch {
		case rs.Enabled != nil && *rs.Enabled:
			q.Thinking = &anthThinking{Type: "enabled", BudgetTokens: rs.BudgetTokens}
			if rs.Adaptive {
				q.Thinking = &anthThinking{Type: "adaptive"}
			}
		case rs.Effort != "":
			budget := map[string]int64{"low": 1024, "medium": 4096, "high": 16384, "xhigh": 32768}[rs.Effort]
			switch {
			case rs.Effort == "none" || rs.Effort == "minimal":
			case budget == 0:
				return dst, x.reject(FeatReasoning, "unknown reasoning effort "+strconv.Quote(rs.Effort))
			default:
				budget = min(budget, maxTokens-1)
				if budget < 1024 {
					return dst, x.reject(FeatReasoning, "Anthropic thinking needs max_tokens above 1024")
				}
				q.Thinking = &anthThinking{Type: "enabled", BudgetTokens: budget}
			}
		}
	}
	if f := r.ResponseFormat; f != nil {
		switch f.Type {
		case canonical.FormatJSONObject:
			if err := x.check(FeatJSONObject); err != nil {
				return dst, err
			}
		case canonical.FormatJSONSchema:
			q.OutputConfig = &anthOutputConfig{Format: &anthFormat{Type: "json_schema", Schema: f.Schema}}
		}
	}
	if r.User != "" {
		q.Metadata = &anthMetadata{UserID: r.User}
	}
	switch r.ServiceTier {
	case "":
	case "auto":
		q.ServiceTier = "auto"
	case "default":
		q.ServiceTier = "standard_only"
	default:
		x.drop(FeatServiceTier)
	}
	b, err := json.Marshal(&q)
	if err != nil {
		return dst, fmt.Errorf("encode messages request: %w", err)
	}
	return append(dst, b...), nil
}

// anthBlockOf is the user-turn block for a part; ok is false for parts
// that send nothing (empty text).
func anthBlockOf(p *canonical.Part, x *encoder) (anthBlock, bool, error) {
	switch p.Type {
	case canonical.PartText:
		if p.Text == "" {
			return anthBlock{}, false, nil
		}
		t := p.Text
		return anthBlock{Type: "text", Text: &t, CacheControl: p.CacheHint}, true, nil
	case canonical.PartImage:
		img := p.Image
		if img.URL != "" {
			return anthBlock{Type: "image", Source: &anthSource{Type: "url", URL: img.URL}, CacheControl: p.CacheHint}, true, nil
		}
		if !anthropicMedia[img.MediaType] {
			return anthBlock{}, false, x.reject(FeatImageBase64, "Anthropic takes jpeg, png, gif and webp images, not "+strconv.Quote(img.MediaType))
		}
		return anthBlock{Type: "image", Source: &anthSource{Type: "base64", MediaType: img.MediaType, Data: img.Data}, CacheControl: p.CacheHint}, true, nil
	case canonical.PartFile:
		f := p.File
		switch {
		case f.Data != "" && f.MediaType == "application/pdf":
			return anthBlock{Type: "document", Source: &anthSource{Type: "base64", MediaType: f.MediaType, Data: f.Data}, CacheControl: p.CacheHint}, true, nil
		case f.Data != "" && f.MediaType == "text/plain":
			return anthBlock{Type: "document", Source: &anthSource{Type: "text", MediaType: f.MediaType, Data: unb64(f.Data)}, CacheControl: p.CacheHint}, true, nil
		}
		return anthBlock{}, false, x.reject(FeatFileInput, "Anthropic documents are PDF or plain-text data")
	case canonical.PartToolResult:
		tr := p.ToolResult
		b := anthBlock{Type: "tool_result", ToolUseID: anthropicID(tr.CallID), CacheControl: p.CacheHint}
		if tr.IsError {
			t := true
			b.IsError = &t
		}
		if len(tr.Content) == 1 && tr.Content[0].Type == canonical.PartText {
			b.Content, _ = json.Marshal(tr.Content[0].Text)
		} else {
			inner := make([]anthBlock, 0, len(tr.Content))
			for i := range tr.Content {
				ib, ok, err := anthBlockOf(&tr.Content[i], x)
				if err != nil {
					return anthBlock{}, false, err
				}
				if ok {
					inner = append(inner, ib)
				}
			}
			if len(inner) > 0 {
				b.Content, _ = json.Marshal(inner)
			}
		}
		return b, true, nil
	case canonical.PartAudio:
		return anthBlock{}, false, x.check(FeatAudioInput)
	}
	return anthBlock{}, false, nil
}

func (u *anthropicUpstream) decodeResponse(body []byte, r *canonical.Response) error {
	var m anthResponse
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("decode message: %w", err)
	}
	if m.Type != "message" {
		return fmt.Errorf("the body is not a message (type %q)", m.Type)
	}
	r.ID, r.Model, r.Created = m.ID, m.Model, u.now.Unix()
	for i := range m.Content {
		if p, ok := anthOutPart(&m.Content[i]); ok {
			r.Parts = append(r.Parts, p)
		}
	}
	if m.StopReason != nil {
		r.Finish = finishFromAnthropic(*m.StopReason)
	}
	if m.StopSequence != nil {
		r.StopSequence = *m.StopSequence
	}
	var c anthCounts
	c.merge(m.Usage)
	r.Usage = c.canonical()
	return nil
}

// anthOutPart reads an output block; ok is false for blocks Relay does not
// carry (server tool results and the like).
func anthOutPart(b *anthBlock) (canonical.Part, bool) {
	switch b.Type {
	case "text":
		if b.Text == nil {
			return canonical.Part{Type: canonical.PartText}, true
		}
		return canonical.Part{Type: canonical.PartText, Text: *b.Text}, true
	case "thinking":
		p := canonical.Part{Type: canonical.PartThinking, Origin: canonical.OriginAnthropic}
		if b.Thinking != nil {
			p.Text = *b.Thinking
		}
		if b.Signature != nil {
			p.Signature = *b.Signature
		}
		return p, true
	case "redacted_thinking":
		return canonical.Part{Type: canonical.PartRedactedThinking, Signature: b.Data, Origin: canonical.OriginAnthropic}, true
	case "tool_use":
		return canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: b.ID, Name: b.Name, Arguments: argsText(b.Input)}}, true
	}
	return canonical.Part{}, false
}

func (u *anthropicUpstream) decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || u.completed {
		return evs, nil
	}
	var e anthEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return evs, fmt.Errorf("decode %s event: %w", eventType(ev), err)
	}
	typ := e.Type
	if len(ev.Name) > 0 {
		typ = string(ev.Name)
	}
	switch typ {
	case "message_start":
		if e.Message == nil {
			return evs, fmt.Errorf("message_start without a message")
		}
		u.started = true
		u.counts.merge(e.Message.Usage)
		start := u.counts.canonical()
		// Output as reported so far (Anthropic sends a placeholder, usually 1): a caller that leaves now is charged what the upstream reported.
		evs = append(evs, canonical.Event{Kind: canonical.EventStart, ID: e.Message.ID, Model: e.Message.Model, Created: u.now.Unix(), Usage: start})
	case "content_block_start":
		if e.ContentBlock == nil {
			return evs, fmt.Errorf("content_block_start without a block")
		}
		p, ok := anthOutPart(e.ContentBlock)
		if !ok {
			return evs, nil
		}
		if u.parts == nil {
			u.parts = map[int]int{}
		}
		at := u.next
		u.next++
		u.parts[e.Index] = at
		start := canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: p.Type, Origin: p.Origin}
		switch p.Type {
		case canonical.PartToolCall:
			start.ID, start.Name = p.ToolCall.ID, p.ToolCall.Name
			evs = append(evs, start)
			if a := p.ToolCall.Arguments; a != "{}" && a != "" {
				evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: a})
			}
		case canonical.PartRedactedThinking:
			start.Text = p.Signature
			evs = append(evs, start)
		default:
			evs = append(evs, start)
			if p.Text != "" || p.Signature != "" {
				evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: p.Text, Signature: p.Signature})
			}
		}
	case "content_block_delta":
		at, ok := u.parts[e.Index]
		if !ok || e.Delta == nil {
			return evs, nil
		}
		d := e.Delta
		switch d.Type {
		case "text_delta":
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: d.Text})
		case "input_json_delta":
			if d.PartialJSON != "" {
				evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: d.PartialJSON})
			}
		case "thinking_delta":
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: d.Thinking})
		case "signature_delta":
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Signature: d.Signature})
		}
	case "content_block_stop":
		if at, ok := u.parts[e.Index]; ok {
			evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: at})
		}
	case "message_delta":
		u.counts.merge(e.Usage)
		evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: u.counts.canonical()})
		if e.Delta != nil && e.Delta.StopReason != nil {
			f := canonical.Event{Kind: canonical.EventFinish, Finish: finishFromAnthropic(*e.Delta.StopReason)}
			if e.Delta.StopSequence != nil {
				f.StopSequence = *e.Delta.StopSequence
			}
			evs = append(evs, f)
		}
	case "message_stop":
		u.completed = true
		evs = append(evs, canonical.Event{Kind: canonical.EventDone})
	case "error":
		u.completed = true
		var typ, msg string
		if e.Error != nil {
			typ, msg = e.Error.Type, e.Error.Message
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventError, Err: streamErrorOf(typ, 0, msg)})
	}
	return evs, nil
}

func (u *anthropicUpstream) atEOF(evs []canonical.Event) ([]canonical.Event, bool) {
	return evs, u.completed
}
