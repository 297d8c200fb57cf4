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
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Responses: the openai_responses upstream side. (Responses as a
// caller's shape is phase 2; it decodes into the same canonical types.)

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
	FeatCacheControl:    {Emulated, "dropped: OpenAI caches prompts automatically"},
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
	return wire.UpstreamPath(wire.InboundResponses, snapshot.ShapeOpenAIResponses)
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
