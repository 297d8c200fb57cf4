package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
)

// OpenAI Chat Completions, caller side: decode a Chat request.

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
		advise(r, "prompt_cache_retention", "prompt_cache_retention")
	}
	if err := decodeChatMessages(q.Messages, r); err != nil {
		return err
	}
	if err := decodeChatTools(q.Tools, r); err != nil {
		return err
	}
	if err := chatToolChoice(q.ToolChoice, &r.ToolChoice); err != nil {
		return err
	}
	r.ParallelToolCalls = q.ParallelToolCalls
	r.MaxOutputTokens = q.MaxCompletionTokens
	if r.MaxOutputTokens == nil {
		r.MaxOutputTokens = q.MaxTokens
	}
	r.Temperature, r.TopP, r.TopK = q.Temperature, q.TopP, q.TopK
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
	if r.ResponseFormat, err = decodeChatResponseFormat(q.ResponseFormat); err != nil {
		return err
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

// decodeChatMessages reads the conversation: leading system and developer
// messages make the system prompt, later ones stay in place.
func decodeChatMessages(msgs []chatMessage, r *canonical.Request) error {
	leading := true
	for i := range msgs {
		m := &msgs[i]
		at := "messages[" + strconv.Itoa(i) + "]"
		if m.Role != "system" && m.Role != "developer" {
			leading = false
		}
		if !isNull(m.Audio) || !isNull(m.FunctionCall) {
			return unsupported(at+".audio", "audio and deprecated function_call history")
		}
		if present(m.Annotations) {
			advise(r, "messages[].annotations", at+".annotations")
		}
		if present(m.Parsed) {
			advise(r, "messages[].parsed", at+".parsed")
		}
		nSys, nMsg := len(r.System), len(r.Messages)
		if err := decodeChatMessage(m, at, leading, r); err != nil {
			return err
		}
		switch {
		case len(r.System) > nSys:
			chatCacheHints(m, at, r.System[nSys:], r)
		case len(r.Messages) > nMsg:
			chatCacheHints(m, at, r.Messages[len(r.Messages)-1].Parts, r)
		}
	}
	return nil
}

// chatCacheHints places the cache breakpoints of the message just decoded
// (the last of r.System or r.Messages) and notes where they were sent: a
// part's own stays on the part, the message's goes on its last part (the
// tool result, for a tool message), as an Anthropic caller would place it.
func chatCacheHints(m *chatMessage, at string, parts []canonical.Part, r *canonical.Request) {
	for j := range parts {
		if parts[j].CacheHint != nil {
			r.NoteSentAt(cacheControlName, at+".content["+strconv.Itoa(j)+"].cache_control")
		}
	}
	if !present(m.CacheControl) {
		return
	}
	r.NoteSentAt(cacheControlName, at+".cache_control")
	if len(parts) == 0 {
		return // an empty message: nothing to cache up to
	}
	if last := &parts[len(parts)-1]; last.CacheHint == nil {
		last.CacheHint = m.CacheControl
	}
}

// decodeChatMessage reads one message, at at, by its role.
func decodeChatMessage(m *chatMessage, at string, leading bool, r *canonical.Request) error {
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
		return decodeChatAssistant(m, at, r)
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
	return nil
}

// decodeChatAssistant reads an assistant message: its thinking blocks,
// content, refusal and tool calls, in that order.
func decodeChatAssistant(m *chatMessage, at string, r *canonical.Request) error {
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
			advise(r, "messages[].tool_calls[].function.parsed_arguments", fmt.Sprintf("%s.tool_calls[%d].function.parsed_arguments", at, j))
		}
		if present(tc.CacheControl) {
			r.NoteSentAt(cacheControlName, fmt.Sprintf("%s.tool_calls[%d].cache_control", at, j))
		}
		msg.Parts = append(msg.Parts, canonical.Part{Type: canonical.PartToolCall, CacheHint: nonNull(tc.CacheControl), ToolCall: &canonical.ToolCall{
			ID: canonicalID(chatCallPrefix, tc.ID), Name: tc.Function.Name, Arguments: tc.Function.Arguments,
		}})
	}
	r.Messages = append(r.Messages, msg)
	return nil
}

// decodeChatTools reads the tools: function tools only.
func decodeChatTools(tools []chatTool, r *canonical.Request) error {
	for i := range tools {
		t := &tools[i]
		at := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "function" {
			return unsupported(at+".type", "only function tools")
		}
		if t.Function == nil || t.Function.Name == "" {
			return badField(at+".function.name", "a function tool needs a name")
		}
		r.Tools = append(r.Tools, canonical.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters, Strict: t.Function.Strict, CacheHint: nonNull(t.CacheControl)})
		if present(t.CacheControl) {
			r.NoteSentAt(cacheControlName, at+".cache_control")
		}
	}
	return nil
}

// decodeChatResponseFormat reads response_format; text is no format at all.
func decodeChatResponseFormat(f *chatResponseFormat) (*canonical.ResponseFormat, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case "text":
	case "json_object":
		return &canonical.ResponseFormat{Type: canonical.FormatJSONObject}, nil
	case "json_schema":
		if f.JSONSchema == nil {
			return nil, badField("response_format.json_schema", "a json_schema response format needs json_schema")
		}
		s := f.JSONSchema
		return &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: s.Name, Description: s.Description, Schema: s.Schema, Strict: s.Strict}, nil
	default:
		return nil, badField("response_format.type", "unknown type %q", f.Type)
	}
	return nil, nil
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
			out = append(out, canonical.Part{Type: canonical.PartText, Text: *p.Text, CacheHint: nonNull(p.CacheControl)})
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
			out = append(out, canonical.Part{Type: canonical.PartImage, Image: img, CacheHint: nonNull(p.CacheControl)})
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
			out = append(out, canonical.Part{Type: canonical.PartFile, File: f, CacheHint: nonNull(p.CacheControl)})
		default:
			return nil, badField(pat+".type", "unknown content part type %q", p.Type)
		}
	}
	return out, nil
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
