package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Relay's /v1/generate, caller side: decode a request.

// generateFields is the field that carries each feature in a generate
// request, "" when the shape cannot express it (the support matrix's
// column for this caller shape).
var generateFields = [featCount]string{
	FeatSystem:          "system",
	FeatSystemMid:       "messages[].role=system",
	FeatSameRoleTurns:   "messages",
	FeatImageBase64:     "messages[].content[].type=image (media_type, data)",
	FeatImageURL:        "messages[].content[].url",
	FeatImageDetail:     "messages[].content[].detail",
	FeatTools:           "tools",
	FeatToolStrict:      "tools[].strict",
	FeatToolChoice:      "tool_choice",
	FeatParallelOff:     "parallel_tool_calls",
	FeatToolHistory:     "messages[].content[].type=tool_call|tool_result",
	FeatToolResultError: "messages[].content[].is_error",
	FeatToolResultImage: "messages[].content[].content[].type=image",
	FeatThinkingHistory: "messages[].content[].type=thinking|redacted_thinking",
	FeatReasoning:       "reasoning",
	FeatMaxTokens:       "max_output_tokens",
	FeatTemperature:     "temperature",
	FeatTopP:            "top_p",
	FeatTopK:            "top_k",
	FeatStop:            "stop",
	FeatSeed:            "seed",
	FeatPenalties:       "presence_penalty, frequency_penalty",
	FeatJSONObject:      "response_format.type=json_object",
	FeatJSONSchema:      "response_format.type=json_schema",
	FeatMetadata:        "metadata",
	FeatUser:            "user",
	FeatPrefill:         "messages[-1].role=assistant",
	FeatStreaming:       "stream",
}

// --- request decoding ---

// decodeGenerate unmarshals v from raw, refusing unknown fields: a field
// that is not part of the shape is the caller's mistake, named.
func decodeGenerate(raw []byte, v any, at string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		we, _ := bodyError(err).(*wire.Error)
		if we == nil {
			return badField(at, "malformed value")
		}
		c := *we
		if c.Param != "" && at != "" {
			c.Param = at + "." + c.Param
		}
		if c.Kind == wire.ErrUnsupportedFeature { // an unknown field
			c.Kind = wire.ErrMalformedRequest
			c.Msg = fmt.Sprintf("The field %q is not part of Relay's /v1/generate shape (see docs/inference-api.md).", c.Param)
		} else if at != "" && c.Param != "" {
			c.Msg = fmt.Sprintf("Invalid %q: malformed value.", c.Param)
		}
		return &c
	}
	if at == "" {
		if _, err := dec.Token(); err != io.EOF {
			return &wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The request body holds data after its JSON object."}
		}
	}
	return nil
}

func decodeGenerateRequest(body []byte, r *canonical.Request) error {
	var q genRequest
	if err := decodeGenerate(body, &q, ""); err != nil {
		return err
	}
	switch {
	case q.Model == "":
		return badField("model", "a model is required")
	case len(q.Messages) == 0:
		return badField("messages", "at least one message is required")
	}
	r.Model = q.Model
	if !isNull(q.System) {
		parts, err := genTextParts(q.System, "system")
		if err != nil {
			return err
		}
		r.System = parts
	}
	for i := range q.Messages {
		at := "messages[" + strconv.Itoa(i) + "]"
		m, err := genMessageOf(&q.Messages[i], at)
		if err != nil {
			return err
		}
		r.Messages = append(r.Messages, m)
	}
	if err := decodeGenTools(q.Tools, r); err != nil {
		return err
	}
	if err := genToolChoiceOf(q.ToolChoice, &r.ToolChoice); err != nil {
		return err
	}
	if r.ToolChoice.Mode == canonical.ToolChoiceTool && !hasTool(r.Tools, r.ToolChoice.Name) {
		return badField("tool_choice.name", "no tool is named %q", r.ToolChoice.Name)
	}
	r.ParallelToolCalls = q.ParallelToolCalls
	if q.MaxOutputTokens != nil && *q.MaxOutputTokens < 1 {
		return badField("max_output_tokens", "must be at least 1")
	}
	r.MaxOutputTokens = q.MaxOutputTokens
	r.Temperature, r.TopP, r.TopK, r.Seed = q.Temperature, q.TopP, q.TopK, q.Seed
	r.PresencePenalty, r.FrequencyPenalty = q.PresencePenalty, q.FrequencyPenalty
	for i, s := range q.Stop {
		if s == "" {
			return badField("stop["+strconv.Itoa(i)+"]", "a stop sequence cannot be empty")
		}
	}
	r.Stop = q.Stop
	var err error
	if r.ResponseFormat, err = genResponseFormatOf(q.ResponseFormat); err != nil {
		return err
	}
	if r.Reasoning, err = genReasoningOf(q.Reasoning); err != nil {
		return err
	}
	r.Metadata = q.Metadata
	r.User = q.User
	r.Stream = q.Stream
	r.IncludeUsage = q.Stream
	return nil
}

