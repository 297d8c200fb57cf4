package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Relay's own shape, /v1/generate: the canonical request, response and
// stream as a documented JSON wire shape (docs/inference-api.md,
// openapi/inference.yaml). Only the caller side exists: a generate request
// is always served through a binding of a provider's shape.
//
// Request: system (a string or text parts), messages with typed parts
// (text, image, tool_call, tool_result, thinking, redacted_thinking),
// tools, tool_choice, sampling, stop, max_output_tokens, response_format,
// reasoning, metadata, user, stream. Response: content parts, finish_reason,
// usage. Stream: SSE events start, part_start, delta, part_end and a
// terminal end that carries finish_reason and usage; error ends a stream
// that failed.

// --- wire types ---

type genRequest struct {
	Model             string             `json:"model"`
	System            json.RawMessage    `json:"system,omitempty"`
	Messages          []genMessage       `json:"messages"`
	Tools             []genTool          `json:"tools,omitempty"`
	ToolChoice        json.RawMessage    `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool              `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   *int64             `json:"max_output_tokens,omitempty"`
	Temperature       *float64           `json:"temperature,omitempty"`
	TopP              *float64           `json:"top_p,omitempty"`
	TopK              *int64             `json:"top_k,omitempty"`
	Seed              *int64             `json:"seed,omitempty"`
	PresencePenalty   *float64           `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64           `json:"frequency_penalty,omitempty"`
	Stop              []string           `json:"stop,omitempty"`
	ResponseFormat    *genResponseFormat `json:"response_format,omitempty"`
	Reasoning         *genReasoning      `json:"reasoning,omitempty"`
	Metadata          map[string]string  `json:"metadata,omitempty"`
	User              string             `json:"user,omitempty"`
	Stream            bool               `json:"stream,omitempty"`
}

type genMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// genPart is every part type's fields in one struct; decodeGenPart checks
// that a part carries only its own type's.
type genPart struct {
	Type string  `json:"type"`
	Text *string `json:"text,omitempty"`
	// image
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	Detail    string `json:"detail,omitempty"`
	// tool_call
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// tool_result
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Content    json.RawMessage `json:"content,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	// thinking, redacted_thinking (Data), tool_call
	Signature string `json:"signature,omitempty"`
	Origin    string `json:"origin,omitempty"`
}

type genTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type genToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type genResponseFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type genReasoning struct {
	Enabled      *bool  `json:"enabled,omitempty"`
	Effort       string `json:"effort,omitempty"`
	BudgetTokens *int64 `json:"budget_tokens,omitempty"`
}

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
	for i, t := range q.Tools {
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
	if f := q.ResponseFormat; f != nil {
		rf := &canonical.ResponseFormat{Type: canonical.ResponseFormatType(f.Type), Name: f.Name, Description: f.Description, Strict: f.Strict}
		switch rf.Type {
		case canonical.FormatText:
			rf = nil
		case canonical.FormatJSONObject:
		case canonical.FormatJSONSchema:
			if isNull(f.Schema) || bytes.TrimSpace(f.Schema)[0] != '{' {
				return badField("response_format.schema", "json_schema needs a JSON Schema object")
			}
			rf.Schema = f.Schema
		default:
			return badField("response_format.type", "one of text, json_object, json_schema")
		}
		r.ResponseFormat = rf
	}
	if rs := q.Reasoning; rs != nil {
		c := &canonical.Reasoning{Enabled: rs.Enabled, Effort: rs.Effort}
		switch rs.Effort {
		case "", "none", "minimal", "low", "medium", "high", "xhigh":
		default:
			return badField("reasoning.effort", "one of none, minimal, low, medium, high, xhigh")
		}
		if rs.BudgetTokens != nil {
			if rs.Effort != "" {
				return badField("reasoning.budget_tokens", "give effort or budget_tokens, not both")
			}
			if *rs.BudgetTokens < 0 {
				return badField("reasoning.budget_tokens", "must not be negative")
			}
			if rs.Enabled != nil && !*rs.Enabled {
				return badField("reasoning.budget_tokens", "reasoning is disabled")
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
			c = nil
		}
		r.Reasoning = c
	}
	r.Metadata = q.Metadata
	r.User = q.User
	r.Stream = q.Stream
	r.IncludeUsage = q.Stream
	return nil
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

// --- caller side: responses and events ---

// generateCaller encodes answers for /v1/generate callers. Part indices
// are the canonical ones: every output part is shown.
type generateCaller struct {
	req     *canonical.Request
	pricing *snapshot.Pricing // X-Relay-Usage: full; nil otherwise

	// Stream state.
	parts   []canonical.PartType // by index
	tools   bool
	usage   canonical.Usage
	finish  canonical.FinishReason
	stopSeq string
}

func newGenerateCaller(r *canonical.Request) caller { return &generateCaller{req: r} }

// price makes the caller add the cost under p to every usage block.
func (c *generateCaller) price(p *snapshot.Pricing) { c.pricing = p }

func generateID(id string) string {
	if id == "" {
		return "gen_relay"
	}
	return id
}

// generateFinish is the finish_reason a generate caller sees.
func generateFinish(f canonical.FinishReason, tools bool) string {
	switch {
	case f == canonical.FinishNone:
		return string(canonical.FinishOther)
	case f == canonical.FinishStop && tools:
		return string(canonical.FinishToolCalls)
	}
	return string(f)
}

func (c *generateCaller) appendUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = appendInt(dst, u.Input)
	dst = append(dst, `,"output_tokens":`...)
	dst = appendInt(dst, u.Output)
	dst = append(dst, `,"total_tokens":`...)
	dst = appendInt(dst, u.Total())
	dst = append(dst, `,"cache_read_tokens":`...)
	dst = appendInt(dst, u.CacheRead)
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = appendInt(dst, u.CacheWrite)
	dst = append(dst, `,"reasoning_tokens":`...)
	dst = appendInt(dst, u.Reasoning)
	if c.pricing != nil {
		dst = append(dst, `,"cost_nanos":`...)
		dst = appendInt(dst, pricing.Cost(c.pricing, wire.Usage(u)))
	}
	return append(dst, '}')
}

// appendGenPart appends a whole output part.
func appendGenPart(dst []byte, p *canonical.Part) []byte {
	dst = append(dst, `{"type":`...)
	dst = wire.AppendString(dst, string(p.Type))
	switch p.Type {
	case canonical.PartToolCall:
		dst = append(dst, `,"id":`...)
		dst = wire.AppendString(dst, p.ToolCall.ID)
		dst = append(dst, `,"name":`...)
		dst = wire.AppendString(dst, p.ToolCall.Name)
		dst = append(dst, `,"arguments":`...)
		dst = wire.AppendString(dst, p.ToolCall.Arguments)
		if p.ToolCall.Signature != "" {
			dst = append(dst, `,"signature":`...)
			dst = wire.AppendString(dst, p.ToolCall.Signature)
		}
	case canonical.PartRedactedThinking:
		dst = append(dst, `,"data":`...)
		dst = wire.AppendString(dst, p.Signature)
		dst = appendOrigin(dst, p.Origin)
	case canonical.PartThinking:
		dst = append(dst, `,"text":`...)
		dst = wire.AppendString(dst, p.Text)
		if p.Signature != "" {
			dst = append(dst, `,"signature":`...)
			dst = wire.AppendString(dst, p.Signature)
		}
		dst = appendOrigin(dst, p.Origin)
	default:
		dst = append(dst, `,"text":`...)
		dst = wire.AppendString(dst, p.Text)
	}
	return append(dst, '}')
}

func appendOrigin(dst []byte, o canonical.Origin) []byte {
	if o == canonical.OriginNone {
		return dst
	}
	dst = append(dst, `,"origin":`...)
	return wire.AppendString(dst, string(o))
}

// shown reports whether an output part reaches a generate caller: every
// kind Relay maps does.
func genShown(t canonical.PartType) bool {
	switch t {
	case canonical.PartText, canonical.PartRefusal, canonical.PartThinking, canonical.PartRedactedThinking, canonical.PartToolCall:
		return true
	}
	return false
}

func (c *generateCaller) response(dst []byte, r *canonical.Response) []byte {
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, generateID(r.ID))
	dst = append(dst, `,"object":"generation","model":`...)
	dst = wire.AppendString(dst, r.Model)
	dst = append(dst, `,"created":`...)
	dst = appendInt(dst, r.Created)
	dst = append(dst, `,"content":[`...)
	tools, n := false, 0
	for i := range r.Parts {
		p := &r.Parts[i]
		if !genShown(p.Type) || p.Type == canonical.PartToolCall && p.ToolCall == nil {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		tools = tools || p.Type == canonical.PartToolCall
		dst = appendGenPart(dst, p)
	}
	dst = append(dst, `],"finish_reason":`...)
	dst = wire.AppendString(dst, generateFinish(r.Finish, tools))
	if r.StopSequence != "" {
		dst = append(dst, `,"stop_sequence":`...)
		dst = wire.AppendString(dst, r.StopSequence)
	}
	dst = append(dst, `,"usage":`...)
	dst = c.appendUsage(dst, r.Usage)
	return append(dst, "}\n"...)
}

func genEvent(dst []byte, name string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, name...)
	return append(dst, '"')
}

