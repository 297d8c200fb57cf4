package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Responses: the Responses caller side (decode a request, encode a
// response object and the full event stream) and the openai_responses
// upstream side (encode a request, decode response objects and events).

// --- wire types ---

type respRequest struct {
	Model             string            `json:"model"`
	Input             []any             `json:"input"`
	Instructions      string            `json:"instructions,omitempty"`
	MaxOutputTokens   *int64            `json:"max_output_tokens,omitempty"`
	Temperature       *float64          `json:"temperature,omitempty"`
	TopP              *float64          `json:"top_p,omitempty"`
	Tools             []respTool        `json:"tools,omitempty"`
	ToolChoice        any               `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	Text              *respText         `json:"text,omitempty"`
	Reasoning         *respReasoning    `json:"reasoning,omitempty"`
	Metadata          map[string]string `json:"metadata,omitempty"`
	SafetyIdentifier  string            `json:"safety_identifier,omitempty"`
	PromptCacheKey    string            `json:"prompt_cache_key,omitempty"`
	ServiceTier       string            `json:"service_tier,omitempty"`
	Store             bool              `json:"store"`
	Stream            bool              `json:"stream,omitempty"`
}

type respMessageItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type respInputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type respFunctionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type respFunctionOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output any    `json:"output"`
}

type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict"`
}

type respText struct {
	Format    *respFormat `json:"format,omitempty"`
	Verbosity string      `json:"verbosity,omitempty"`
}

type respFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type respReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type respResponse struct {
	ID                string `json:"id"`
	CreatedAt         int64  `json:"created_at"`
	Model             string `json:"model"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Output []respOutItem `json:"output"`
	Usage  *respUsage    `json:"usage"`
}

type respOutItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Args    string `json:"arguments"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
	EncryptedContent string `json:"encrypted_content"`
}

type respUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (u *respUsage) canonical() canonical.Usage {
	c := canonical.Usage{Input: u.InputTokens, Output: u.OutputTokens}
	if d := u.InputTokensDetails; d != nil {
		c.CacheRead, c.CacheWrite = d.CachedTokens, d.CacheWriteTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		c.Reasoning = d.ReasoningTokens
	}
	return c
}

type respEvent struct {
	Type         string        `json:"type"`
	Response     *respResponse `json:"response"`
	OutputIndex  int           `json:"output_index"`
	ContentIndex int           `json:"content_index"`
	SummaryIndex int           `json:"summary_index"`
	ItemID       string        `json:"item_id"`
	Item         *respOutItem  `json:"item"`
	Part         *struct {
		Type string `json:"type"`
	} `json:"part"`
	Delta     string  `json:"delta"`
	Arguments *string `json:"arguments"`
	Code      string  `json:"code"`
	Message   string  `json:"message"`
}

// finishFromResponse maps a Response's status.
func finishFromResponse(r *respResponse, tools bool) canonical.FinishReason {
	switch r.Status {
	case "incomplete":
		if r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter" {
			return canonical.FinishContentFilter
		}
		return canonical.FinishLength
	case "completed":
		if tools {
			return canonical.FinishToolCalls
		}
		return canonical.FinishStop
	}
	return canonical.FinishOther
}

// ============================================================
// Upstream side: the openai_responses shape.
// ============================================================

var responsesSupport = supportTable{
	FeatMessageName:     {Rejected, "Responses input items have no participant name"},
	FeatAudioInput:      {Rejected, "Responses takes no audio input"},
	FeatFileInput:       {Yes, "input_file with PDF data or a file id; other media types are rejected"},
	FeatToolStrict:      {Yes, "strict is sent as given (false when unset, since Responses defaults to true)"},
	FeatToolHistory:     {Yes, "function_call and function_call_output items paired by call_id (never the fc_ item id)"},
	FeatToolResultError: {Emulated, `the output is prefixed "Error: " (Responses has no error flag)`},
	FeatThinkingHistory: {Emulated, "dropped: another provider's thinking cannot be replayed as Responses reasoning items"},
	FeatTopK:            {Rejected, "Responses has no top_k"},
	FeatStop:            {Rejected, "Responses has no stop sequences"},
	FeatN:               {Rejected, "Responses returns one answer per request"},
	FeatLogprobs:        {Rejected, "Relay does not map Responses logprobs"},
	FeatLogitBias:       {Rejected, "Responses has no logit bias"},
	FeatSeed:            {Rejected, "Responses has no seed"},
	FeatPenalties:       {Rejected, "Responses has no presence or frequency penalty"},
	FeatJSONSchema:      {Yes, `text.format json_schema (named "response" when the caller gave no name)`},
	FeatUser:            {Yes, "safety_identifier"},
	FeatCacheControl:    {Dropped, "OpenAI caches prompts automatically"},
	FeatPrefill:         {Rejected, "Responses does not continue a final assistant message"},
	FeatStore:           {Yes, "store; otherwise Relay sends store: false, as a stateless caller expects"},
	FeatServiceTier:     {Yes, "standard_only → default"},
}

// responsesUpstream speaks Responses to the binding.
type responsesUpstream struct {
	now time.Time

	// Stream state.
	started   bool
	next      int
	items     map[string]*respItemState // by item id
	parts     map[string]int            // item id + "/" + content index → canonical part
	sawTools  bool
	completed bool
}

type respItemState struct {
	part     int // the function_call or reasoning part; -1 for messages
	kind     canonical.PartType
	args     bool // argument deltas arrived
	summary  int  // the summary index of the last reasoning delta
	ended    bool
	anyDelta bool
}

func newResponsesUpstream(now time.Time) upstream { return &responsesUpstream{now: now} }

func (u *responsesUpstream) path(*Target, bool) string {
	return wire.UpstreamPath(wire.InboundResponses, wire.ShapeOpenAIResponses)
}