// decodeGenTools reads the tools; parameters, when given, are a JSON
// Schema object.
func decodeGenTools(tools []genTool, r *canonical.Request) error {
	for i, t := range tools {
		if t.Name == "" {
			return badField("tools["+strconv.Itoa(i)+"].name", "a tool needs a name")
		}
		var params json.RawMessage
		if !isNull(t.Parameters) {
			if bytes.TrimSpace(t.Parameters)[0] != '{' {
				return badField("tools["+strconv.Itoa(i)+"].parameters", "a JSON Schema object is required")
			}
			params = t.Parameters
		}
		r.Tools = append(r.Tools, canonical.Tool{Name: t.Name, Description: t.Description, Parameters: params, Strict: t.Strict})
	}
	return nil
}

// genResponseFormatOf reads response_format; text is no format at all.
func genResponseFormatOf(f *genResponseFormat) (*canonical.ResponseFormat, error) {
	if f == nil {
		return nil, nil
	}
	rf := &canonical.ResponseFormat{Type: canonical.ResponseFormatType(f.Type), Name: f.Name, Description: f.Description, Strict: f.Strict}
	switch rf.Type {
	case canonical.FormatText:
		return nil, nil
	case canonical.FormatJSONObject:
	case canonical.FormatJSONSchema:
		if isNull(f.Schema) || bytes.TrimSpace(f.Schema)[0] != '{' {
			return nil, badField("response_format.schema", "json_schema needs a JSON Schema object")
		}
		rf.Schema = f.Schema
	default:
		return nil, badField("response_format.type", "one of text, json_object, json_schema")
	}
	return rf, nil
}

// genReasoningOf reads reasoning: an effort or a budget, not both; enabled
// without either leaves the budget to the provider (adaptive).
func genReasoningOf(rs *genReasoning) (*canonical.Reasoning, error) {
	if rs == nil {
		return nil, nil
	}
	c := &canonical.Reasoning{Enabled: rs.Enabled, Effort: rs.Effort}
	switch rs.Effort {
	case "", "none", "minimal", "low", "medium", "high", "xhigh":
	default:
		return nil, badField("reasoning.effort", "one of none, minimal, low, medium, high, xhigh")
	}
	if rs.BudgetTokens != nil {
		if rs.Effort != "" {
			return nil, badField("reasoning.budget_tokens", "give effort or budget_tokens, not both")
		}
		if *rs.BudgetTokens < 0 {
			return nil, badField("reasoning.budget_tokens", "must not be negative")
		}
		if rs.Enabled != nil && !*rs.Enabled {
			return nil, badField("reasoning.budget_tokens", "reasoning is disabled")
		}
		t := true
		c.Enabled, c.BudgetTokens = &t, *rs.BudgetTokens
	}
	if c.Enabled != nil && *c.Enabled && c.Effort != "" {
		c.Enabled = nil // effort says it all
	}
	if c.Enabled != nil && *c.Enabled && c.BudgetTokens == 0 && rs.BudgetTokens == nil {
		c.Adaptive = true // enabled without a budget: the provider decides
	}
	if c.Enabled == nil && c.Effort == "" {
		return nil, nil
	}
	return c, nil
}

func hasTool(tools []canonical.Tool, name string) bool {
	for i := range tools {
		if tools[i].Name == name {
			return true
		}
	}
	return false
}

func genToolChoiceOf(raw json.RawMessage, tc *canonical.ToolChoice) error {
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			tc.Mode = canonical.ToolChoiceMode(s)
			return nil
		}
		return badField("tool_choice", "one of auto, none, required or {\"type\":\"tool\",\"name\":…}")
	}
	var o genToolChoice
	if err := decodeGenerate(raw, &o, "tool_choice"); err != nil {
		return err
	}
	switch o.Type {
	case "auto", "none", "required":
		tc.Mode = canonical.ToolChoiceMode(o.Type)
	case "tool":
		if o.Name == "" {
			return badField("tool_choice.name", "a tool name is required")
		}
		tc.Mode, tc.Name = canonical.ToolChoiceTool, o.Name
	default:
		return badField("tool_choice.type", "one of auto, none, required, tool")
	}
	return nil
}

