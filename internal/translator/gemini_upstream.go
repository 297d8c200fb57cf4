package translator

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
)

// Google Gemini, upstream side: encode a request for the gemini shape.

// skipSignature is the placeholder Google documents for function calls
// Gemini did not make (history from another model), which it then does not
// validate.
const skipSignature = "skip_thought_signature_validator"

var geminiSupport = supportTable{
	FeatSystemMid:       {Emulated, "hoisted into systemInstruction in order; the position is lost"},
	FeatSameRoleTurns:   {Emulated, "merged into one content; tool results regrouped right after their calls"},
	FeatMessageName:     {Rejected, "Gemini contents have no participant name"},
	FeatImageURL:        {Rejected, "Gemini's fileData takes uploaded files only; send the image as base64"},
	FeatImageDetail:     {Rejected, "Gemini has no per-image detail level (auto is accepted)"},
	FeatAudioInput:      {Yes, "inlineData audio/<format>"},
	FeatFileInput:       {Yes, "PDF and plain-text data as inlineData; file ids and URLs are rejected"},
	FeatToolStrict:      {Emulated, "strict tools make function calling VALIDATED when it would be AUTO"},
	FeatToolChoice:      {Yes, "required → ANY; a named tool → ANY with allowedFunctionNames"},
	FeatParallelOff:     {Dropped, "Gemini cannot be told to call one function at a time; a caller that gets several calls answers them all"},
	FeatToolHistory:     {Yes, "ids are Relay's rgem_ ids (see below); results get their function's name from the call"},
	FeatToolResultError: {Yes, `functionResponse.response {"error": …}`},
	FeatToolResultImage: {Rejected, "Relay sends Gemini function responses as JSON only"},
	FeatThinkingHistory: {Emulated, "dropped; Gemini's own thought signatures travel in the tool-call ids"},
	FeatStop:            {Yes, "at most 5 sequences; more are rejected"},
	FeatN:               {Rejected, "Relay asks Gemini for one candidate"},
	FeatLogprobs:        {Rejected, "Relay does not map Gemini's logprobs result"},
	FeatLogitBias:       {Rejected, "Gemini has no logit bias"},
	FeatJSONSchema:      {Yes, "responseMimeType application/json + responseJsonSchema; name and strict are not sent"},
	FeatJSONObject:      {Yes, "responseMimeType application/json"},
	FeatVerbosity:       {Rejected, "Gemini has no verbosity setting"},
	FeatMetadata:        {Dropped, "Gemini's Developer API has no request metadata"},
	FeatUser:            {Dropped, "Gemini's Developer API has no end-user id"},
	FeatServiceTier:     {Dropped, "Gemini has no service tier"},
	FeatStore:           {Rejected, "Gemini does not store completions"},
	FeatPromptCacheKey:  {Dropped, "Gemini caches implicitly"},
	FeatCacheControl:    {Dropped, "Gemini caches implicitly"},
	FeatPrefill:         {Rejected, "Gemini does not continue a final model turn"},
}

// geminiUpstream speaks generateContent to the binding.
type geminiUpstream struct {
	now time.Time

	// Stream state.
	started    bool
	responseID string
	next       int
	open       int // open text or thinking part; -1 when none
	openKind   canonical.PartType
	calls      int // function calls so far in this response
	finished   bool
	blocked    bool
}

func newGeminiUpstream(now time.Time) upstream { return &geminiUpstream{now: now, open: -1} }

func (u *geminiUpstream) path(t *Target, stream bool) string {
	model := strings.TrimPrefix(t.UpstreamModel, "models/")
	p := "/v1beta/models/" + url.PathEscape(model)
	if stream {
		return p + ":streamGenerateContent?alt=sse"
	}
	return p + ":generateContent"
}

func (u *geminiUpstream) encode(dst []byte, x *encoder) ([]byte, error) {
	r := x.r
	if err := commonChecks(x); err != nil {
		return dst, err
	}
	var q gemRequest
	system, msgs := r.HoistedSystem()
	if text := canonical.TextOf(system, "\n"); text != "" {
		q.SystemInstruction = &gemContent{Parts: []gemPart{{Text: text}}}
	}
	var err error
	if q.Contents, err = gemContents(canonical.GroupToolResults(msgs), x); err != nil {
		return dst, err
	}
	if len(q.Contents) == 0 {
		return dst, badField("messages", "no message has content Gemini can take")
	}
	q.Tools, q.ToolConfig = gemToolsOf(r)
	if len(r.Stop) > 5 {
		return dst, x.reject(FeatStop, "Gemini takes at most 5 stop sequences")
	}
	g := gemGenConfig{
		Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MaxOutputTokens: r.MaxOutputTokens,
		PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty, Seed: r.Seed,
		StopSequences: r.Stop,
	}
	g.ResponseMimeType, g.ResponseJSONSchema = gemFormatOf(r.ResponseFormat)
	if g.ThinkingConfig, err = gemThinkingOf(r.Reasoning, x); err != nil {
		return dst, err
	}
	if !g.empty() {
		q.GenerationConfig = &g
	}
	b, err := json.Marshal(&q)
	if err != nil {
		return dst, fmt.Errorf("encode generateContent request: %w", err)
	}
	return append(dst, b...), nil
}