func (u *responsesUpstream) encode(dst []byte, x *encoder) ([]byte, error) {
	r := x.r
	if err := commonChecks(x); err != nil {
		return dst, err
	}
	q := respRequest{
		Model: x.t.UpstreamModel, Stream: r.Stream, MaxOutputTokens: r.MaxOutputTokens,
		Temperature: r.Temperature, TopP: r.TopP, Metadata: r.Metadata, SafetyIdentifier: r.User,
		PromptCacheKey: r.PromptCacheKey,
	}
	q.Instructions = canonical.TextOf(r.System, "\n")
	if r.State != nil && r.State.Store != nil {
		q.Store = *r.State.Store
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		switch m.Role {
		case canonical.RoleSystem:
			q.Input = append(q.Input, respMessageItem{Type: "message", Role: "system", Content: canonical.TextOf(m.Parts, "\n")})
		case canonical.RoleUser:
			parts := make([]respInputPart, 0, len(m.Parts))
			for j := range m.Parts {
				p, ok, err := respUserPart(&m.Parts[j], x)
				if err != nil {
					return dst, err
				}
				if ok {
					parts = append(parts, p)
				}
			}
			if len(parts) == 0 {
				parts = append(parts, respInputPart{Type: "input_text", Text: ""})
			}
			q.Input = append(q.Input, respMessageItem{Type: "message", Role: "user", Content: parts})
		case canonical.RoleAssistant:
			var text strings.Builder
			flush := func() {
				if text.Len() > 0 {
					q.Input = append(q.Input, respMessageItem{Type: "message", Role: "assistant", Content: text.String()})
					text.Reset()
				}
			}
			for _, p := range m.Parts {
				switch p.Type {
				case canonical.PartText, canonical.PartRefusal:
					text.WriteString(p.Text)
				case canonical.PartToolCall:
					flush()
					q.Input = append(q.Input, respFunctionCall{Type: "function_call", CallID: openaiID(p.ToolCall.ID), Name: p.ToolCall.Name, Arguments: orEmptyObject(p.ToolCall.Arguments)})
				}
			}
			flush()
		case canonical.RoleTool:
			for _, p := range m.Parts {
				if p.Type != canonical.PartToolResult {
					continue
				}
				out, err := respToolOutput(p.ToolResult, x)
				if err != nil {
					return dst, err
				}
				q.Input = append(q.Input, respFunctionOutput{Type: "function_call_output", CallID: openaiID(p.ToolResult.CallID), Output: out})
			}
		}
	}
	if len(q.Input) == 0 {
		return dst, badField("messages", "no message has content Responses can take")
	}
	for _, t := range r.Tools {
		q.Tools = append(q.Tools, respTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict != nil && *t.Strict})
	}
	switch r.ToolChoice.Mode {
	case canonical.ToolChoiceAuto:
		q.ToolChoice = "auto"
	case canonical.ToolChoiceNone:
		q.ToolChoice = "none"
	case canonical.ToolChoiceRequired:
		q.ToolChoice = "required"
	case canonical.ToolChoiceTool:
		q.ToolChoice = map[string]string{"type": "function", "name": r.ToolChoice.Name}
	}
	if len(r.Tools) > 0 {
		q.ParallelToolCalls = r.ParallelToolCalls
	}
	if f := r.ResponseFormat; f != nil {
		switch f.Type {
		case canonical.FormatJSONObject:
			q.Text = &respText{Format: &respFormat{Type: "json_object"}}
		case canonical.FormatJSONSchema:
			name := f.Name
			if name == "" {
				name = "response"
			}
			q.Text = &respText{Format: &respFormat{Type: "json_schema", Name: name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}}
		}
	}
	if r.Verbosity != "" {
		if q.Text == nil {
			q.Text = &respText{}
		}
		q.Text.Verbosity = r.Verbosity
	}
	if rs := r.Reasoning; rs != nil {
		switch {
		case rs.Effort != "":
			q.Reasoning = &respReasoning{Effort: rs.Effort, Summary: rs.Summary}
		case rs.Enabled != nil && *rs.Enabled && rs.Adaptive:
			q.Reasoning = &respReasoning{Summary: "auto"}
		case rs.Enabled != nil && *rs.Enabled:
			q.Reasoning = &respReasoning{Effort: effortForBudget(rs.BudgetTokens), Summary: "auto"}
		}
	}
	switch r.ServiceTier {
	case "standard_only":
		q.ServiceTier = "default"
	default:
		q.ServiceTier = r.ServiceTier
	}
	b, err := json.Marshal(&q)
	if err != nil {
		return dst, fmt.Errorf("encode responses request: %w", err)
	}
	return append(dst, b...), nil
}

func respUserPart(p *canonical.Part, x *encoder) (respInputPart, bool, error) {
	switch p.Type {
	case canonical.PartText:
		return respInputPart{Type: "input_text", Text: p.Text}, true, nil
	case canonical.PartImage:
		url := p.Image.URL
		if url == "" {
			url = dataURI(p.Image.MediaType, p.Image.Data)
		}
		detail := p.Image.Detail
		if detail == "" {
			detail = "auto"
		}
		return respInputPart{Type: "input_image", ImageURL: url, Detail: detail}, true, nil
	case canonical.PartFile:
		f := p.File
		switch {
		case f.FileID != "":
			return respInputPart{Type: "input_file", FileID: f.FileID}, true, nil
		case f.Data != "" && f.MediaType == "application/pdf":
			name := f.Filename
			if name == "" {
				name = "document.pdf"
			}
			return respInputPart{Type: "input_file", FileData: dataURI(f.MediaType, f.Data), Filename: name}, true, nil
		}
		return respInputPart{}, false, x.reject(FeatFileInput, "Responses takes PDF data or file ids")
	case canonical.PartAudio:
		return respInputPart{}, false, x.check(FeatAudioInput)
	}
	return respInputPart{}, false, nil
}

// respToolOutput is a function_call_output's output: a string, or parts
// when the result holds images.
func respToolOutput(tr *canonical.ToolResult, x *encoder) (any, error) {
	media := false
	for _, p := range tr.Content {
		media = media || p.Type != canonical.PartText
	}
	if !media {
		return toolResultText(tr, x)
	}
	parts := make([]respInputPart, 0, len(tr.Content)+1)
	if tr.IsError {
		parts = append(parts, respInputPart{Type: "input_text", Text: "Error:"})
	}
	for j := range tr.Content {
		p, ok, err := respUserPart(&tr.Content[j], x)
		if err != nil {
			return nil, err
		}
		if ok {
			parts = append(parts, p)
		}
	}
	return parts, nil
}

func (u *responsesUpstream) decodeResponse(body []byte, r *canonical.Response) error {
	var rs respResponse
	if err := json.Unmarshal(body, &rs); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	if rs.Status == "failed" {
		msg := "the response failed"
		if rs.Error != nil {
			msg += ": " + rs.Error.Message
		}
		return fmt.Errorf("%s", msg)
	}
	r.ID, r.Model, r.Created = rs.ID, rs.Model, rs.CreatedAt
	tools := false
	for i := range rs.Output {
		it := &rs.Output[i]
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartText, Text: c.Text})
				case "refusal":
					r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartRefusal, Text: c.Refusal})
				}
			}
		case "function_call":
			tools = true
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: it.CallID, ItemID: it.ID, Name: it.Name, Arguments: it.Args}})
		case "reasoning":
			var text strings.Builder
			for j, s := range it.Summary {
				if j > 0 {
					text.WriteString("\n\n")
				}
				text.WriteString(s.Text)
			}
			for _, c := range it.Content {
				text.WriteString(c.Text)
			}
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartThinking, Text: text.String(), Signature: it.EncryptedContent, Origin: canonical.OriginOpenAI})
		}
	}
	r.Finish = finishFromResponse(&rs, tools)
	if rs.Usage != nil {
		r.Usage = rs.Usage.canonical()
	}
	return nil
}

func (u *responsesUpstream) item(id string) *respItemState {
	if u.items == nil {
		u.items = map[string]*respItemState{}
	}
	it := u.items[id]
	if it == nil {
		it = &respItemState{part: -1}
		u.items[id] = it
	}
	return it
}

