package mockupstream

import (
	"encoding/json"
	"slices"
	"strconv"
)

// --- request ---

type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Stream             bool            `json:"stream"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Reasoning          json.RawMessage `json:"reasoning"`
	Text               json.RawMessage `json:"text"`
	Metadata           json.RawMessage `json:"metadata"`
	Include            []string        `json:"include"`
	User               *string         `json:"user"`
}

type responsesInputItem struct {
	Type      string        `json:"type"`
	Role      string        `json:"role"`
	Content   openAIContent `json:"content"`
	CallID    string        `json:"call_id"`
	Name      string        `json:"name"`
	Arguments string        `json:"arguments"`
	Output    openAIContent `json:"output"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Tools are a namespace tool's own (Codex offers MCP tools so).
	Tools []responsesTool `json:"tools"`
}

// decodeResponses parses and validates a Responses request into cv. The
// request is never nil.
func decodeResponses(body []byte, cv *convo) (*responsesRequest, *apiError) {
	req := &responsesRequest{}
	if e := decodeBody(body, req, provOpenAI); e != nil {
		return req, e
	}
	cv.model = req.Model
	if req.Model == "" {
		return req, openAIMissing("model")
	}
	if isNull(req.Input) && req.PreviousResponseID == nil {
		return req, openAIMissing("input")
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 2) {
		return req, openAIRange("temperature", *t, 0, 2)
	}
	if m := req.MaxOutputTokens; m != nil {
		if *m < 1 {
			return req, openAIInvalid("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 1, but got "+strconv.Itoa(*m)+" instead.", "max_output_tokens", "integer_below_min_value")
		}
		cv.maxTokens, cv.hasMax = *m, true
	}
	if req.Instructions != nil {
		cv.textBytes += len(*req.Instructions)
	}
	if e := responsesInput(req, cv); e != nil {
		return req, e
	}
	var tools []responsesTool
	if !isNull(req.Tools) {
		if err := json.Unmarshal(req.Tools, &tools); err != nil {
			return req, openAIInvalid("Invalid type for 'tools': expected an array of tool objects.", "tools", "invalid_type")
		}
	}
	for i, t := range tools {
		at := "tools[" + strconv.Itoa(i) + "]"
		switch t.Type {
		case "function":
			if t.Name == "" {
				return req, openAIMissing(at + ".name")
			}
			cv.tools = append(cv.tools, toolDef{name: t.Name, schema: t.Parameters})
			cv.textBytes += len(t.Name) + len(t.Description) + len(t.Parameters)
		case "namespace":
			if t.Name == "" {
				return req, openAIMissing(at + ".name")
			}
			if len(t.Tools) == 0 {
				return req, openAIInvalid("Invalid '"+at+".tools': empty array. Expected an array with minimum length 1, but got an empty array instead.", at+".tools", "empty_array")
			}
			for j, nt := range t.Tools {
				if nt.Type != "function" {
					continue // a namespace's custom tools are never called
				}
				if nt.Name == "" {
					return req, openAIMissing(at + ".tools[" + strconv.Itoa(j) + "].name")
				}
				cv.tools = append(cv.tools, toolDef{name: nt.Name, schema: nt.Parameters, namespace: t.Name})
				cv.textBytes += len(nt.Name) + len(nt.Description) + len(nt.Parameters)
			}
			cv.textBytes += len(t.Name) + len(t.Description)
		default:
			// built-in tools are never called
		}
	}
	if e := openAIToolChoice(req.ToolChoice, len(tools) > 0, cv, true); e != nil {
		return req, e
	}
	cv.single = req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	return req, nil
}

