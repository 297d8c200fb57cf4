package mockupstream

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// --- request ---

type anthropicRequest struct {
	Model         string               `json:"model"`
	MaxTokens     *int                 `json:"max_tokens"`
	Messages      []anthropicMessage   `json:"messages"`
	System        json.RawMessage      `json:"system"`
	Stream        bool                 `json:"stream"`
	Tools         []anthropicTool      `json:"tools"`
	ToolChoice    *anthropicToolChoice `json:"tool_choice"`
	Thinking      *anthropicThinking   `json:"thinking"`
	StopSequences []string             `json:"stop_sequences"`
	Temperature   *float64             `json:"temperature"`

	// systemTurns: the caller sent an anthropic-beta header, under which
	// Anthropic takes role "system" turns inside the conversation (Claude
	// Code sends them).
	systemTurns bool
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content anthropicContent `json:"content"`
}

// anthropicContent is a message's content: a string or an array of blocks.
type anthropicContent struct {
	blocks []anthropicBlock
	set    bool
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or blocks
	Thinking  string          `json:"thinking"`
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *anthropicContent) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] == 'n' {
		return nil
	}
	switch data[0] {
	case '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		c.set, c.blocks = true, []anthropicBlock{{Type: "text", Text: s}}
		return nil
	case '[':
		c.set = true
		return json.Unmarshal(data, &c.blocks)
	}
	return typeMismatch(data, reflect.TypeFor[string]())
}

type anthropicTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

func anthropicInvalid(msg string) *apiError { return &apiError{kind: errInvalid, msg: msg} }

// decodeAnthropic parses and validates a Messages request (or a count_tokens
// request, which needs no max_tokens) into cv. The request is never nil.
func decodeAnthropic(body []byte, cv *convo, count, beta bool) (*anthropicRequest, *apiError) {
	req := &anthropicRequest{systemTurns: beta}
	if e := decodeBody(body, req, provAnthropic); e != nil {
		return req, e
	}
	cv.model = req.Model
	switch {
	case req.Model == "":
		return req, anthropicInvalid("model: Field required")
	case req.MaxTokens == nil && !count:
		return req, anthropicInvalid("max_tokens: Field required")
	case req.MaxTokens != nil && *req.MaxTokens < 0:
		return req, anthropicInvalid("max_tokens: Input should be greater than or equal to 0")
	case req.Messages == nil:
		return req, anthropicInvalid("messages: Field required")
	case len(req.Messages) == 0:
		return req, anthropicInvalid("messages: at least one message is required")
	case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1):
		if *req.Temperature < 0 {
			return req, anthropicInvalid("temperature: Input should be greater than or equal to 0")
		}
		return req, anthropicInvalid("temperature: Input should be less than or equal to 1")
	}
	if req.MaxTokens != nil {
		cv.maxTokens, cv.hasMax = *req.MaxTokens, true
	}
	if e := anthropicSystem(req.System, cv); e != nil {
		return req, e
	}
	for i, t := range req.Tools {
		if t.Type != "" && t.Type != "custom" {
			continue // server tools (web_search …) are never called
		}
		if t.Name == "" {
			return req, anthropicInvalid("tools." + strconv.Itoa(i) + ".custom.name: Field required")
		}
		if len(t.InputSchema) == 0 {
			return req, anthropicInvalid("tools." + strconv.Itoa(i) + ".custom.input_schema: Field required")
		}
		cv.tools = append(cv.tools, toolDef{name: t.Name, schema: t.InputSchema})
		cv.textBytes += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	if e := anthropicMessages(req, cv); e != nil {
		return req, e
	}
	if tc := req.ToolChoice; tc != nil {
		if len(req.Tools) == 0 && tc.Type != "none" {
			return req, anthropicInvalid("tool_choice: tool_choice may only be specified while providing tools.")
		}
		switch tc.Type {
		case "auto":
		case "none":
			cv.mode = toolNone
		case "any":
			cv.mode = toolAny
		case "tool":
			cv.mode, cv.forced = toolForced, tc.Name
			found := false
			for _, t := range cv.tools {
				found = found || t.name == tc.Name
			}
			if !found {
				return req, anthropicInvalid("tool_choice.tool.name: Tool '" + tc.Name + "' not found in tools")
			}
		default:
			return req, anthropicInvalid("tool_choice: Input tag '" + tc.Type + "' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'")
		}
		cv.single = tc.DisableParallelToolUse
	}
	if th := req.Thinking; th != nil {
		switch th.Type {
		case "enabled":
			if th.BudgetTokens < 1024 {
				return req, anthropicInvalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
			}
			if req.MaxTokens != nil && *req.MaxTokens <= th.BudgetTokens {
				return req, anthropicInvalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
			}
			cv.showThinking = true
		case "adaptive":
			cv.showThinking = true
		case "disabled":
		default:
			return req, anthropicInvalid("thinking: Input tag '" + th.Type + "' found using 'type' does not match any of the expected tags: 'adaptive', 'disabled', 'enabled'")
		}
		if cv.showThinking && (cv.mode == toolAny || cv.mode == toolForced) {
			return req, anthropicInvalid("Thinking may not be enabled when tool_choice forces tool use.")
		}
	}
	cv.stops = req.StopSequences
	return req, nil
}