func (c *generateCaller) kind(i int) canonical.PartType {
	if i >= 0 && i < len(c.parts) {
		return c.parts[i]
	}
	return ""
}

func (c *generateCaller) event(dst []byte, ev *canonical.Event) []byte {
	switch ev.Kind {
	case canonical.EventStart:
		c.usage = ev.Usage
		dst = genEvent(dst, "start")
		dst = append(dst, `,"id":`...)
		dst = wire.AppendString(dst, generateID(ev.ID))
		dst = append(dst, `,"object":"generation","model":`...)
		dst = wire.AppendString(dst, ev.Model)
		dst = append(dst, `,"created":`...)
		dst = appendInt(dst, ev.Created)
		return append(dst, "}\n\n"...)
	case canonical.EventPartStart:
		for len(c.parts) <= ev.Index {
			c.parts = append(c.parts, "")
		}
		if !genShown(ev.Part) {
			return dst
		}
		c.parts[ev.Index] = ev.Part
		p := canonical.Part{Type: ev.Part, Origin: ev.Origin}
		switch ev.Part {
		case canonical.PartToolCall:
			c.tools = true
			p.ToolCall = &canonical.ToolCall{ID: ev.ID, Name: ev.Name, Signature: ev.Signature}
		case canonical.PartRedactedThinking:
			p.Signature = ev.Text
		}
		dst = genEvent(dst, "part_start")
		dst = append(dst, `,"index":`...)
		dst = appendInt(dst, int64(ev.Index))
		dst = append(dst, `,"part":`...)
		dst = appendGenPart(dst, &p)
		return append(dst, "}\n\n"...)
	case canonical.EventDelta:
		k := c.kind(ev.Index)
		if k == "" || ev.Text == "" && ev.Signature == "" {
			return dst
		}
		dst = genEvent(dst, "delta")
		dst = append(dst, `,"index":`...)
		dst = appendInt(dst, int64(ev.Index))
		if ev.Text != "" {
			if k == canonical.PartToolCall {
				dst = append(dst, `,"arguments":`...)
			} else {
				dst = append(dst, `,"text":`...)
			}
			dst = wire.AppendString(dst, ev.Text)
		}
		if ev.Signature != "" {
			dst = append(dst, `,"signature":`...)
			dst = wire.AppendString(dst, ev.Signature)
		}
		return append(dst, "}\n\n"...)
	case canonical.EventPartEnd:
		if c.kind(ev.Index) == "" {
			return dst
		}
		dst = genEvent(dst, "part_end")
		dst = append(dst, `,"index":`...)
		dst = appendInt(dst, int64(ev.Index))
		return append(dst, "}\n\n"...)
	case canonical.EventUsage:
		c.usage = ev.Usage
	case canonical.EventFinish:
		c.finish, c.stopSeq = ev.Finish, ev.StopSequence
	case canonical.EventDone:
		dst = genEvent(dst, "end")
		dst = append(dst, `,"finish_reason":`...)
		dst = wire.AppendString(dst, generateFinish(c.finish, c.tools))
		if c.stopSeq != "" {
			dst = append(dst, `,"stop_sequence":`...)
			dst = wire.AppendString(dst, c.stopSeq)
		}
		dst = append(dst, `,"usage":`...)
		dst = c.appendUsage(dst, c.usage)
		return append(dst, "}\n\n"...)
	case canonical.EventError:
		return c.streamError(dst, ev.Err)
	}
	return dst
}

func (c *generateCaller) errorBody(dst []byte, e *canonical.Error, _ string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendChatError(dst, e)
	return append(dst, "}\n"...)
}

func (c *generateCaller) streamError(dst []byte, e *canonical.Error) []byte {
	code := e.Code
	if code == "" {
		code = string(e.Kind)
	}
	return wire.AppendGenerateStreamError(dst, e.Message, wire.OpenAIType(canonical.StatusForKind(e.Kind)), e.Param, code)
}