func (u *responsesUpstream) decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || u.completed {
		return evs, nil
	}
	var e respEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return evs, fmt.Errorf("decode %s event: %w", eventType(ev), err)
	}
	typ := e.Type
	if len(ev.Name) > 0 {
		typ = string(ev.Name)
	}
	if !u.started && typ != "error" {
		u.started = true
		start := canonical.Event{Kind: canonical.EventStart, Created: u.now.Unix()}
		if e.Response != nil {
			start.ID, start.Model = e.Response.ID, e.Response.Model
			if e.Response.CreatedAt > 0 {
				start.Created = e.Response.CreatedAt
			}
		}
		evs = append(evs, start)
	}
	switch typ {
	case "response.output_item.added":
		if e.Item == nil {
			return evs, fmt.Errorf("%s without an item", typ)
		}
		it := u.item(e.Item.ID)
		switch e.Item.Type {
		case "function_call":
			u.sawTools = true
			it.part, it.kind = u.next, canonical.PartToolCall
			u.next++
			evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: it.part, Part: canonical.PartToolCall, ID: e.Item.CallID, Name: e.Item.Name})
			if e.Item.Args != "" {
				it.args = true
				evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: e.Item.Args})
			}
		case "reasoning":
			it.part, it.kind = u.next, canonical.PartThinking
			u.next++
			evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: it.part, Part: canonical.PartThinking, Origin: canonical.OriginOpenAI})
		}
	case "response.content_part.added":
		if e.Part == nil {
			return evs, nil
		}
		kind := canonical.PartText
		switch e.Part.Type {
		case "output_text":
		case "refusal":
			kind = canonical.PartRefusal
		default:
			return evs, nil
		}
		if u.parts == nil {
			u.parts = map[string]int{}
		}
		at := u.next
		u.next++
		u.parts[e.ItemID+"/"+strconv.Itoa(e.ContentIndex)] = at
		evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: kind})
	case "response.output_text.delta", "response.refusal.delta":
		if at, ok := u.parts[e.ItemID+"/"+strconv.Itoa(e.ContentIndex)]; ok && e.Delta != "" {
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: e.Delta})
		}
	case "response.content_part.done":
		key := e.ItemID + "/" + strconv.Itoa(e.ContentIndex)
		if at, ok := u.parts[key]; ok {
			delete(u.parts, key)
			evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: at})
		}
	case "response.function_call_arguments.delta":
		// Keyed by item_id (fc_…), never by call_id.
		it := u.items[e.ItemID]
		if it != nil && it.kind == canonical.PartToolCall && e.Delta != "" {
			it.args = true
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: e.Delta})
		}
	case "response.function_call_arguments.done":
		it := u.items[e.ItemID]
		if it != nil && it.kind == canonical.PartToolCall && !it.args && e.Arguments != nil && *e.Arguments != "" {
			it.args = true
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: *e.Arguments})
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		it := u.items[e.ItemID]
		if it != nil && it.kind == canonical.PartThinking && e.Delta != "" {
			text := e.Delta
			if it.anyDelta && e.SummaryIndex != it.summary {
				text = "\n\n" + text
			}
			it.anyDelta, it.summary = true, e.SummaryIndex
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: text})
		}
	case "response.output_item.done":
		if e.Item == nil {
			return evs, nil
		}
		it := u.items[e.Item.ID]
		if it == nil || it.part < 0 || it.ended {
			return evs, nil
		}
		it.ended = true
		if it.kind == canonical.PartToolCall && !it.args && e.Item.Args != "" {
			it.args = true
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: e.Item.Args})
		}
		if it.kind == canonical.PartThinking && e.Item.EncryptedContent != "" {
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Signature: e.Item.EncryptedContent})
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: it.part})
	case "response.completed", "response.incomplete":
		u.completed = true
		evs = u.closeAll(evs)
		if e.Response != nil {
			if e.Response.Usage != nil {
				evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: e.Response.Usage.canonical()})
			}
			evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: finishFromResponse(e.Response, u.sawTools)})
		} else {
			evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: canonical.FinishStop})
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventDone})
	case "response.failed":
		u.completed = true
		code, msg := "server_error", "The upstream response failed."
		if e.Response != nil {
			if e.Response.Usage != nil {
				evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: e.Response.Usage.canonical()})
			}
			if er := e.Response.Error; er != nil {
				code, msg = er.Code, er.Message
			}
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventError, Err: streamErrorOf(code, 0, msg)})
	case "error":
		u.completed = true
		evs = append(evs, canonical.Event{Kind: canonical.EventError, Err: streamErrorOf(e.Code, 0, e.Message)})
	}
	return evs, nil
}

// closeAll ends the parts still open when the response completes.
func (u *responsesUpstream) closeAll(evs []canonical.Event) []canonical.Event {
	var open []int
	for _, at := range u.parts {
		open = append(open, at)
	}
	clear(u.parts)
	for _, it := range u.items {
		if it.part >= 0 && !it.ended {
			it.ended = true
			open = append(open, it.part)
		}
	}
	slices.Sort(open)
	for _, at := range open {
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: at})
	}
	return evs
}

func (u *responsesUpstream) atEOF(evs []canonical.Event) ([]canonical.Event, bool) {
	return evs, u.completed
}

// ============================================================
// Caller side: decode a Responses request.
// ============================================================