// anthropicSystem reads system: a string or an array of text blocks.
func anthropicSystem(raw json.RawMessage, cv *convo) *apiError {
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		cv.textBytes += len(s)
		return nil
	}
	var blocks []anthropicBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return anthropicInvalid("system: Input should be a valid string")
	}
	for _, b := range blocks {
		cv.textBytes += len(b.Text)
	}
	return nil
}

// anthropicMessages walks the conversation: roles, non-empty text, tools
// defined when tool blocks appear, and every tool_use answered by a
// tool_result in the very next message.
func anthropicMessages(req *anthropicRequest, cv *convo) *apiError {
	var pending []string // tool_use ids of the previous assistant message
	pendingAt := 0
	unanswered := func() *apiError {
		return anthropicInvalid("messages." + strconv.Itoa(pendingAt) + ": `tool_use` ids were found without `tool_result` blocks immediately after: " +
			strings.Join(pending, ", ") + ". Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
	}
	for i, m := range req.Messages {
		at := "messages." + strconv.Itoa(i)
		if m.Role == "system" && req.systemTurns && i > 0 {
			if !m.Content.set {
				return anthropicInvalid(at + ".content: Field required")
			}
			for _, b := range m.Content.blocks {
				if b.Type != "text" || b.Text == "" {
					return anthropicInvalid(at + ".content: system messages hold non-empty text blocks only")
				}
				cv.textBytes += len(b.Text)
			}
			continue
		}
		if m.Role != "user" && m.Role != "assistant" {
			return anthropicInvalid(at + ".role: Input should be 'user' or 'assistant'")
		}
		if !m.Content.set {
			return anthropicInvalid(at + ".content: Field required")
		}
		cv.messages++
		var answered []string
		var userText strings.Builder
		hasResult := false
		for j, b := range m.Content.blocks {
			switch b.Type {
			case "text":
				if b.Text == "" {
					return anthropicInvalid("messages: text content blocks must be non-empty")
				}
				cv.textBytes += len(b.Text)
				if userText.Len() > 0 {
					userText.WriteByte('\n')
				}
				userText.WriteString(b.Text)
			case "tool_use", "tool_result":
				if len(req.Tools) == 0 {
					return anthropicInvalid("Requests which include `tool_use` or `tool_result` blocks must define tools.")
				}
				if b.Type == "tool_use" {
					if m.Role != "assistant" {
						return anthropicInvalid(at + ".content." + strconv.Itoa(j) + ": tool_use blocks may only appear in assistant messages")
					}
					answered = append(answered, b.ID) // reused below as this message's calls
					cv.textBytes += len(b.Name) + len(b.Input)
					continue
				}
				if m.Role != "user" || !containsString(pending, b.ToolUseID) {
					return anthropicInvalid(at + ".content." + strconv.Itoa(j) + ": unexpected `tool_use_id` found in `tool_result` blocks: " + b.ToolUseID +
						". Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
				}
				hasResult = true
				answered = append(answered, b.ToolUseID)
				text := toolResultText(b.Content)
				cv.textBytes += len(text)
				cv.resultText = text
			case "thinking", "redacted_thinking":
				cv.textBytes += len(b.Thinking)
			default:
				cv.mediaParts++
			}
		}
		// The previous assistant's tool_use ids must all be answered here.
		for _, id := range pending {
			if m.Role != "user" || !containsString(answered, id) {
				return unanswered()
			}
		}
		pending = pending[:0]
		switch {
		case m.Role == "assistant":
			pending, pendingAt = append(pending, answered...), i
			cv.last = turnAssistant
		case hasResult:
			cv.last = turnToolResult
		default:
			cv.userText, cv.last = userText.String(), turnUser
		}
	}
	if len(pending) > 0 {
		return unanswered()
	}
	return nil
}

func containsString(list []string, s string) bool { return indexOf(list, s) >= 0 }

// toolResultText is the text of a tool_result's content (string or blocks).
func toolResultText(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []anthropicBlock
	_ = json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// --- response ---

type anthropicMessageOut struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []any          `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type anthropicUsage struct {
	InputTokens              int                     `json:"input_tokens"`
	CacheCreationInputTokens int                     `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int                     `json:"cache_read_input_tokens"`
	CacheCreation            *anthropicCacheCreation `json:"cache_creation,omitempty"`
	OutputTokens             int                     `json:"output_tokens"`
	OutputTokensDetails      *anthropicOutputDetails `json:"output_tokens_details,omitempty"`
	ServiceTier              string                  `json:"service_tier,omitempty"`
}

type anthropicCacheCreation struct {
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
}

type anthropicOutputDetails struct {
	ThinkingTokens int `json:"thinking_tokens"`
}

type anthropicTextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicToolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicThinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type anthropicMessageStart struct {
	Type    string               `json:"type"`
	Message *anthropicMessageOut `json:"message"`
}

type anthropicBlockStart struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock any    `json:"content_block"`
}

type anthropicBlockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta any    `json:"delta"`
}

type anthropicTextDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicInputJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type anthropicThinkingDelta struct {
	Type     string `json:"type"`
	Thinking string `json:"thinking"`
}

type anthropicSignatureDelta struct {
	Type      string `json:"type"`
	Signature string `json:"signature"`
}

type anthropicBlockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type anthropicMessageDelta struct {
	Type  string              `json:"type"`
	Delta anthropicStopDelta  `json:"delta"`
	Usage anthropicDeltaUsage `json:"usage"`
}

type anthropicStopDelta struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// anthropicDeltaUsage is message_delta's cumulative usage.
type anthropicDeltaUsage struct {
	InputTokens              int                     `json:"input_tokens"`
	CacheCreationInputTokens int                     `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int                     `json:"cache_read_input_tokens"`
	OutputTokens             int                     `json:"output_tokens"`
	OutputTokensDetails      *anthropicOutputDetails `json:"output_tokens_details,omitempty"`
}

type anthropicEvent struct {
	Type string `json:"type"`
}

type anthropicTokenCount struct {
	InputTokens int `json:"input_tokens"`
}

func anthropicStopReason(f finish) string {
	switch f {
	case finishLength:
		return "max_tokens"
	case finishStopSequence:
		return "stop_sequence"
	case finishToolCalls:
		return "tool_use"
	}
	return "end_turn"
}

// anthropicUsageOf maps usage: input_tokens excludes cache reads and writes;
// output_tokens includes thinking.
func anthropicUsageOf(u usage) anthropicUsage {
	au := anthropicUsage{
		InputTokens:              u.input - u.cacheRead - u.cacheWrite,
		CacheCreationInputTokens: u.cacheWrite,
		CacheReadInputTokens:     u.cacheRead,
		CacheCreation:            &anthropicCacheCreation{Ephemeral5m: u.cacheWrite},
		OutputTokens:             u.output + u.reasoning,
		ServiceTier:              "standard",
	}
	if u.reasoning > 0 {
		au.OutputTokensDetails = &anthropicOutputDetails{ThinkingTokens: u.reasoning}
	}
	return au
}

func (c *call) serveMessages() {
	rp := c.conv.plan(true)
	u := anthropicUsageOf(rp.usage)
	stop := anthropicStopReason(rp.finish)
	var stopSeq *string
	if rp.stopSeq != "" {
		stopSeq = &rp.stopSeq
	}
	ids := make([]string, len(rp.calls))
	for i := range ids {
		ids[i] = toolUseID()
	}
	var sig string
	if len(rp.thinking) > 0 {
		sig = signature()
	}
	msg := &anthropicMessageOut{
		ID: anthropicMsgID(), Type: "message", Role: "assistant", Model: c.anth.Model,
		Content: make([]any, 0, 2+len(rp.calls)),
	}

	if !c.stream {
		if len(rp.thinking) > 0 {
			msg.Content = append(msg.Content, &anthropicThinkingBlock{Type: "thinking", Thinking: joinPieces(rp.thinking), Signature: sig})
		}
		if rp.text != "" {
			msg.Content = append(msg.Content, &anthropicTextBlock{Type: "text", Text: rp.text})
		}
		for i, tc := range rp.calls {
			msg.Content = append(msg.Content, &anthropicToolUseBlock{Type: "tool_use", ID: ids[i], Name: tc.name, Input: json.RawMessage(tc.args)})
		}
		msg.StopReason, msg.StopSequence, msg.Usage = &stop, stopSeq, u
		c.writeJSON(msg)
		return
	}

	if !c.beginStream(sseContentType, frameNamed) {
		return
	}
	start := u
	start.OutputTokens, start.OutputTokensDetails = 1, nil
	msg.Usage = start
	if !c.send("message_start", &anthropicMessageStart{Type: "message_start", Message: msg}) {
		return
	}
	index := 0
	pinged := false
	block := func(cb any, deltas func() bool) bool {
		if !c.send("content_block_start", &anthropicBlockStart{Type: "content_block_start", Index: index, ContentBlock: cb}) {
			return false
		}
		if !pinged {
			pinged = true
			if !c.send("ping", &anthropicEvent{Type: "ping"}) {
				return false
			}
		}
		if !deltas() {
			return false
		}
		ok := c.send("content_block_stop", &anthropicBlockStop{Type: "content_block_stop", Index: index})
		index++
		return ok
	}
	delta := func(d any) bool {
		return c.send("content_block_delta", &anthropicBlockDelta{Type: "content_block_delta", Index: index, Delta: d})
	}
	if len(rp.thinking) > 0 {
		if !block(&anthropicThinkingBlock{Type: "thinking"}, func() bool {
			for _, p := range rp.thinking {
				if !delta(&anthropicThinkingDelta{Type: "thinking_delta", Thinking: p}) {
					return false
				}
			}
			return delta(&anthropicSignatureDelta{Type: "signature_delta", Signature: sig})
		}) {
			return
		}
	}
	if len(rp.pieces) > 0 {
		if !block(&anthropicTextBlock{Type: "text"}, func() bool {
			for _, p := range rp.pieces {
				if !delta(&anthropicTextDelta{Type: "text_delta", Text: p}) {
					return false
				}
			}
			return true
		}) {
			return
		}
	}
	for i, tc := range rp.calls {
		if !block(&anthropicToolUseBlock{Type: "tool_use", ID: ids[i], Name: tc.name, Input: json.RawMessage("{}")}, func() bool {
			if !delta(&anthropicInputJSONDelta{Type: "input_json_delta"}) {
				return false
			}
			for _, frag := range tc.pieces {
				if !delta(&anthropicInputJSONDelta{Type: "input_json_delta", PartialJSON: frag}) {
					return false
				}
			}
			return true
		}) {
			return
		}
	}
	if !pinged && !c.send("ping", &anthropicEvent{Type: "ping"}) {
		return
	}
	if !c.send("message_delta", &anthropicMessageDelta{
		Type:  "message_delta",
		Delta: anthropicStopDelta{StopReason: stop, StopSequence: stopSeq},
		Usage: anthropicDeltaUsage{
			InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
			CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens,
			OutputTokensDetails: u.OutputTokensDetails,
		},
	}) {
		return
	}
	c.send("message_stop", &anthropicEvent{Type: "message_stop"})
}
