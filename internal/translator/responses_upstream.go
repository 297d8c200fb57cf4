package translator

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Responses, upstream side: encode a request for the
// openai_responses shape.

var responsesSupport = supportTable{
	FeatMessageName:     {Rejected, "Responses input items have no participant name"},
	FeatAudioInput:      {Rejected, "Responses takes no audio input"},
	FeatFileInput:       {Yes, "input_file with PDF data or a file id; other media types are rejected"},
	FeatToolStrict:      {Yes, "strict is sent as given (false when unset, since Responses defaults to true)"},
	FeatToolHistory:     {Yes, "function_call and function_call_output items paired by call_id (never the fc_ item id)"},
	FeatToolResultError: {Emulated, `the output is prefixed "Error: " (Responses has no error flag)`},
	FeatThinkingHistory: {Emulated, "dropped: another provider's thinking cannot be replayed as Responses reasoning items"},
	FeatTopK:            {Dropped, "Responses has no top_k: a sampling hint, the answer is sampled without it"},
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
	var err error
	if q.Input, err = respInputOf(r.Messages, x); err != nil {
		return dst, err
	}
	if len(q.Input) == 0 {
		return dst, badField("messages", "no message has content Responses can take")
	}
	for _, t := range r.Tools {
		q.Tools = append(q.Tools, respTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict != nil && *t.Strict})
	}
	q.ToolChoice = respToolChoiceOf(r.ToolChoice)
	if len(r.Tools) > 0 {
		q.ParallelToolCalls = r.ParallelToolCalls
	}
	q.Text = respTextOf(r.ResponseFormat)
	if r.Verbosity != "" {
		if q.Text == nil {
			q.Text = &respText{}
		}
		q.Text.Verbosity = r.Verbosity
	}
	q.Reasoning = respReasoningOf(r.Reasoning)
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

// respInputOf is the conversation as input items, each message by its
// role.
func respInputOf(msgs []canonical.Message, x *encoder) ([]any, error) {
	var in []any
	for i := range msgs {
		m := &msgs[i]
		var err error
		switch m.Role {
		case canonical.RoleSystem:
			in = append(in, respMessageItem{Type: "message", Role: "system", Content: canonical.TextOf(m.Parts, "\n")})
		case canonical.RoleUser:
			in, err = appendRespUserItem(in, m.Parts, x)
		case canonical.RoleAssistant:
			in = appendRespAssistantItems(in, m.Parts)
		case canonical.RoleTool:
			in, err = appendRespToolOutputs(in, m.Parts, x)
		}
		if err != nil {
			return nil, err
		}
	}
	return in, nil
}

// appendRespUserItem appends a user message item; one without parts Responses
// takes still gets an empty text.
func appendRespUserItem(in []any, ps []canonical.Part, x *encoder) ([]any, error) {
	parts := make([]respInputPart, 0, len(ps))
	for j := range ps {
		p, ok, err := respUserPart(&ps[j], x)
		if err != nil {
			return nil, err
		}
		if ok {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		parts = append(parts, respInputPart{Type: "input_text", Text: ""})
	}
	return append(in, respMessageItem{Type: "message", Role: "user", Content: parts}), nil
}

// appendRespAssistantItems appends an assistant message as items: its
// text runs as assistant messages, its tool calls as function_call items,
// in order. Thinking is not sent back.
func appendRespAssistantItems(in []any, ps []canonical.Part) []any {
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			in = append(in, respMessageItem{Type: "message", Role: "assistant", Content: text.String()})
			text.Reset()
		}
	}
	for _, p := range ps {
		switch p.Type {
		case canonical.PartText, canonical.PartRefusal:
			text.WriteString(p.Text)
		case canonical.PartToolCall:
			flush()
			in = append(in, respFunctionCall{Type: "function_call", CallID: openaiID(p.ToolCall.ID), Name: p.ToolCall.Name, Arguments: orEmptyObject(p.ToolCall.Arguments)})
		}
	}
	flush()
	return in
}

// appendRespToolOutputs appends a function_call_output item for each
// result.
func appendRespToolOutputs(in []any, ps []canonical.Part, x *encoder) ([]any, error) {
	for _, p := range ps {
		if p.Type != canonical.PartToolResult {
			continue
		}
		out, err := respToolOutput(p.ToolResult, x)
		if err != nil {
			return nil, err
		}
		in = append(in, respFunctionOutput{Type: "function_call_output", CallID: openaiID(p.ToolResult.CallID), Output: out})
	}
	return in, nil
}

// respToolChoiceOf is tool_choice: a bare mode, or the named function;
// nil for none.
func respToolChoiceOf(tc canonical.ToolChoice) any {
	switch tc.Mode {
	case canonical.ToolChoiceAuto:
		return "auto"
	case canonical.ToolChoiceNone:
		return "none"
	case canonical.ToolChoiceRequired:
		return "required"
	case canonical.ToolChoiceTool:
		return map[string]string{"type": "function", "name": tc.Name}
	}
	return nil
}

// respTextOf is text.format for a response format; a schema gets a name.
func respTextOf(f *canonical.ResponseFormat) *respText {
	if f == nil {
		return nil
	}
	switch f.Type {
	case canonical.FormatJSONObject:
		return &respText{Format: &respFormat{Type: "json_object"}}
	case canonical.FormatJSONSchema:
		name := f.Name
		if name == "" {
			name = "response"
		}
		return &respText{Format: &respFormat{Type: "json_schema", Name: name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}}
	}
	return nil
}

// respReasoningOf is the reasoning setting: the caller's effort, or one
// for its thinking budget, with summaries on when thinking was asked for.
func respReasoningOf(rs *canonical.Reasoning) *respReasoning {
	switch {
	case rs == nil:
	case rs.Effort != "":
		return &respReasoning{Effort: rs.Effort, Summary: rs.Summary}
	case rs.Enabled != nil && *rs.Enabled && rs.Adaptive:
		return &respReasoning{Summary: "auto"}
	case rs.Enabled != nil && *rs.Enabled:
		return &respReasoning{Effort: effortForBudget(rs.BudgetTokens), Summary: "auto"}
	}
	return nil
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