// respCallerRequest is a Responses caller's body: every field of
// CreateResponse Relay knows, so that decodeStrict refuses the rest.
type respCallerRequest struct {
	Model             string            `json:"model"`
	Input             json.RawMessage   `json:"input"`
	Instructions      json.RawMessage   `json:"instructions"`
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	MaxOutputTokens   *int64            `json:"max_output_tokens"`
	Temperature       *float64          `json:"temperature"`
	TopP              *float64          `json:"top_p"`
	Text              *respText         `json:"text"`
	Reasoning         *respReasoningIn  `json:"reasoning"`
	Metadata          map[string]string `json:"metadata"`
	User              string            `json:"user"`
	SafetyIdentifier  string            `json:"safety_identifier"`
	PromptCacheKey    string            `json:"prompt_cache_key"`
	ServiceTier       string            `json:"service_tier"`
	Store             *bool             `json:"store"`
	Stream            bool              `json:"stream"`
	StreamOptions     *struct {
		IncludeObfuscation *bool `json:"include_obfuscation"`
	} `json:"stream_options"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Include            []string        `json:"include"`
	Truncation         string          `json:"truncation"`

	// Known fields no translation can carry: present, they are a 400.
	Background   *bool           `json:"background"`
	Prompt       json.RawMessage `json:"prompt"`
	MaxToolCalls *int64          `json:"max_tool_calls"`
	TopLogprobs  *int64          `json:"top_logprobs"`

	// Advisory fields no translation carries (advisoryFields).
	ClientMetadata       json.RawMessage `json:"client_metadata"`
	PromptCacheRetention json.RawMessage `json:"prompt_cache_retention"`
}

type respReasoningIn struct {
	Effort          *string `json:"effort"`
	Summary         *string `json:"summary"`
	GenerateSummary *string `json:"generate_summary"` // deprecated spelling of summary
}

// respInItem is one input item, whatever its type: message (typed or
// not), function_call, function_call_output, reasoning.
type respInItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Status           string          `json:"status"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        *string         `json:"arguments"`
	ParsedArguments  json.RawMessage `json:"parsed_arguments"` // the openai SDKs' decoded copy of Arguments
	Output           json.RawMessage `json:"output"`
	Summary          []respTextIn    `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
	// Namespace is the namespace of a call to a namespaced tool; Relay
	// offers those tools by their own names (see decodeResponsesRequest).
	Namespace string `json:"namespace"`
}

type respTextIn struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// respInPart is one content part of an input message or function output.
type respInPart struct {
	Type        string          `json:"type"`
	Text        *string         `json:"text"`
	ImageURL    *string         `json:"image_url"`
	Detail      string          `json:"detail"`
	FileID      string          `json:"file_id"`
	FileData    string          `json:"file_data"`
	FileURL     string          `json:"file_url"`
	Filename    string          `json:"filename"`
	Refusal     *string         `json:"refusal"`
	Annotations json.RawMessage `json:"annotations"`
	Logprobs    json.RawMessage `json:"logprobs"`
	// Parsed is the openai SDKs' decoded copy of a structured answer.
	Parsed json.RawMessage `json:"parsed"`
}

type respToolIn struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
	// Tools are a namespace's function tools.
	Tools []json.RawMessage `json:"tools"`
}

// Relay's encrypted_content for thinking other providers signed: a
// Responses caller replays reasoning items as they came, so Anthropic's
// signature (or redacted data) rides in the one opaque field Responses has
// for it and goes back to Anthropic on the next turn.
const (
	respAnthropicThinking = "rant_"
	respAnthropicRedacted = "rantr_"
)

func decodeResponsesRequest(body []byte, r *canonical.Request) error {
	var q respCallerRequest
	if err := decodeStrict(body, &q); err != nil {
		return err
	}
	switch {
	case q.Model == "":
		return badField("model", "a model is required")
	case q.Background != nil && *q.Background:
		return unsupported("background", "background responses are stored and polled")
	case !isNull(q.Prompt):
		return unsupported("prompt", "stored prompt templates")
	case q.MaxToolCalls != nil:
		return unsupported("max_tool_calls", "")
	case q.TopLogprobs != nil:
		return unsupported("top_logprobs", "Relay does not map log probabilities")
	case q.Truncation != "" && q.Truncation != "disabled":
		return unsupported("truncation", "only disabled: Relay does not drop input items")
	case isNull(q.Input) && q.PreviousResponseID == nil && isNull(q.Conversation):
		return badField("input", "input is required")
	}
	r.Model = q.Model
	if present(q.ClientMetadata) {
		advise(r, "client_metadata")
	}
	if present(q.PromptCacheRetention) {
		advise(r, "prompt_cache_retention")
	}
	if !isNull(q.Instructions) {
		var s string
		if err := json.Unmarshal(q.Instructions, &s); err != nil {
			return unsupported("instructions", "instructions as input items; send a string")
		}
		if s != "" {
			r.System = append(r.System, canonical.Part{Type: canonical.PartText, Text: s})
		}
	}
	if err := respInput(q.Input, r); err != nil {
		return err
	}
	if err := respTools(q.Tools, "tools", r, true); err != nil {
		return err
	}
	if err := respToolChoice(q.ToolChoice, &r.ToolChoice); err != nil {
		return err
	}
	r.ParallelToolCalls = q.ParallelToolCalls
	r.MaxOutputTokens = q.MaxOutputTokens
	r.Temperature, r.TopP = q.Temperature, q.TopP
	if t := q.Text; t != nil {
		if f := t.Format; f != nil {
			switch f.Type {
			case "text":
			case "json_object":
				r.ResponseFormat = &canonical.ResponseFormat{Type: canonical.FormatJSONObject}
			case "json_schema":
				if isNull(f.Schema) {
					return badField("text.format.schema", "a json_schema format needs a schema")
				}
				r.ResponseFormat = &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
			default:
				return badField("text.format.type", "unknown type %q", f.Type)
			}
		}
		r.Verbosity = t.Verbosity
	}
	if rs := q.Reasoning; rs != nil {
		c := &canonical.Reasoning{}
		if rs.Effort != nil {
			c.Effort = *rs.Effort
		}
		switch {
		case rs.Summary != nil:
			c.Summary = *rs.Summary
		case rs.GenerateSummary != nil:
			c.Summary = *rs.GenerateSummary
		}
		if c.Effort != "" || c.Summary != "" {
			r.Reasoning = c
		}
	}
	if len(q.Metadata) > 0 {
		r.Metadata = q.Metadata
	}
	r.User = q.SafetyIdentifier
	if r.User == "" {
		r.User = q.User
	}
	r.PromptCacheKey, r.ServiceTier = q.PromptCacheKey, q.ServiceTier
	var include []string
	for _, inc := range q.Include {
		if inc == "reasoning.encrypted_content" {
			include = append(include, inc)
		} else {
			advise(r, "include")
		}
	}
	st := &canonical.State{Store: q.Store, Include: include}
	if q.PreviousResponseID != nil {
		st.PreviousResponseID = *q.PreviousResponseID
		if st.PreviousResponseID == "" {
			return badField("previous_response_id", "an empty response id")
		}
	}
	if !isNull(q.Conversation) {
		var id string
		if json.Unmarshal(q.Conversation, &id) != nil {
			var obj struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(q.Conversation, &obj) != nil || obj.ID == "" {
				return badField("conversation", "expected a conversation id or {\"id\": …}")
			}
			id = obj.ID
		}
		st.Conversation = id
	}
	if st.Store != nil || st.PreviousResponseID != "" || st.Conversation != "" || len(st.Include) > 0 {
		r.State = st
	}
	r.Stream = q.Stream
	return nil
}

// respTools reads the tools at at: function tools, and the function tools
// of a namespace under their own names (a namespace inside a namespace is
// refused, as is a name two tools share). OpenAI's hosted web search is
// advisory (Codex offers it by default): the model answers without it.
// Other hosted tools run only on OpenAI's servers and are refused, naming
// the tool.
func respTools(raw []json.RawMessage, at string, r *canonical.Request, top bool) error {
	for i, raw := range raw {
		at := at + "[" + strconv.Itoa(i) + "]"
		var t respToolIn
		var typ struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &typ); err != nil {
			return badField(at, "a tool is an object")
		}
		switch typ.Type {
		case "function":
		case "namespace":
			if !top {
				return unsupported(at+".type", "a namespace inside a namespace")
			}
			if err := strictUnmarshal(raw, &t, at); err != nil {
				return err
			}
			if err := respTools(t.Tools, at+".tools", r, false); err != nil {
				return err
			}
			continue
		case "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11":
			if top {
				advise(r, "tools[].type=web_search")
				continue
			}
			fallthrough
		default:
			return unsupported(at+".type", fmt.Sprintf("the hosted tool %q runs only on OpenAI's servers (a model bound in shape openai_responses); only function tools translate", typ.Type))
		}
		if err := strictUnmarshal(raw, &t, at); err != nil {
			return err
		}
		if t.Name == "" {
			return badField(at+".name", "a function tool needs a name")
		}
		if len(t.Tools) > 0 {
			return badField(at+".tools", "only a namespace holds tools")
		}
		for _, have := range r.Tools {
			if have.Name == t.Name {
				return badField(at+".name", "two tools are named %q (a namespace's tools are offered by their own names)", t.Name)
			}
		}
		r.Tools = append(r.Tools, canonical.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict})
	}
	return nil
}

// respInput reads input: a string (one user message) or items. Leading
// system and developer messages join the system prompt; consecutive
// assistant-side items (reasoning, assistant messages, function calls)
// make one assistant message, consecutive function outputs one tool
// message.
func respInput(raw json.RawMessage, r *canonical.Request) error {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil
	}
	if s, ok, err := textContent(raw, "input"); ok {
		if err != nil {
			return err
		}
		r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleUser, Parts: []canonical.Part{{Type: canonical.PartText, Text: s}}})
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return badField("input", "expected a string or an array of input items")
	}
	if len(items) == 0 {
		return badField("input", "at least one input item is required")
	}
	leading := true
	last := func(role canonical.Role) *canonical.Message {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
			return &r.Messages[n-1]
		}
		r.Messages = append(r.Messages, canonical.Message{Role: role})
		return &r.Messages[len(r.Messages)-1]
	}
	for i, rawItem := range items {
		at := "input[" + strconv.Itoa(i) + "]"
		var it respInItem
		if err := strictUnmarshal(rawItem, &it, at); err != nil {
			return err
		}
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		if typ != "message" || it.Role != "system" && it.Role != "developer" {
			leading = false
		}
		switch typ {
		case "message":
			switch it.Role {
			case "system", "developer":
				parts, err := respContent(it.Content, at+".content", false, r)
				if err != nil {
					return err
				}
				if leading {
					r.System = append(r.System, parts...)
				} else {
					r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleSystem, Parts: parts})
				}
			case "user":
				parts, err := respContent(it.Content, at+".content", true, r)
				if err != nil {
					return err
				}
				r.Messages = append(r.Messages, canonical.Message{Role: canonical.RoleUser, Parts: parts})
			case "assistant":
				parts, err := respContent(it.Content, at+".content", false, r)
				if err != nil {
					return err
				}
				m := last(canonical.RoleAssistant)
				m.Parts = append(m.Parts, parts...)
			default:
				return badField(at+".role", "unknown role %q", it.Role)
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return badField(at, "a function_call needs a call_id and a name")
			}
			if present(it.ParsedArguments) {
				advise(r, "input[].parsed_arguments")
			}
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			m := last(canonical.RoleAssistant)
			m.Parts = append(m.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{
				ID: canonicalID(chatCallPrefix, it.CallID), ItemID: it.ID, Name: it.Name, Arguments: args,
			}})
		case "function_call_output":
			if it.CallID == "" {
				return badField(at+".call_id", "a function_call_output needs the call_id of the call it answers")
			}
			content, err := respOutput(it.Output, at+".output", r)
			if err != nil {
				return err
			}
			m := last(canonical.RoleTool)
			m.Parts = append(m.Parts, canonical.Part{Type: canonical.PartToolResult, ToolResult: &canonical.ToolResult{
				CallID: canonicalID(chatCallPrefix, it.CallID), Content: content,
			}})
		case "reasoning":
			p := canonical.Part{Type: canonical.PartThinking, Origin: canonical.OriginOpenAI}
			var text strings.Builder
			for j, s := range it.Summary {
				if j > 0 {
					text.WriteString("\n\n")
				}
				text.WriteString(s.Text)
			}
			p.Text = text.String()
			if it.EncryptedContent != nil {
				enc := *it.EncryptedContent
				switch {
				case strings.HasPrefix(enc, respAnthropicRedacted):
					p = canonical.Part{Type: canonical.PartRedactedThinking, Signature: enc[len(respAnthropicRedacted):], Origin: canonical.OriginAnthropic}
				case strings.HasPrefix(enc, respAnthropicThinking):
					p.Signature, p.Origin = enc[len(respAnthropicThinking):], canonical.OriginAnthropic
				default:
					p.Signature = enc
				}
			}
			m := last(canonical.RoleAssistant)
			m.Parts = append(m.Parts, p)
		case "item_reference":
			return unsupported(at+".type", "item references point at stored items; send the items themselves")
		default:
			return unsupported(at+".type", fmt.Sprintf("input items of type %q", typ))
		}
	}
	return nil
}

// respContent reads a message's content: a string or parts. Media parts
// are allowed in user messages only.
func respContent(raw json.RawMessage, at string, media bool, r *canonical.Request) ([]canonical.Part, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, badField(at, "a message needs content")
	}
	if s, ok, err := textContent(raw, at); ok {
		if err != nil {
			return nil, err
		}
		return []canonical.Part{{Type: canonical.PartText, Text: s}}, nil
	}
	var parts []respInPart
	if err := strictUnmarshal(raw, &parts, at); err != nil {
		return nil, err
	}
	out := make([]canonical.Part, 0, len(parts))
	for i := range parts {
		if present(parts[i].Annotations) {
			advise(r, "input[].content[].annotations")
		}
		if present(parts[i].Parsed) {
			advise(r, "input[].content[].parsed")
		}
		if present(parts[i].Logprobs) {
			advise(r, "input[].content[].logprobs")
		}
		p, err := respPart(&parts[i], at+"["+strconv.Itoa(i)+"]", media)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func respPart(p *respInPart, at string, media bool) (canonical.Part, error) {
	switch p.Type {
	case "input_text", "output_text":
		if p.Text == nil {
			return canonical.Part{}, badField(at+".text", "a text part needs text")
		}
		return canonical.Part{Type: canonical.PartText, Text: *p.Text}, nil
	case "refusal":
		if p.Refusal == nil {
			return canonical.Part{}, badField(at+".refusal", "a refusal part needs its text")
		}
		return canonical.Part{Type: canonical.PartRefusal, Text: *p.Refusal}, nil
	case "input_image":
		if !media {
			return canonical.Part{}, badField(at+".type", "images are allowed in user messages and function outputs only")
		}
		if p.FileID != "" {
			return canonical.Part{}, unsupported(at+".file_id", "uploaded image files live on OpenAI's servers; send the image as a data URI or URL")
		}
		if p.ImageURL == nil || *p.ImageURL == "" {
			return canonical.Part{}, badField(at+".image_url", "an input_image needs an image_url")
		}
		img := &canonical.Image{Detail: p.Detail}
		if mt, data, ok := parseDataURI(*p.ImageURL); ok {
			img.MediaType, img.Data = mt, data
		} else if strings.HasPrefix(*p.ImageURL, "data:") {
			return canonical.Part{}, badField(at+".image_url", "a data URI must be data:<media type>;base64,<data>")
		} else {
			img.URL = *p.ImageURL
		}
		return canonical.Part{Type: canonical.PartImage, Image: img}, nil
	case "input_file":
		if !media {
			return canonical.Part{}, badField(at+".type", "files are allowed in user messages only")
		}
		f := &canonical.File{FileID: p.FileID, Filename: p.Filename, URL: p.FileURL}
		if mt, data, ok := parseDataURI(p.FileData); ok {
			f.MediaType, f.Data = mt, data
		} else if p.FileData != "" {
			f.Data = p.FileData
		}
		if f.FileID == "" && f.Data == "" && f.URL == "" {
			return canonical.Part{}, badField(at, "an input_file needs file_data, file_id or file_url")
		}
		if f.URL != "" {
			return canonical.Part{}, unsupported(at+".file_url", "send the file as file_data")
		}
		return canonical.Part{Type: canonical.PartFile, File: f}, nil
	}
	return canonical.Part{}, badField(at+".type", "unknown content part type %q", p.Type)
}

// respOutput reads a function_call_output's output: a string or parts.
func respOutput(raw json.RawMessage, at string, r *canonical.Request) ([]canonical.Part, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, badField(at, "a function_call_output needs an output")
	}
	return respContent(raw, at, true, r)
}

func respToolChoice(raw json.RawMessage, tc *canonical.ToolChoice) error {
	if isNull(raw) {
		return nil
	}
	if ok, err := toolChoiceMode(raw, tc); ok {
		return err
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &named) != nil || named.Type != "function" {
		return unsupported("tool_choice", "only none, auto, required or a named function")
	}
	if err := strictUnmarshal(raw, &named, "tool_choice"); err != nil {
		return err
	}
	if named.Name == "" {
		return badField("tool_choice.name", "a named tool choice needs a name")
	}
	tc.Mode, tc.Name = canonical.ToolChoiceTool, named.Name
	return nil
}

// ============================================================
// Caller side: encode response objects and their events.
// ============================================================

// The state a Responses answer cannot do without: a translated response is
// never stored, so previous_response_id and conversation (which name stored
// ones) and store: true (which asks for a response to retrieve later) are
// refused for any binding but openai_responses. Relay keeps no Responses
// state of its own: the request path never touches Postgres.

// statelessUpstream wraps the upstream side of a responses→* pair with the
// checks of Responses-only request state.
type statelessUpstream struct {
	upstream
}

func (s statelessUpstream) encode(dst []byte, x *encoder) ([]byte, error) {
	if st := x.r.State; st != nil {
		if st.PreviousResponseID != "" {
			return dst, rejectField(x.in, "previous_response_id", x.t, x.pair.support(FeatState).note)
		}
		if st.Conversation != "" {
			return dst, rejectField(x.in, "conversation", x.t, x.pair.support(FeatState).note)
		}
	}
	return s.upstream.encode(dst, x)
}

func newStatelessUpstream(inner func(time.Time) upstream) func(time.Time) upstream {
	return func(now time.Time) upstream { return statelessUpstream{upstream: inner(now)} }
}

// withState adds what every responses→* pair says about Responses state
// to the pair's own departures.
func withState(t supportTable) supportTable {
	t[FeatState] = supportNote{Rejected, "a translated response is not stored, so there is no earlier response or conversation to continue; send the whole conversation as input"}
	t[FeatStore] = supportNote{Rejected, "a translated response is never stored and could not be retrieved later; send store: false or leave it out"}
	return t
}

// responsesCaller writes answers for a Responses caller.
type responsesCaller struct {
	req *canonical.Request

	shell []byte // the request echo every response object carries

	// Stream state.
	started bool
	failed  bool
	seq     int64
	id      string // resp_…
	core    string // what item ids are built on
	model   string
	created int64
	items   []respOut  // by canonical part index
	next    int        // next output index
	output  []byte     // finished items' JSON, for the terminal response
	spans   []respSpan // where each finished item sits in output
	usage   canonical.Usage
	finish  canonical.FinishReason
	// held is 1 + the index in items of a message whose part ended but
	// whose .done events wait for the next event: when that is the finish,
	// the message takes the response's status (incomplete when the output
	// was cut off), as OpenAI reports it. 0 when none is held.
	held int
}

// respSpan is one finished item in responsesCaller.output.
type respSpan struct{ out, start, end int }

// respOut is one output item being streamed.
type respOut struct {
	kind     canonical.PartType
	origin   canonical.Origin
	out      int // output index; -1 when the part shows no item
	id       string
	callID   string
	name     string
	text     []byte // text, refusal, arguments or summary so far: the .done events repeat it
	sig      []byte
	summary  bool // a reasoning summary part was added
	done     bool
	hasDelta bool
	// incomplete marks a message cut off by the output limit or a filter.
	incomplete bool
}

func newResponsesCaller(r *canonical.Request) caller { return &responsesCaller{req: r} }

// responseIDs sets the response id and the base of item ids from the
// upstream's response id.
func (c *responsesCaller) responseIDs(id string) {
	core := id
	for _, p := range []string{"resp_", "msg_", "chatcmpl-"} {
		if rest, ok := strings.CutPrefix(core, p); ok && rest != "" {
			core = rest
			break
		}
	}
	if core == "" {
		core = "relay"
	}
	c.core, c.id = core, "resp_"+core
}

func (c *responsesCaller) itemID(prefix string, out int) string {
	return prefix + c.core + "_" + strconv.Itoa(out)
}

// appendShell appends the request echo: the fields of a response object
// that restate what was asked, with OpenAI's defaults for what was not.
func (c *responsesCaller) appendShell(dst []byte) []byte {
	if c.shell == nil {
		c.shell = buildShell(c.req)
	}
	return append(dst, c.shell...)
}

func buildShell(r *canonical.Request) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `"instructions":`...)
	if len(r.System) > 0 {
		b = wire.AppendString(b, canonical.TextOf(r.System, "\n"))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"max_output_tokens":`...)
	if r.MaxOutputTokens != nil {
		b = appendInt(b, *r.MaxOutputTokens)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"metadata":`...)
	if len(r.Metadata) > 0 {
		m, _ := json.Marshal(r.Metadata)
		b = append(b, m...)
	} else {
		b = append(b, "{}"...)
	}
	b = append(b, `,"parallel_tool_calls":`...)
	b = strconv.AppendBool(b, r.ParallelToolCalls == nil || *r.ParallelToolCalls)
	b = append(b, `,"previous_response_id":null,"reasoning":{"effort":`...)
	if rs := r.Reasoning; rs != nil && rs.Effort != "" {
		b = wire.AppendString(b, rs.Effort)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"summary":`...)
	if rs := r.Reasoning; rs != nil && rs.Summary != "" {
		b = wire.AppendString(b, rs.Summary)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `},"service_tier":`...)
	switch r.ServiceTier {
	case "", "standard_only":
		b = append(b, `"default"`...)
	default:
		b = wire.AppendString(b, r.ServiceTier)
	}
	b = append(b, `,"store":false,"temperature":`...)
	b = strconv.AppendFloat(b, valueOr(r.Temperature, 1), 'g', -1, 64)
	b = append(b, `,"text":{"format":`...)
	switch f := r.ResponseFormat; {
	case f == nil:
		b = append(b, `{"type":"text"}`...)
	case f.Type == canonical.FormatJSONObject:
		b = append(b, `{"type":"json_object"}`...)
	default:
		name := f.Name
		if name == "" {
			name = "response"
		}
		fm, _ := json.Marshal(respFormat{Type: "json_schema", Name: name, Description: f.Description, Schema: f.Schema, Strict: f.Strict})
		b = append(b, fm...)
	}
	if r.Verbosity != "" {
		b = append(b, `,"verbosity":`...)
		b = wire.AppendString(b, r.Verbosity)
	}
	b = append(b, `},"tool_choice":`...)
	switch r.ToolChoice.Mode {
	case canonical.ToolChoiceNone:
		b = append(b, `"none"`...)
	case canonical.ToolChoiceRequired:
		b = append(b, `"required"`...)
	case canonical.ToolChoiceTool:
		b = append(b, `{"type":"function","name":`...)
		b = wire.AppendString(b, r.ToolChoice.Name)
		b = append(b, '}')
	default:
		b = append(b, `"auto"`...)
	}
	b = append(b, `,"tools":[`...)
	for i, t := range r.Tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"function","name":`...)
		b = wire.AppendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = wire.AppendString(b, t.Description)
		}
		b = append(b, `,"parameters":`...)
		if isNull(t.Parameters) {
			b = append(b, "null"...)
		} else {
			var cb bytes.Buffer
			if json.Compact(&cb, t.Parameters) == nil {
				b = append(b, cb.Bytes()...)
			} else {
				b = append(b, "null"...)
			}
		}
		b = append(b, `,"strict":`...)
		if t.Strict != nil {
			b = strconv.AppendBool(b, *t.Strict)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, '}')
	}
	b = append(b, `],"top_p":`...)
	b = strconv.AppendFloat(b, valueOr(r.TopP, 1), 'g', -1, 64)
	b = append(b, `,"truncation":"disabled"`...)
	if r.User != "" {
		b = append(b, `,"safety_identifier":`...)
		b = wire.AppendString(b, r.User)
	}
	if r.PromptCacheKey != "" {
		b = append(b, `,"prompt_cache_key":`...)
		b = wire.AppendString(b, r.PromptCacheKey)
	}
	return b
}

func valueOr(v *float64, def float64) float64 {
	if v == nil {
		return def
	}
	return *v
}

func appendRespUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = appendInt(dst, u.Input)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = appendInt(dst, u.CacheRead)
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = appendInt(dst, u.CacheWrite)
	dst = append(dst, `},"output_tokens":`...)
	dst = appendInt(dst, u.Output)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = appendInt(dst, u.Reasoning)
	dst = append(dst, `},"total_tokens":`...)
	dst = appendInt(dst, u.Total())
	return append(dst, '}')
}

// respStatus is a finished response's status and incomplete reason.
func respStatus(f canonical.FinishReason) (status, reason string) {
	switch f {
	case canonical.FinishLength, canonical.FinishContextWindow:
		return "incomplete", "max_output_tokens"
	case canonical.FinishContentFilter:
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// respErrorCode is the Responses error code (an enum) for an error.
func respErrorCode(e *canonical.Error) string {
	switch e.Kind {
	case canonical.ErrRateLimit:
		return "rate_limit_exceeded"
	case canonical.ErrInvalidRequest:
		return "invalid_prompt"
	}
	return "server_error"
}

// appendResponse appends a response object. usage nil leaves it out; e non-nil
// is a failed response's error.
func (c *responsesCaller) appendResponse(dst []byte, status, reason string, output []byte, usage *canonical.Usage, e *canonical.Error) []byte {
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, c.id)
	dst = append(dst, `,"object":"response","created_at":`...)
	dst = appendInt(dst, c.created)
	dst = append(dst, `,"status":`...)
	dst = wire.AppendString(dst, status)
	dst = append(dst, `,"background":false,"error":`...)
	if e != nil {
		dst = append(dst, `{"code":`...)
		dst = wire.AppendString(dst, respErrorCode(e))
		dst = append(dst, `,"message":`...)
		dst = wire.AppendString(dst, e.Message)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if reason != "" {
		dst = append(dst, `{"reason":`...)
		dst = wire.AppendString(dst, reason)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"model":`...)
	dst = wire.AppendString(dst, c.model)
	dst = append(dst, `,"output":[`...)
	dst = append(dst, output...)
	dst = append(dst, "],"...)
	dst = c.appendShell(dst)
	if usage != nil { // the spec's usage is not nullable: absent until known
		dst = append(dst, `,"usage":`...)
		dst = appendRespUsage(dst, *usage)
	}
	return append(dst, '}')
}