// responsesInput reads input: a string (one user message) or a list of items.
// A function_call_output must answer a function_call of the same call_id,
// unless the history lives server-side (previous_response_id).
func responsesInput(req *responsesRequest, cv *convo) *apiError {
	if isNull(req.Input) {
		return nil
	}
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		cv.messages++
		cv.textBytes += len(s)
		cv.userText, cv.last = s, turnUser
		return nil
	}
	var items []responsesInputItem
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return openAIInvalid("Invalid type for 'input': expected one of a string or array of input items, but got "+jsonValueKind(req.Input)+" instead.", "input", "invalid_type")
	}
	var calls []string
	for i, it := range items {
		at := "input[" + strconv.Itoa(i) + "]"
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		cv.messages++
		switch typ {
		case "message":
			cv.textBytes += len(it.Content.text)
			cv.mediaParts += it.Content.media
			switch it.Role {
			case "user":
				cv.userText, cv.last = it.Content.text, turnUser
			case "assistant":
				cv.last = turnAssistant
			case "system", "developer":
			default:
				return openAIInvalid("Invalid value: '"+it.Role+"'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", at+".role", "invalid_value")
			}
		case "function_call":
			calls = append(calls, it.CallID)
			cv.textBytes += len(it.Name) + len(it.Arguments)
			cv.last = turnAssistant
		case "function_call_output":
			if req.PreviousResponseID == nil && !slices.Contains(calls, it.CallID) {
				return openAIInvalid("No tool call found for function call output with call_id "+it.CallID+".", "input", "")
			}
			cv.textBytes += len(it.Output.text)
			cv.resultText, cv.last = it.Output.text, turnToolResult
		default:
			// reasoning, item_reference, built-in tool items: history only
		}
	}
	return nil
}

// --- response ---

type responseObject struct {
	ID                 string              `json:"id"`
	Object             string              `json:"object"`
	CreatedAt          int64               `json:"created_at"`
	Status             string              `json:"status"`
	Background         bool                `json:"background"`
	Error              *responseError      `json:"error"`
	IncompleteDetails  *responseIncomplete `json:"incomplete_details"`
	Instructions       *string             `json:"instructions"`
	MaxOutputTokens    *int                `json:"max_output_tokens"`
	Model              string              `json:"model"`
	Output             []any               `json:"output"`
	ParallelToolCalls  bool                `json:"parallel_tool_calls"`
	PreviousResponseID *string             `json:"previous_response_id"`
	Reasoning          json.RawMessage     `json:"reasoning"`
	ServiceTier        string              `json:"service_tier"`
	Store              bool                `json:"store"`
	Temperature        float64             `json:"temperature"`
	Text               json.RawMessage     `json:"text"`
	ToolChoice         json.RawMessage     `json:"tool_choice"`
	Tools              json.RawMessage     `json:"tools"`
	TopP               float64             `json:"top_p"`
	Truncation         string              `json:"truncation"`
	Usage              *responseUsage      `json:"usage"`
	User               *string             `json:"user"`
	Metadata           json.RawMessage     `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type responseIncomplete struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens         int                    `json:"input_tokens"`
	InputTokensDetails  responseInputDetails   `json:"input_tokens_details"`
	OutputTokens        int                    `json:"output_tokens"`
	OutputTokensDetails responseOutputsDetails `json:"output_tokens_details"`
	TotalTokens         int                    `json:"total_tokens"`
}

type responseInputDetails struct {
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

type responseOutputsDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

type responseMessage struct {
	ID      string           `json:"id"`
	Type    string           `json:"type"`
	Status  string           `json:"status"`
	Content []responseOutput `json:"content"`
	Role    string           `json:"role"`
}

type responseOutput struct {
	Type        string     `json:"type"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
	Text        string     `json:"text"`
}

type responseFunctionCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	// Namespace names the namespace tool the called function is in.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

type responseReasoning struct {
	ID               string     `json:"id"`
	Type             string     `json:"type"`
	EncryptedContent string     `json:"encrypted_content,omitempty"`
	Summary          []struct{} `json:"summary"`
}

// Stream events, one struct per payload family.

type responsesEventResponse struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *responseObject `json:"response"`
}

