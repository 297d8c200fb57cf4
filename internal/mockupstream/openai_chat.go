package mockupstream

import (
	"encoding/json"
	"strconv"
	"strings"
)

// --- request ---

type chatRequest struct {
	Model               string             `json:"model"`
	Messages            []chatMessage      `json:"messages"`
	Stream              bool               `json:"stream"`
	StreamOptions       *chatStreamOptions `json:"stream_options"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Temperature         *float64           `json:"temperature"`
	Tools               []chatTool         `json:"tools"`
	ToolChoice          json.RawMessage    `json:"tool_choice"`
	ParallelToolCalls   *bool              `json:"parallel_tool_calls"`
	Stop                json.RawMessage    `json:"stop"`
}

type chatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       string         `json:"role"`
	Content    openAIContent  `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatFunctionCall `json:"function"`
}

type chatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string        `json:"type"`
	Function *chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type chatNamedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

func openAIInvalid(msg, param, code string) *apiError {
	return &apiError{kind: errInvalid, msg: msg, param: param, code: code}
}

func openAIMissing(param string) *apiError {
	return openAIInvalid("Missing required parameter: '"+param+"'.", param, "missing_required_parameter")
}

// decodeChat parses and validates a Chat Completions request into cv. The
// request is never nil.
func decodeChat(body []byte, cv *convo) (*chatRequest, *apiError) {
	req := &chatRequest{}
	if e := decodeBody(body, req, provOpenAI); e != nil {
		return req, e
	}
	cv.model = req.Model
	switch {
	case req.Model == "":
		return req, openAIInvalid("you must provide a model parameter", "", "")
	case req.Messages == nil:
		return req, openAIMissing("messages")
	case len(req.Messages) == 0:
		return req, openAIInvalid("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array")
	case req.StreamOptions != nil && !req.Stream:
		return req, openAIInvalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options", "")
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 2) {
		return req, openAIRange("temperature", *t, 0, 2)
	}
	for _, p := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if p.v != nil {
			if *p.v < 1 {
				return req, openAIInvalid("Invalid '"+p.name+"': integer below minimum value. Expected a value >= 1, but got "+strconv.Itoa(*p.v)+" instead.", p.name, "integer_below_min_value")
			}
			cv.maxTokens, cv.hasMax = *p.v, true
		}
	}
	if e := chatMessages(req.Messages, cv); e != nil {
		return req, e
	}
	for i, t := range req.Tools {
		if t.Type != "" && t.Type != "function" {
			continue // custom tools are never called
		}
		p := "tools[" + strconv.Itoa(i) + "].function"
		if t.Function == nil {
			return req, openAIMissing(p)
		}
		if t.Function.Name == "" {
			return req, openAIMissing(p + ".name")
		}
		cv.tools = append(cv.tools, toolDef{name: t.Function.Name, schema: t.Function.Parameters})
		cv.textBytes += len(t.Function.Name) + len(t.Function.Description) + len(t.Function.Parameters)
	}
	if e := openAIToolChoice(req.ToolChoice, len(req.Tools) > 0, cv, false); e != nil {
		return req, e
	}
	cv.single = req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	cv.stops = stopList(req.Stop)
	return req, nil
}

func openAIRange(name string, v, lo, hi float64) *apiError {
	got := strconv.FormatFloat(v, 'g', -1, 64)
	if v < lo {
		return openAIInvalid("Invalid '"+name+"': decimal below minimum value. Expected a value >= "+strconv.FormatFloat(lo, 'g', -1, 64)+", but got "+got+" instead.", name, "decimal_below_min_value")
	}
	return openAIInvalid("Invalid '"+name+"': decimal above maximum value. Expected a value <= "+strconv.FormatFloat(hi, 'g', -1, 64)+", but got "+got+" instead.", name, "decimal_above_max_value")
}