// appendItem appends the output item for a finished part (or, with
// added, the item as output_item.added shows it: in progress and empty).
func appendItem(dst []byte, it *respOut, added bool) []byte {
	status := "completed"
	if added {
		status = "in_progress"
	}
	switch it.kind {
	case canonical.PartToolCall:
		dst = append(dst, `{"id":`...)
		dst = wire.AppendString(dst, it.id)
		dst = append(dst, `,"type":"function_call","status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","arguments":`...)
		if added {
			dst = append(dst, `""`...)
		} else {
			dst = wire.AppendString(dst, orEmptyObject(string(it.text)))
		}
		dst = append(dst, `,"call_id":`...)
		dst = wire.AppendString(dst, it.callID)
		dst = append(dst, `,"name":`...)
		dst = wire.AppendString(dst, it.name)
		return append(dst, '}')
	case canonical.PartThinking, canonical.PartRedactedThinking:
		dst = append(dst, `{"id":`...)
		dst = wire.AppendString(dst, it.id)
		dst = append(dst, `,"type":"reasoning","summary":[`...)
		if !added && it.kind == canonical.PartThinking && (len(it.text) > 0 || it.summary) {
			dst = append(dst, `{"type":"summary_text","text":`...)
			dst = wire.AppendString(dst, string(it.text))
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
		if enc := it.encrypted(); enc != "" {
			dst = append(dst, `,"encrypted_content":`...)
			dst = wire.AppendString(dst, enc)
		}
		return append(dst, '}')
	}
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, it.id)
	if !added && it.incomplete {
		status = "incomplete"
	}
	dst = append(dst, `,"type":"message","status":"`...)
	dst = append(dst, status...)
	dst = append(dst, `","content":[`...)
	if !added {
		dst = appendContentPart(dst, it.kind, string(it.text))
	}
	return append(dst, `],"role":"assistant"}`...)
}