type responsesEventItem struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	OutputIndex    int    `json:"output_index"`
	Item           any    `json:"item"`
}

type responsesEventPart struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	ItemID         string         `json:"item_id"`
	OutputIndex    int            `json:"output_index"`
	ContentIndex   int            `json:"content_index"`
	Part           responseOutput `json:"part"`
}

type responsesEventText struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	ItemID         string     `json:"item_id"`
	OutputIndex    int        `json:"output_index"`
	ContentIndex   int        `json:"content_index"`
	Delta          *string    `json:"delta,omitempty"`
	Text           *string    `json:"text,omitempty"`
	Logprobs       []struct{} `json:"logprobs"`
}

type responsesEventArgs struct {
	Type           string  `json:"type"`
	SequenceNumber int     `json:"sequence_number"`
	ItemID         string  `json:"item_id"`
	OutputIndex    int     `json:"output_index"`
	Delta          *string `json:"delta,omitempty"`
	Name           string  `json:"name,omitempty"`
	Arguments      *string `json:"arguments,omitempty"`
}

type responsesErrorEvent struct {
	Type           string  `json:"type"`
	Code           string  `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
	SequenceNumber int     `json:"sequence_number"`
}

func rawOr(raw json.RawMessage, def string) json.RawMessage {
	if isNull(raw) {
		return json.RawMessage(def)
	}
	return raw
}

// responseShell is the response object as it stands before any output.
func (c *call) responseShell() *responseObject {
	req := c.resp
	r := &responseObject{
		ID: responseID(), Object: "response", CreatedAt: c.received.Unix(), Status: "in_progress",
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: req.Model,
		Output: []any{}, ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
		PreviousResponseID: req.PreviousResponseID,
		Reasoning:          rawOr(req.Reasoning, `{"effort":null,"summary":null}`),
		ServiceTier:        "default",
		Store:              req.Store == nil || *req.Store,
		Temperature:        1, TopP: 1,
		Text:       rawOr(req.Text, `{"format":{"type":"text"}}`),
		ToolChoice: rawOr(req.ToolChoice, `"auto"`),
		Tools:      rawOr(req.Tools, `[]`),
		Truncation: "disabled",
		User:       req.User,
		Metadata:   rawOr(req.Metadata, `{}`),
	}
	if req.Temperature != nil {
		r.Temperature = *req.Temperature
	}
	if req.TopP != nil {
		r.TopP = *req.TopP
	}
	return r
}

func responseUsageOf(u usage) *responseUsage {
	out := u.output + u.reasoning
	return &responseUsage{
		InputTokens:         u.input,
		InputTokensDetails:  responseInputDetails{CachedTokens: u.cacheRead, CacheWriteTokens: u.cacheWrite},
		OutputTokens:        out,
		OutputTokensDetails: responseOutputsDetails{ReasoningTokens: u.reasoning},
		TotalTokens:         u.input + out,
	}
}

func (c *call) serveResponses() {
	rp := c.conv.plan(false)
	resp := c.responseShell()

	// The finished output items, in order.
	var reasoning *responseReasoning
	if len(rp.thinking) > 0 {
		reasoning = &responseReasoning{ID: reasoningID(), Type: "reasoning", Summary: []struct{}{}}
		if slices.Contains(c.resp.Include, "reasoning.encrypted_content") {
			reasoning.EncryptedContent = signature()
		}
	}
	itemStatus := "completed"
	if rp.finish == finishLength {
		itemStatus = "incomplete"
	}
	var msg *responseMessage
	if len(rp.calls) == 0 {
		msg = &responseMessage{
			ID: responseMsgID(), Type: "message", Status: itemStatus, Role: "assistant",
			Content: []responseOutput{{Type: "output_text", Annotations: []struct{}{}, Logprobs: []struct{}{}, Text: rp.text}},
		}
	}
	fcs := make([]*responseFunctionCall, len(rp.calls))
	for i, tc := range rp.calls {
		fcs[i] = &responseFunctionCall{
			ID: functionCallID(), Type: "function_call", Status: "completed",
			Arguments: tc.args, CallID: openAICallID(), Namespace: tc.namespace, Name: tc.name,
		}
	}
	final := *resp
	final.Output = make([]any, 0, 1+len(fcs))
	if reasoning != nil {
		final.Output = append(final.Output, reasoning)
	}
	if msg != nil {
		final.Output = append(final.Output, msg)
	}
	for _, fc := range fcs {
		final.Output = append(final.Output, fc)
	}
	final.Status = "completed"
	terminal := "response.completed"
	if rp.finish == finishLength {
		final.Status, terminal = "incomplete", "response.incomplete"
		final.IncompleteDetails = &responseIncomplete{Reason: "max_output_tokens"}
	}
	final.Usage = responseUsageOf(rp.usage)

	if !c.stream {
		c.writeJSON(&final)
		return
	}

	if !c.beginStream(sseContentType, frameNamed) {
		return
	}
	seq := 0
	send := func(name string, v any) bool {
		ok := c.send(name, v)
		seq++
		return ok
	}
	ev := func(name string, r *responseObject) bool {
		return send(name, &responsesEventResponse{Type: name, SequenceNumber: seq, Response: r})
	}
	item := func(name string, idx int, it any) bool {
		return send(name, &responsesEventItem{Type: name, SequenceNumber: seq, OutputIndex: idx, Item: it})
	}
	if !ev("response.created", resp) || !ev("response.in_progress", resp) {
		return
	}
	idx := 0
	if reasoning != nil {
		if !item("response.output_item.added", idx, reasoning) || !item("response.output_item.done", idx, reasoning) {
			return
		}
		idx++
	}
	if msg != nil {
		added := *msg
		added.Status, added.Content = "in_progress", []responseOutput{}
		emptyPart := responseOutput{Type: "output_text", Annotations: []struct{}{}, Logprobs: []struct{}{}}
		if !item("response.output_item.added", idx, &added) ||
			!send("response.content_part.added", &responsesEventPart{
				Type: "response.content_part.added", SequenceNumber: seq, ItemID: msg.ID, OutputIndex: idx, Part: emptyPart,
			}) {
			return
		}
		for _, p := range rp.pieces {
			if !send("response.output_text.delta", &responsesEventText{
				Type: "response.output_text.delta", SequenceNumber: seq, ItemID: msg.ID, OutputIndex: idx,
				Delta: &p, Logprobs: []struct{}{},
			}) {
				return
			}
		}
		if !send("response.output_text.done", &responsesEventText{
			Type: "response.output_text.done", SequenceNumber: seq, ItemID: msg.ID, OutputIndex: idx,
			Text: &rp.text, Logprobs: []struct{}{},
		}) || !send("response.content_part.done", &responsesEventPart{
			Type: "response.content_part.done", SequenceNumber: seq, ItemID: msg.ID, OutputIndex: idx, Part: msg.Content[0],
		}) || !item("response.output_item.done", idx, msg) {
			return
		}
		idx++
	}
	for i, fc := range fcs {
		added := *fc
		added.Status, added.Arguments = "in_progress", ""
		if !item("response.output_item.added", idx, &added) {
			return
		}
		for _, frag := range rp.calls[i].pieces {
			if !send("response.function_call_arguments.delta", &responsesEventArgs{
				Type: "response.function_call_arguments.delta", SequenceNumber: seq, ItemID: fc.ID, OutputIndex: idx, Delta: &frag,
			}) {
				return
			}
		}
		if !send("response.function_call_arguments.done", &responsesEventArgs{
			Type: "response.function_call_arguments.done", SequenceNumber: seq, ItemID: fc.ID, OutputIndex: idx,
			Name: fc.Name, Arguments: &fc.Arguments,
		}) || !item("response.output_item.done", idx, fc) {
			return
		}
		idx++
	}
	ev(terminal, &final)
}