// chatMessages walks the conversation, checking roles and that every
// assistant tool call is answered by tool messages right after it, as OpenAI
// does.
func chatMessages(msgs []chatMessage, cv *convo) *apiError {
	var pending []string // tool_call_ids awaiting a tool message
	pendingAt := 0
	unanswered := func() *apiError {
		return openAIInvalid("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "+strings.Join(pending, ", "),
			"messages.["+strconv.Itoa(pendingAt)+"].role", "")
	}
	for i, m := range msgs {
		at := "messages.[" + strconv.Itoa(i) + "]"
		if len(pending) > 0 && m.Role != "tool" {
			return unanswered()
		}
		cv.messages++
		cv.textBytes += len(m.Content.text)
		cv.mediaParts += m.Content.media
		switch m.Role {
		case "system", "developer", "user":
			if !m.Content.set {
				return openAIInvalid("Invalid value for 'content': expected a string, got null.", at+".content", "")
			}
			if m.Role == "user" {
				cv.userText, cv.last = m.Content.text, turnUser
			}
		case "assistant":
			for _, tc := range m.ToolCalls {
				pending = append(pending, tc.ID)
				cv.textBytes += len(tc.Function.Name) + len(tc.Function.Arguments)
			}
			pendingAt = i
			cv.last = turnAssistant
		case "tool":
			j := indexOf(pending, m.ToolCallID)
			if j < 0 {
				return openAIInvalid("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", at+".role", "")
			}
			pending = append(pending[:j], pending[j+1:]...)
			cv.resultText, cv.last = m.Content.text, turnToolResult
		case "function":
			cv.resultText, cv.last = m.Content.text, turnToolResult
		default:
			return openAIInvalid("Invalid value: '"+m.Role+"'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", at+".role", "invalid_value")
		}
	}
	if len(pending) > 0 {
		return unanswered()
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// openAIToolChoice reads tool_choice: "none" | "auto" | "required" or a named
// function ({type, function:{name}} for Chat, {type, name} for Responses).
func openAIToolChoice(raw json.RawMessage, haveTools bool, cv *convo, flat bool) *apiError {
	if isNull(raw) {
		return nil
	}
	if !haveTools {
		return openAIInvalid("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice", "")
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "none":
			cv.mode = toolNone
		case "auto":
			cv.mode = toolAuto
		case "required":
			cv.mode = toolAny
		default:
			return openAIInvalid("Invalid value: '"+mode+"'. Supported values are: 'none', 'auto', and 'required'.", "tool_choice", "invalid_value")
		}
		return nil
	}
	var name string
	if flat {
		var named struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &named) != nil || named.Type != "function" {
			return nil // allowed_tools, built-in tools: behave as auto
		}
		name = named.Name
	} else {
		var named chatNamedToolChoice
		if json.Unmarshal(raw, &named) != nil || named.Type != "function" {
			return nil
		}
		name = named.Function.Name
	}
	for _, t := range cv.tools {
		if t.name == name {
			cv.mode, cv.forced = toolForced, name
			return nil
		}
	}
	return openAIInvalid("Invalid value for 'tool_choice': function '"+name+"' is not one of the provided tools.", "tool_choice", "invalid_value")
}

// --- response ---

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             chatUsage    `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
	// PromptFilterResults is Azure's (faceQuirks.azureFilters).
	PromptFilterResults any `json:"prompt_filter_results,omitempty"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
	// ContentFilterResults is Azure's (faceQuirks.azureFilters).
	ContentFilterResults any `json:"content_filter_results,omitempty"`
}

type chatMessageOut struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"`
	Refusal     *string        `json:"refusal"`
	ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	Annotations []struct{}     `json:"annotations"`
	// A compatible server's reasoning member (faceQuirks.reasoning).
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	Reasoning        *string `json:"reasoning,omitempty"`
}

type chatUsage struct {
	PromptTokens            int                   `json:"prompt_tokens"`
	CompletionTokens        int                   `json:"completion_tokens"`
	TotalTokens             int                   `json:"total_tokens"`
	PromptTokensDetails     chatPromptDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails chatCompletionDetails `json:"completion_tokens_details"`
}

type chatPromptDetails struct {
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	AudioTokens      int `json:"audio_tokens"`
}