func appendContentPart(dst []byte, kind canonical.PartType, text string) []byte {
	if kind == canonical.PartRefusal {
		dst = append(dst, `{"type":"refusal","refusal":`...)
		dst = wire.AppendString(dst, text)
		return append(dst, '}')
	}
	dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	dst = wire.AppendString(dst, text)
	return append(dst, '}')
}

// encrypted is the reasoning item's encrypted_content: Anthropic's
// signature or redacted data, marked so it finds its way back.
func (it *respOut) encrypted() string {
	if it.origin != canonical.OriginAnthropic || len(it.sig) == 0 {
		return ""
	}
	if it.kind == canonical.PartRedactedThinking {
		return respAnthropicRedacted + string(it.sig)
	}
	return respAnthropicThinking + string(it.sig)
}

func respItemPrefix(kind canonical.PartType) string {
	switch kind {
	case canonical.PartToolCall:
		return "fc_"
	case canonical.PartThinking, canonical.PartRedactedThinking:
		return "rs_"
	}
	return "msg_"
}

// shows reports whether a part becomes an output item: reasoning always
// does (its summary), redacted thinking only when it can go back.
func respShows(kind canonical.PartType, origin canonical.Origin) bool {
	return kind != canonical.PartRedactedThinking || origin == canonical.OriginAnthropic
}

