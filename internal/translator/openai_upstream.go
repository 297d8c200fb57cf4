package translator

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Chat Completions, upstream side: encode a request for the openai
// shape.

var openaiSupport = supportTable{
	FeatTopK:            {Dropped, "Chat Completions has no top_k: a sampling hint, the answer is sampled without it"},
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
	var err error
	if q.Messages, err = chatMessagesOf(r, x); err != nil {
		return dst, err
	}
	for _, t := range r.Tools {
		q.Tools = append(q.Tools, chatTool{Type: "function", Function: &chatFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
	}
	q.ToolChoice = chatToolChoiceOf(r.ToolChoice)
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
	q.ResponseFormat = chatResponseFormatOf(r.ResponseFormat)
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
	q.ServiceTier = chatServiceTier(r.ServiceTier, x)
	b, err := json.Marshal(&q)
	if err != nil {
		return dst, fmt.Errorf("encode chat request: %w", err)
	}
	return append(dst, b...), nil
}

// chatMessagesOf is the conversation as Chat messages: the system prompt
// first, then each message by its role.
func chatMessagesOf(r *canonical.Request, x *encoder) ([]chatMessage, error) {
	var out []chatMessage
	if len(r.System) > 0 {
		content, err := json.Marshal(canonical.TextOf(r.System, "\n"))
		if err != nil {
			return nil, err
		}
		out = append(out, chatMessage{Role: "system", Content: content})
	}
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == canonical.RoleAssistant {
		if err := x.check(FeatPrefill); err != nil {
			return nil, err
		}
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		switch m.Role {
		case canonical.RoleSystem:
			content, _ := json.Marshal(canonical.TextOf(m.Parts, "\n"))
			out = append(out, chatMessage{Role: "system", Content: content})
		case canonical.RoleUser:
			content, err := chatUserContent(m.Parts, x)
			if err != nil {
				return nil, err
			}
			out = append(out, chatMessage{Role: "user", Content: content, Name: m.Name})
		case canonical.RoleAssistant:
			out = append(out, chatAssistantMessage(m))
		case canonical.RoleTool:
			var err error
			if out, err = appendChatToolMessages(out, m, x); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// chatAssistantMessage is an assistant message: its text joined, its tool
// calls; thinking is dropped by rule (FeatThinkingHistory).
func chatAssistantMessage(m *canonical.Message) chatMessage {
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
	return out
}

// appendChatToolMessages appends a tool message for each result in m.
func appendChatToolMessages(out []chatMessage, m *canonical.Message, x *encoder) ([]chatMessage, error) {
	for _, p := range m.Parts {
		if p.Type != canonical.PartToolResult {
			continue
		}
		text, err := toolResultText(p.ToolResult, x)
		if err != nil {
			return nil, err
		}
		content, _ := json.Marshal(text)
		out = append(out, chatMessage{Role: "tool", ToolCallID: openaiID(p.ToolResult.CallID), Content: content})
	}
	return out, nil
}

// chatToolChoiceOf is tool_choice: a bare mode, or the named function.
func chatToolChoiceOf(tc canonical.ToolChoice) json.RawMessage {
	switch tc.Mode {
	case canonical.ToolChoiceAuto:
		return json.RawMessage(`"auto"`)
	case canonical.ToolChoiceNone:
		return json.RawMessage(`"none"`)
	case canonical.ToolChoiceRequired:
		return json.RawMessage(`"required"`)
	case canonical.ToolChoiceTool:
		b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}})
		return b
	}
	return nil
}

// chatResponseFormatOf is response_format: a schema gets a name and is
// strict unless the caller said otherwise.
func chatResponseFormatOf(f *canonical.ResponseFormat) *chatResponseFormat {
	if f == nil {
		return nil
	}
	switch f.Type {
	case canonical.FormatJSONObject:
		return &chatResponseFormat{Type: "json_object"}
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
		return &chatResponseFormat{Type: "json_schema", JSONSchema: &chatJSONSchema{Name: name, Description: f.Description, Schema: f.Schema, Strict: strict}}
	}
	return nil
}

// chatServiceTier maps the caller's tier to OpenAI's; a tier OpenAI does
// not have is dropped.
func chatServiceTier(tier string, x *encoder) string {
	switch tier {
	case "":
	case "auto":
		return "auto"
	case "standard_only":
		return "default"
	case "default", "flex", "priority", "scale":
		return tier
	default:
		x.drop(FeatServiceTier)
	}
	return ""
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