// genParts reads a content value: a string (one text part) or an array of
// parts.
func genParts(raw json.RawMessage, at string) ([]genPart, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badField(at, "content is required")
	}
	if s, ok, err := textContent(raw, at); ok {
		if err != nil {
			return nil, err
		}
		return []genPart{{Type: "text", Text: &s}}, nil
	}
	if raw[0] != '[' {
		return nil, badField(at, "a string or an array of parts is expected")
	}
	var ps []genPart
	if err := decodeGenerate(raw, &ps, at); err != nil {
		return nil, err
	}
	return ps, nil
}

// genTextParts reads content that may hold text only (system).
func genTextParts(raw json.RawMessage, at string) ([]canonical.Part, error) {
	ps, err := genParts(raw, at)
	if err != nil {
		return nil, err
	}
	out := make([]canonical.Part, 0, len(ps))
	for j := range ps {
		p := &ps[j]
		pat := at + "[" + strconv.Itoa(j) + "]"
		if p.Type != "text" {
			return nil, badField(pat+".type", "only text parts are allowed here")
		}
		if err := onlyFields(p, pat); err != nil {
			return nil, err
		}
		out = append(out, canonical.Part{Type: canonical.PartText, Text: *p.Text})
	}
	return out, nil
}

// allowed part types per role.
var genRoleParts = map[string]map[string]bool{
	"system":    {"text": true},
	"user":      {"text": true, "image": true},
	"assistant": {"text": true, "thinking": true, "redacted_thinking": true, "tool_call": true},
	"tool":      {"tool_result": true},
}

func genMessageOf(m *genMessage, at string) (canonical.Message, error) {
	allowed, ok := genRoleParts[m.Role]
	if !ok {
		return canonical.Message{}, badField(at+".role", "one of system, user, assistant, tool")
	}
	ps, err := genParts(m.Content, at+".content")
	if err != nil {
		return canonical.Message{}, err
	}
	if len(ps) == 0 {
		return canonical.Message{}, badField(at+".content", "at least one part is required")
	}
	msg := canonical.Message{Role: canonical.Role(m.Role), Parts: make([]canonical.Part, 0, len(ps))}
	for j := range ps {
		p := &ps[j]
		pat := at + ".content[" + strconv.Itoa(j) + "]"
		if !allowed[p.Type] {
			if _, known := genPartFields[p.Type]; !known {
				return msg, badField(pat+".type", "unknown part type %q", p.Type)
			}
			return msg, badField(pat+".type", "a %s message cannot hold a %s part", m.Role, p.Type)
		}
		cp, err := genPartOf(p, pat)
		if err != nil {
			return msg, err
		}
		msg.Parts = append(msg.Parts, cp)
	}
	return msg, nil
}

// genPartFields lists the fields each part type may carry besides type.
var genPartFields = map[string]string{
	"text":              "text",
	"image":             "media_type data url detail",
	"tool_call":         "id name arguments signature",
	"tool_result":       "tool_call_id name content is_error",
	"thinking":          "text signature origin",
	"redacted_thinking": "data origin",
}

// onlyFields refuses fields of other part types.
func onlyFields(p *genPart, at string) error {
	ok := genPartFields[p.Type]
	set := []struct {
		name string
		on   bool
	}{
		{"text", p.Text != nil}, {"media_type", p.MediaType != ""}, {"data", p.Data != ""}, {"url", p.URL != ""},
		{"detail", p.Detail != ""}, {"id", p.ID != ""}, {"name", p.Name != ""}, {"arguments", p.Arguments != nil},
		{"tool_call_id", p.ToolCallID != ""}, {"content", p.Content != nil}, {"is_error", p.IsError},
		{"signature", p.Signature != ""}, {"origin", p.Origin != ""},
	}
	for _, s := range set {
		if s.on && !strings.Contains(" "+ok+" ", " "+s.name+" ") {
			return badField(at+"."+s.name, "a %s part has no %s", p.Type, s.name)
		}
	}
	if p.Type == "text" && p.Text == nil {
		return badField(at+".text", "a text part needs text")
	}
	return nil
}