func (c *responsesCaller) response(dst []byte, r *canonical.Response) []byte {
	c.responseIDs(r.ID)
	c.created, c.model = r.Created, r.Model
	if c.model == "" {
		c.model = c.req.Model
	}
	status, reason := respStatus(r.Finish)
	last := -1 // the message a cut-off response ends in
	for i := range r.Parts {
		if t := r.Parts[i].Type; t == canonical.PartText || t == canonical.PartRefusal {
			last = i
		}
	}
	var output []byte
	n := 0
	for i := range r.Parts {
		p := &r.Parts[i]
		if !respShows(p.Type, p.Origin) {
			continue
		}
		it := respOut{kind: p.Type, origin: p.Origin, out: n, incomplete: i == last && status == "incomplete"}
		it.id = c.itemID(respItemPrefix(p.Type), n)
		switch p.Type {
		case canonical.PartToolCall:
			if p.ToolCall == nil {
				continue
			}
			it.callID, it.name, it.text = callerID(chatCallPrefix, p.ToolCall.ID), p.ToolCall.Name, []byte(p.ToolCall.Arguments)
		case canonical.PartText, canonical.PartRefusal, canonical.PartThinking:
			it.text, it.sig = []byte(p.Text), []byte(p.Signature)
		case canonical.PartRedactedThinking:
			it.sig = []byte(p.Signature)
		default:
			continue
		}
		if n > 0 {
			output = append(output, ',')
		}
		output = appendItem(output, &it, false)
		n++
	}
	u := r.Usage
	dst = c.appendResponse(dst, status, reason, output, &u, nil)
	return append(dst, '\n')
}

// ev opens an event: the event line and the data's type and sequence
// number; the caller appends its fields and closes it with end.
func (c *responsesCaller) ev(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = appendInt(dst, c.seq)
	c.seq++
	return dst
}

func end(dst []byte) []byte { return append(dst, "}\n\n"...) }

// itemRef appends ,"item_id":…,"output_index":….
func itemRef(dst []byte, it *respOut) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = wire.AppendString(dst, it.id)
	dst = append(dst, `,"output_index":`...)
	return appendInt(dst, int64(it.out))
}

func (c *responsesCaller) item(i int) *respOut {
	for len(c.items) <= i {
		c.items = append(c.items, respOut{out: -1})
	}
	return &c.items[i]
}

func (c *responsesCaller) start(dst []byte, id, model string, created int64) []byte {
	c.started = true
	c.responseIDs(id)
	c.model, c.created = model, created
	if c.model == "" {
		c.model = c.req.Model
	}
	dst = c.ev(dst, "response.created")
	dst = append(dst, `,"response":`...)
	dst = c.appendResponse(dst, "in_progress", "", nil, nil, nil)
	dst = end(dst)
	dst = c.ev(dst, "response.in_progress")
	dst = append(dst, `,"response":`...)
	dst = c.appendResponse(dst, "in_progress", "", nil, nil, nil)
	return end(dst)
}

