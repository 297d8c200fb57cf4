package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/relay-llm/relay/internal/canonical"
)

// Anthropic Messages, caller side: decode a Messages request.

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
		advise(r, "context_management", "context_management")
	}
	r.Model = q.Model
	r.MaxOutputTokens = q.MaxTokens
	sys, err := anthSystem(q.System, "system")
	if err != nil {
		return err
	}
	r.System = sys
	for i := range sys {
		if sys[i].CacheHint != nil {
			r.NoteSentAt(cacheControlName, "system["+strconv.Itoa(i)+"].cache_control")
		}
	}
	if err := decodeAnthMessages(q.Messages, r); err != nil {
		return err
	}
	if err := decodeAnthTools(q.Tools, r); err != nil {
		return err
	}
	if err := decodeAnthToolChoice(q.ToolChoice, r); err != nil {
		return err
	}
	if err := decodeAnthThinking(q.Thinking, r); err != nil {
		return err
	}
	if err := decodeAnthOutputConfig(q.OutputConfig, r); err != nil {
		return err
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

// decodeAnthMessages reads the conversation: a system turn inside it joins
// the system prompt while no message precedes it, a user turn's tool
// results become a tool message ahead of the rest.
func decodeAnthMessages(msgs []anthMessage, r *canonical.Request) error {
	for i := range msgs {
		m := &msgs[i]
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
			if present(blocks[j].CacheControl) {
				r.NoteSentAt(cacheControlName, at+".content["+strconv.Itoa(j)+"].cache_control")
			}
			if present(blocks[j].Citations) {
				advise(r, "messages[].content[].citations", at+".content["+strconv.Itoa(j)+"].citations")
			}
		}
		switch m.Role {
		case "user":
			err = decodeAnthUserTurn(blocks, at, r)
		case "assistant":
			err = decodeAnthAssistantTurn(blocks, at, r)
		default:
			err = badField(at+".role", "expected user, assistant or system, got %q", m.Role)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeAnthUserTurn reads a user turn: its tool results make a tool
// message, the rest a user message after it.
func decodeAnthUserTurn(blocks []anthBlock, at string, r *canonical.Request) error {
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
	return nil
}

// decodeAnthAssistantTurn reads an assistant turn.
func decodeAnthAssistantTurn(blocks []anthBlock, at string, r *canonical.Request) error {
	msg := canonical.Message{Role: canonical.RoleAssistant}
	for j := range blocks {
		p, err := anthPart(&blocks[j], fmt.Sprintf("%s.content[%d]", at, j), true)
		if err != nil {
			return err
		}
		msg.Parts = append(msg.Parts, p)
	}
	r.Messages = append(r.Messages, msg)
	return nil
}

// decodeAnthTools reads the tools; Anthropic's server tools are refused.
func decodeAnthTools(tools []json.RawMessage, r *canonical.Request) error {
	for i, raw := range tools {
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
			advise(r, "tools[].defer_loading", at+".defer_loading")
		}
		if present(t.CacheControl) {
			r.NoteSentAt(cacheControlName, at+".cache_control")
		}
		if set(t.EagerInputStreaming) {
			advise(r, "tools[].eager_input_streaming", at+".eager_input_streaming")
		}
		r.Tools = append(r.Tools, canonical.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema, Strict: t.Strict, CacheHint: t.CacheControl})
	}
	return nil
}

func decodeAnthToolChoice(tc *anthToolChoice, r *canonical.Request) error {
	if tc == nil {
		return nil
	}
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
	return nil
}

func decodeAnthThinking(th *anthThinking, r *canonical.Request) error {
	if th == nil {
		return nil
	}
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
	return nil
}

// decodeAnthOutputConfig reads output_config: a JSON schema format, and an
// effort that joins the reasoning settings.
func decodeAnthOutputConfig(oc *anthOutputConfig, r *canonical.Request) error {
	if oc == nil {
		return nil
	}
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