type chatCompletionDetails struct {
	ReasoningTokens          int `json:"reasoning_tokens"`
	AudioTokens              int `json:"audio_tokens"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	ServiceTier       string            `json:"service_tier"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chatChunkChoice `json:"choices"`
	// Usage is absent unless include_usage was asked for; then null until the
	// final chunk.
	Usage any `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
	// ContentFilterResults is Azure's (faceQuirks.azureFilters).
	ContentFilterResults any `json:"content_filter_results,omitempty"`
}

type chatDelta struct {
	Role      string              `json:"role,omitempty"`
	Content   any                 `json:"content,omitempty"` // absent, null or a string
	Refusal   any                 `json:"refusal,omitempty"` // absent or null
	ToolCalls []chatToolCallDelta `json:"tool_calls,omitempty"`
	// A compatible server's reasoning member (faceQuirks.reasoning).
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Reasoning        string `json:"reasoning,omitempty"`
}

type chatToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function chatFunctionDelta `json:"function"`
}

type chatFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

func chatFinish(f finish) string {
	switch f {
	case finishLength:
		return "length"
	case finishToolCalls:
		return "tool_calls"
	}
	return "stop"
}

func chatUsageOf(u usage) chatUsage {
	completion := u.output + u.reasoning
	return chatUsage{
		PromptTokens:            u.input,
		CompletionTokens:        completion,
		TotalTokens:             u.input + completion,
		PromptTokensDetails:     chatPromptDetails{CachedTokens: u.cacheRead, CacheWriteTokens: u.cacheWrite},
		CompletionTokensDetails: chatCompletionDetails{ReasoningTokens: u.reasoning},
	}
}

const sseContentType = "text/event-stream; charset=utf-8"

func (c *call) serveChat() {
	rp := c.conv.plan(false)
	calls := make([]chatToolCall, len(rp.calls))
	for i, tc := range rp.calls {
		calls[i] = chatToolCall{ID: openAICallID(), Type: "function", Function: chatFunctionCall{Name: tc.name, Arguments: tc.args}}
	}
	id, created, model := chatCompletionID(), c.received.Unix(), c.chat.Model
	finishReason := chatFinish(rp.finish)
	q := quirksOf(c.ctx)
	pieces := rp.pieces
	if q.completionFiltered {
		calls, finishReason = nil, "content_filter"
		pieces = pieces[:len(pieces)/2] // a stream is cut where the filter caught it
	}
	if !c.stream {
		msg := chatMessageOut{Role: "assistant", ToolCalls: calls, Annotations: []struct{}{}}
		if len(calls) == 0 && !q.completionFiltered {
			msg.Content = &rp.text
		}
		if len(rp.thinking) > 0 {
			thought := joinPieces(rp.thinking)
			switch q.reasoning {
			case "reasoning_content":
				msg.ReasoningContent = &thought
			case "reasoning":
				msg.Reasoning = &thought
			}
		}
		cc := chatCompletion{
			ID: id, Object: "chat.completion", Created: created, Model: model,
			Choices:     []chatChoice{{Message: msg, FinishReason: finishReason}},
			Usage:       chatUsageOf(rp.usage),
			ServiceTier: "default", SystemFingerprint: fingerprint(model),
		}
		if q.azureFilters {
			cc.PromptFilterResults = azurePromptFilterResults()
			cc.Choices[0].ContentFilterResults = azureFilterResults(q.completionFiltered)
		}
		c.writeJSON(&cc)
		return
	}

	if !c.beginStream(sseContentType, frameData) {
		return
	}
	chunk := chatChunk{
		ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
		ServiceTier: "default", SystemFingerprint: fingerprint(model),
		Choices: make([]chatChunkChoice, 1),
	}
	includeUsage := c.chat.StreamOptions != nil && c.chat.StreamOptions.IncludeUsage
	if includeUsage {
		chunk.Usage = (*chatUsage)(nil)
	}
	var filters any
	if q.azureFilters {
		filters = azureFilterResults(false)
		// Azure rates the prompt first, in a chunk of its own.
		if !c.send("", map[string]any{"choices": []any{}, "created": 0, "id": "", "model": "", "object": "", "prompt_filter_results": azurePromptFilterResults()}) {
			return
		}
	}
	send := func(d chatDelta) bool {
		chunk.Choices[0] = chatChunkChoice{Delta: d, ContentFilterResults: filters}
		return c.send("", &chunk)
	}
	var null *string
	if len(calls) == 0 {
		if !send(chatDelta{Role: "assistant", Content: "", Refusal: null}) {
			return
		}
		for _, p := range rp.thinking {
			d := chatDelta{}
			switch q.reasoning {
			case "reasoning_content":
				d.ReasoningContent = p
			case "reasoning":
				d.Reasoning = p
			default:
				continue
			}
			if !send(d) {
				return
			}
		}
		for _, p := range pieces {
			if !send(chatDelta{Content: p}) {
				return
			}
		}
	}
	for i, tc := range calls {
		head := chatDelta{ToolCalls: []chatToolCallDelta{{
			Index: i, ID: tc.ID, Type: "function", Function: chatFunctionDelta{Name: tc.Function.Name},
		}}}
		if i == 0 {
			head.Role, head.Content, head.Refusal = "assistant", null, null
		}
		if !send(head) {
			return
		}
		for _, frag := range rp.calls[i].pieces {
			if !send(chatDelta{ToolCalls: []chatToolCallDelta{{Index: i, Function: chatFunctionDelta{Arguments: frag}}}}) {
				return
			}
		}
	}
	chunk.Choices[0] = chatChunkChoice{FinishReason: &finishReason}
	if q.azureFilters {
		chunk.Choices[0].ContentFilterResults = azureFilterResults(q.completionFiltered)
	}
	if !c.send("", &chunk) {
		return
	}
	if includeUsage {
		u := chatUsageOf(rp.usage)
		chunk.Choices = []chatChunkChoice{}
		chunk.Usage = &u
		if !c.send("", &chunk) {
			return
		}
	}
	c.sendRaw("data: [DONE]\n\n")
}