func (c *responsesCaller) event(dst []byte, ev *canonical.Event) []byte {
	if c.failed {
		return dst
	}
	if c.held > 0 && ev.Kind != canonical.EventFinish && ev.Kind != canonical.EventUsage && ev.Kind != canonical.EventDone {
		dst = c.closeHeld(dst, false)
	}
	if !c.started && ev.Kind != canonical.EventError {
		dst = c.start(dst, ev.ID, ev.Model, ev.Created)
		if ev.Kind == canonical.EventStart {
			c.usage = ev.Usage
			return dst
		}
	}
	switch ev.Kind {
	case canonical.EventPartStart:
		if !respShows(ev.Part, ev.Origin) {
			break
		}
		it := c.item(ev.Index)
		it.kind, it.origin, it.out = ev.Part, ev.Origin, c.next
		c.next++
		it.id = c.itemID(respItemPrefix(ev.Part), it.out)
		switch ev.Part {
		case canonical.PartToolCall:
			it.callID, it.name = callerID(chatCallPrefix, ev.ID), ev.Name
		case canonical.PartRedactedThinking:
			it.sig = append(it.sig, ev.Text...)
		}
		dst = c.ev(dst, "response.output_item.added")
		dst = append(dst, `,"output_index":`...)
		dst = appendInt(dst, int64(it.out))
		dst = append(dst, `,"item":`...)
		dst = appendItem(dst, it, true)
		dst = end(dst)
		if ev.Part == canonical.PartText || ev.Part == canonical.PartRefusal {
			dst = c.ev(dst, "response.content_part.added")
			dst = itemRef(dst, it)
			dst = append(dst, `,"content_index":0,"part":`...)
			dst = appendContentPart(dst, ev.Part, "")
			dst = end(dst)
		}
	case canonical.EventDelta:
		if ev.Index >= len(c.items) {
			break
		}
		it := &c.items[ev.Index]
		if it.out < 0 || it.done {
			break
		}
		it.sig = append(it.sig, ev.Signature...)
		if ev.Text == "" {
			break
		}
		it.text = append(it.text, ev.Text...)
		switch it.kind {
		case canonical.PartText:
			dst = c.ev(dst, "response.output_text.delta")
			dst = itemRef(dst, it)
			dst = append(dst, `,"content_index":0,"delta":`...)
			dst = wire.AppendString(dst, ev.Text)
			dst = append(dst, `,"logprobs":[]`...)
			dst = end(dst)
		case canonical.PartRefusal:
			dst = c.ev(dst, "response.refusal.delta")
			dst = itemRef(dst, it)
			dst = append(dst, `,"content_index":0,"delta":`...)
			dst = wire.AppendString(dst, ev.Text)
			dst = end(dst)
		case canonical.PartToolCall:
			it.hasDelta = true
			dst = c.ev(dst, "response.function_call_arguments.delta")
			dst = itemRef(dst, it)
			dst = append(dst, `,"delta":`...)
			dst = wire.AppendString(dst, ev.Text)
			dst = end(dst)
		case canonical.PartThinking:
			if !it.summary {
				it.summary = true
				dst = c.ev(dst, "response.reasoning_summary_part.added")
				dst = itemRef(dst, it)
				dst = append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":""}`...)
				dst = end(dst)
			}
			dst = c.ev(dst, "response.reasoning_summary_text.delta")
			dst = itemRef(dst, it)
			dst = append(dst, `,"summary_index":0,"delta":`...)
			dst = wire.AppendString(dst, ev.Text)
			dst = end(dst)
		}
	case canonical.EventPartEnd:
		if ev.Index < len(c.items) {
			if it := &c.items[ev.Index]; (it.kind == canonical.PartText || it.kind == canonical.PartRefusal) && it.out >= 0 && !it.done {
				c.held = ev.Index + 1
			} else {
				dst = c.close(dst, it)
			}
		}
	case canonical.EventUsage:
		c.usage = ev.Usage
	case canonical.EventFinish:
		c.finish = ev.Finish
		if c.held > 0 {
			dst = c.closeHeld(dst, true)
		}
	case canonical.EventDone:
		if c.held > 0 {
			dst = c.closeHeld(dst, true)
		}
		status, reason := respStatus(c.finish)
		for i := range c.items {
			if it := &c.items[i]; it.kind == canonical.PartText || it.kind == canonical.PartRefusal {
				it.incomplete = it.incomplete || !it.done && status == "incomplete"
			}
			dst = c.close(dst, &c.items[i])
		}
		typ := "response.completed"
		if status == "incomplete" {
			typ = "response.incomplete"
		}
		dst = c.ev(dst, typ)
		dst = append(dst, `,"response":`...)
		dst = c.appendResponse(dst, status, reason, c.finished(), &c.usage, nil)
		dst = end(dst)
	case canonical.EventError:
		dst = c.streamError(dst, ev.Err)
	}
	return dst
}

// closeHeld closes the held message; at the finish it takes the
// response's status.
func (c *responsesCaller) closeHeld(dst []byte, atFinish bool) []byte {
	it := &c.items[c.held-1]
	c.held = 0
	if atFinish {
		status, _ := respStatus(c.finish)
		it.incomplete = status == "incomplete"
	}
	return c.close(dst, it)
}

// close ends an item: the .done events, which repeat its whole content.
func (c *responsesCaller) close(dst []byte, it *respOut) []byte {
	if it.out < 0 || it.done {
		return dst
	}
	it.done = true
	switch it.kind {
	case canonical.PartText:
		dst = c.ev(dst, "response.output_text.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"text":`...)
		dst = wire.AppendString(dst, string(it.text))
		dst = append(dst, `,"logprobs":[]`...)
		dst = end(dst)
	case canonical.PartRefusal:
		dst = c.ev(dst, "response.refusal.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"refusal":`...)
		dst = wire.AppendString(dst, string(it.text))
		dst = end(dst)
	case canonical.PartToolCall:
		if !it.hasDelta {
			// A call without arguments still gets valid JSON.
			it.text = append(it.text[:0], "{}"...)
			dst = c.ev(dst, "response.function_call_arguments.delta")
			dst = itemRef(dst, it)
			dst = append(dst, `,"delta":"{}"`...)
			dst = end(dst)
		}
		dst = c.ev(dst, "response.function_call_arguments.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"name":`...)
		dst = wire.AppendString(dst, it.name)
		dst = append(dst, `,"arguments":`...)
		dst = wire.AppendString(dst, string(it.text))
		dst = end(dst)
	case canonical.PartThinking:
		if it.summary {
			dst = c.ev(dst, "response.reasoning_summary_text.done")
			dst = itemRef(dst, it)
			dst = append(dst, `,"summary_index":0,"text":`...)
			dst = wire.AppendString(dst, string(it.text))
			dst = end(dst)
			dst = c.ev(dst, "response.reasoning_summary_part.done")
			dst = itemRef(dst, it)
			dst = append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":`...)
			dst = wire.AppendString(dst, string(it.text))
			dst = append(dst, '}')
			dst = end(dst)
		}
	}
	if it.kind == canonical.PartText || it.kind == canonical.PartRefusal {
		dst = c.ev(dst, "response.content_part.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"part":`...)
		dst = appendContentPart(dst, it.kind, string(it.text))
		dst = end(dst)
	}
	dst = c.ev(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":`...)
	dst = appendInt(dst, int64(it.out))
	dst = append(dst, `,"item":`...)
	mark := len(dst)
	dst = appendItem(dst, it, false)
	start := len(c.output)
	c.output = append(c.output, dst[mark:]...)
	c.spans = append(c.spans, respSpan{out: it.out, start: start, end: len(c.output)})
	dst = end(dst)
	// The item's text lives on in c.output; drop the copy.
	it.text, it.sig = nil, nil
	return dst
}

func (c *responsesCaller) errorBody(dst []byte, e *canonical.Error, _ string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendChatError(dst, e)
	return append(dst, "}\n"...)
}

// streamError ends the stream the way OpenAI does: an error event, then —
// once the response began — response.failed carrying the items finished
// so far and the usage known.
func (c *responsesCaller) streamError(dst []byte, e *canonical.Error) []byte {
	if c.failed {
		return dst
	}
	c.failed = true
	dst = c.ev(dst, "error")
	dst = append(dst, `,"code":`...)
	code := e.Code
	if code == "" {
		code = respErrorCode(e)
	}
	dst = wire.AppendString(dst, code)
	dst = append(dst, `,"message":`...)
	dst = wire.AppendString(dst, e.Message)
	dst = append(dst, `,"param":`...)
	if e.Param != "" {
		dst = wire.AppendString(dst, e.Param)
	} else {
		dst = append(dst, "null"...)
	}
	dst = end(dst)
	if !c.started {
		return dst
	}
	dst = c.ev(dst, "response.failed")
	dst = append(dst, `,"response":`...)
	u := c.usage
	dst = c.appendResponse(dst, "failed", "", c.finished(), &u, e)
	return end(dst)
}

// finished is the output array's contents: the finished items in output
// order (items may finish out of order when the upstream's parts overlap).
func (c *responsesCaller) finished() []byte {
	slices.SortStableFunc(c.spans, func(a, b respSpan) int { return a.out - b.out })
	out := make([]byte, 0, len(c.output)+len(c.spans))
	for i, sp := range c.spans {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, c.output[sp.start:sp.end]...)
	}
	return out
}