// gemContents are the contents for msgs: user and tool messages make user
// contents, assistant messages model contents, and neighbours of one role
// merge into one content.
func gemContents(msgs []canonical.Message, x *encoder) ([]gemContent, error) {
	names := canonical.ToolNames(msgs)
	var cs []gemContent
	for i := range msgs {
		m := &msgs[i]
		var (
			role string
			ps   []gemPart
			err  error
		)
		switch m.Role {
		case canonical.RoleUser:
			role = "user"
			ps, err = gemUserParts(m.Parts, x)
		case canonical.RoleTool:
			role = "user"
			ps, err = gemToolResultParts(m.Parts, names, x)
		case canonical.RoleAssistant:
			role = "model"
			ps, err = gemModelParts(m.Parts)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		cs = addGemContent(cs, role, ps)
	}
	return cs, nil
}

// addGemContent appends ps as a content of role, or to the last content
// when that has the same role.
func addGemContent(cs []gemContent, role string, ps []gemPart) []gemContent {
	if len(ps) == 0 {
		return cs
	}
	if n := len(cs); n > 0 && cs[n-1].Role == role {
		cs[n-1].Parts = append(cs[n-1].Parts, ps...)
		return cs
	}
	return append(cs, gemContent{Role: role, Parts: ps})
}

// gemUserParts are a user message's parts.
func gemUserParts(parts []canonical.Part, x *encoder) ([]gemPart, error) {
	var ps []gemPart
	for j := range parts {
		p, ok, err := gemUserPart(&parts[j], x)
		if err != nil {
			return nil, err
		}
		if ok {
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// gemToolResultParts are a tool message's results as functionResponse
// parts; names gives each call's function.
func gemToolResultParts(parts []canonical.Part, names map[string]string, x *encoder) ([]gemPart, error) {
	var ps []gemPart
	for j := range parts {
		p := &parts[j]
		if p.Type != canonical.PartToolResult {
			continue
		}
		fr, err := gemFunctionResult(p.ToolResult, names, x)
		if err != nil {
			return nil, err
		}
		ps = append(ps, gemPart{FunctionResponse: fr})
	}
	return ps, nil
}

// gemModelParts are an assistant message's parts: its text and its
// function calls. Thinking is not sent back (Gemini's own signatures
// travel in the call ids); when no call carries a signature, the first
// gets the placeholder Gemini does not validate.
func gemModelParts(parts []canonical.Part) ([]gemPart, error) {
	var ps []gemPart
	signed := false
	first := -1
	for j := range parts {
		p := &parts[j]
		switch p.Type {
		case canonical.PartText, canonical.PartRefusal:
			if p.Text != "" {
				ps = append(ps, gemPart{Text: p.Text})
			}
		case canonical.PartToolCall:
			part, err := gemFunctionCallPart(p.ToolCall)
			if err != nil {
				return nil, err
			}
			signed = signed || part.ThoughtSignature != ""
			if first < 0 {
				first = len(ps)
			}
			ps = append(ps, part)
		}
	}
	if first >= 0 && !signed {
		ps[first].ThoughtSignature = skipSignature
	}
	return ps, nil
}

// gemFunctionCallPart is a tool call as a functionCall part, with the
// Gemini id and thought signature a Relay rgem_ id carries.
func gemFunctionCallPart(tc *canonical.ToolCall) (gemPart, error) {
	args, ok := argsObject(tc.Arguments)
	if !ok {
		return gemPart{}, badField("messages[].tool_calls[].function.arguments", "the arguments of tool call %q are not a JSON object", tc.ID)
	}
	fc := &gemFunctionCall{Name: tc.Name, Args: args}
	part := gemPart{FunctionCall: fc}
	if gid, sig, provided, ok := parseGeminiID(tc.ID); ok {
		if provided {
			fc.ID = gid
		}
		part.ThoughtSignature = sig
	}
	return part, nil
}

// gemToolsOf is the function declarations and the calling config: strict
// tools make AUTO (or no mode) VALIDATED.
func gemToolsOf(r *canonical.Request) ([]gemTool, *gemToolConfig) {
	var tools []gemTool
	strict := false
	if len(r.Tools) > 0 {
		decls := make([]gemFunctionDecl, 0, len(r.Tools))
		for _, t := range r.Tools {
			decls = append(decls, gemFunctionDecl{Name: t.Name, Description: t.Description, ParametersJSONSchema: t.Parameters})
			strict = strict || t.Strict != nil && *t.Strict
		}
		tools = []gemTool{{FunctionDeclarations: decls}}
	}
	mode := ""
	var allowed []string
	switch r.ToolChoice.Mode {
	case canonical.ToolChoiceAuto:
		mode = "AUTO"
	case canonical.ToolChoiceNone:
		mode = "NONE"
	case canonical.ToolChoiceRequired:
		mode = "ANY"
	case canonical.ToolChoiceTool:
		mode, allowed = "ANY", []string{r.ToolChoice.Name}
	}
	if strict && (mode == "" || mode == "AUTO") {
		mode = "VALIDATED"
	}
	if mode != "" && len(r.Tools) > 0 {
		return tools, &gemToolConfig{FunctionCallingConfig: gemFunctionCalling{Mode: mode, AllowedFunctionNames: allowed}}
	}
	return tools, nil
}

// gemFormatOf is responseMimeType and responseJsonSchema for a response
// format.
func gemFormatOf(f *canonical.ResponseFormat) (string, json.RawMessage) {
	if f == nil {
		return "", nil
	}
	switch f.Type {
	case canonical.FormatJSONObject:
		return "application/json", nil
	case canonical.FormatJSONSchema:
		return "application/json", f.Schema
	}
	return "", nil
}

// gemThinkingOf is the thinkingConfig for the caller's reasoning: an
// effort becomes a budget, adaptive thinking the dynamic budget -1.
func gemThinkingOf(rs *canonical.Reasoning, x *encoder) (*gemThinkingConfig, error) {
	if rs == nil {
		return nil, nil
	}
	tc := &gemThinkingConfig{}
	switch {
	case rs.Enabled != nil && !*rs.Enabled:
		return nil, nil
	case rs.Enabled != nil && rs.Adaptive:
		b := int64(-1)
		tc.ThinkingBudget, tc.IncludeThoughts = &b, true
	case rs.Enabled != nil:
		b := rs.BudgetTokens
		tc.ThinkingBudget, tc.IncludeThoughts = &b, true
	case rs.Effort == "":
		// A summary asked for without an effort (Codex's default):
		// the model's own budget, its thoughts shown.
		if rs.Summary == "" || rs.Summary == "none" {
			return nil, nil
		}
		tc.IncludeThoughts = true
	default:
		budgets := map[string]int64{"none": 0, "minimal": 0, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768}
		b, known := budgets[rs.Effort]
		if !known {
			return nil, x.reject(FeatReasoning, "unknown reasoning effort "+strconv.Quote(rs.Effort))
		}
		tc.ThinkingBudget, tc.IncludeThoughts = &b, b > 0
	}
	return tc, nil
}

func gemUserPart(p *canonical.Part, x *encoder) (gemPart, bool, error) {
	switch p.Type {
	case canonical.PartText:
		return gemPart{Text: p.Text}, p.Text != "", nil
	case canonical.PartImage:
		if p.Image.URL != "" {
			return gemPart{}, false, x.check(FeatImageURL)
		}
		return gemPart{InlineData: &gemBlob{MimeType: p.Image.MediaType, Data: p.Image.Data}}, true, nil
	case canonical.PartAudio:
		return gemPart{InlineData: &gemBlob{MimeType: "audio/" + p.Audio.Format, Data: p.Audio.Data}}, true, nil
	case canonical.PartFile:
		f := p.File
		if f.Data == "" || (f.MediaType != "application/pdf" && f.MediaType != "text/plain") {
			return gemPart{}, false, x.reject(FeatFileInput, "Gemini takes PDF or plain-text data inline, not file ids or URLs")
		}
		return gemPart{InlineData: &gemBlob{MimeType: f.MediaType, Data: f.Data}}, true, nil
	}
	return gemPart{}, false, nil
}

// gemFunctionResult is a tool result as Gemini's functionResponse: its
// function's name from the call, and a JSON object — the result itself
// when it is one, else {"output": text} (or {"error": text}).
func gemFunctionResult(tr *canonical.ToolResult, names map[string]string, x *encoder) (*gemFunctionResponse, error) {
	name := tr.Name
	if name == "" {
		name = names[tr.CallID]
	}
	if name == "" {
		return nil, badField("messages[].tool_call_id", "no earlier tool call has the id %q, and Gemini needs the function's name", tr.CallID)
	}
	for _, p := range tr.Content {
		if p.Type != canonical.PartText {
			if err := x.check(FeatToolResultImage); err != nil {
				return nil, err
			}
		}
	}
	text := canonical.TextOf(tr.Content, "\n")
	var resp json.RawMessage
	switch trimmed := strings.TrimSpace(text); {
	case tr.IsError:
		resp, _ = json.Marshal(map[string]string{"error": text})
	case strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)):
		resp = json.RawMessage(trimmed)
	default:
		resp, _ = json.Marshal(map[string]string{"output": text})
	}
	fr := &gemFunctionResponse{Name: name, Response: resp}
	if gid, _, provided, ok := parseGeminiID(tr.CallID); ok && provided {
		fr.ID = gid
	}
	return fr, nil
}