func genOrigin(s, at string) (canonical.Origin, error) {
	switch o := canonical.Origin(s); o {
	case canonical.OriginNone, canonical.OriginAnthropic, canonical.OriginOpenAI, canonical.OriginGemini:
		return o, nil
	}
	return "", badField(at, "one of anthropic, openai, gemini")
}

func genPartOf(p *genPart, at string) (canonical.Part, error) {
	if err := onlyFields(p, at); err != nil {
		return canonical.Part{}, err
	}
	switch p.Type {
	case "text":
		return canonical.Part{Type: canonical.PartText, Text: *p.Text}, nil
	case "image":
		return genImage(p, at)
	case "tool_call":
		if p.ID == "" {
			return canonical.Part{}, badField(at+".id", "a tool call needs the id the response gave it")
		}
		if p.Name == "" {
			return canonical.Part{}, badField(at+".name", "a tool call needs a name")
		}
		args, err := genArguments(p.Arguments, at+".arguments")
		if err != nil {
			return canonical.Part{}, err
		}
		return canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: p.ID, Name: p.Name, Arguments: args, Signature: p.Signature}}, nil
	case "tool_result":
		if p.ToolCallID == "" {
			return canonical.Part{}, badField(at+".tool_call_id", "a tool result needs the id of its call")
		}
		tr := &canonical.ToolResult{CallID: p.ToolCallID, Name: p.Name, IsError: p.IsError}
		ps, err := genParts(p.Content, at+".content")
		if err != nil {
			return canonical.Part{}, err
		}
		for k := range ps {
			c := &ps[k]
			cat := at + ".content[" + strconv.Itoa(k) + "]"
			if c.Type != "text" && c.Type != "image" {
				return canonical.Part{}, badField(cat+".type", "a tool result holds text and image parts")
			}
			cp, err := genPartOf(c, cat)
			if err != nil {
				return canonical.Part{}, err
			}
			tr.Content = append(tr.Content, cp)
		}
		return canonical.Part{Type: canonical.PartToolResult, ToolResult: tr}, nil
	case "thinking":
		o, err := genOrigin(p.Origin, at+".origin")
		if err != nil {
			return canonical.Part{}, err
		}
		text := ""
		if p.Text != nil {
			text = *p.Text
		}
		return canonical.Part{Type: canonical.PartThinking, Text: text, Signature: p.Signature, Origin: originIf(p.Signature, o)}, nil
	case "redacted_thinking":
		o, err := genOrigin(p.Origin, at+".origin")
		if err != nil {
			return canonical.Part{}, err
		}
		if p.Data == "" {
			return canonical.Part{}, badField(at+".data", "redacted thinking needs its data")
		}
		return canonical.Part{Type: canonical.PartRedactedThinking, Signature: p.Data, Origin: o}, nil
	}
	return canonical.Part{}, badField(at+".type", "unknown part type %q", p.Type)
}

func genImage(p *genPart, at string) (canonical.Part, error) {
	img := &canonical.Image{Detail: p.Detail}
	switch p.Detail {
	case "", "auto", "low", "high":
	default:
		return canonical.Part{}, badField(at+".detail", "one of auto, low, high")
	}
	switch {
	case p.URL != "" && p.Data != "":
		return canonical.Part{}, badField(at, "give data or url, not both")
	case p.URL != "":
		if mt, data, ok := parseDataURI(p.URL); ok {
			img.MediaType, img.Data = mt, data
			break
		}
		if !strings.HasPrefix(p.URL, "https://") && !strings.HasPrefix(p.URL, "http://") {
			return canonical.Part{}, badField(at+".url", "an http(s) or data: URL is expected")
		}
		img.URL = p.URL
	case p.Data != "":
		if p.MediaType == "" {
			return canonical.Part{}, badField(at+".media_type", "base64 image data needs its media type")
		}
		img.MediaType, img.Data = p.MediaType, p.Data
	default:
		return canonical.Part{}, badField(at, "an image needs data or a url")
	}
	return canonical.Part{Type: canonical.PartImage, Image: img}, nil
}

// genArguments is a tool call's argument text: the caller may send the
// JSON text as a string (as responses give it) or the object itself.
func genArguments(raw json.RawMessage, at string) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badField(at, "malformed string")
		}
		return s, nil
	case raw[0] == '{':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", badField(at, "malformed object")
		}
		return b.String(), nil
	}
	return "", badField(at, "a JSON string or object is expected")
}
