package translator

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Google Gemini (Developer API): the gemini upstream side. Gemini is never
// a caller's shape in phase 1.

// --- wire types ---

type gemRequest struct {
	Contents          []gemContent   `json:"contents"`
	SystemInstruction *gemContent    `json:"systemInstruction,omitempty"`
	Tools             []gemTool      `json:"tools,omitempty"`
	ToolConfig        *gemToolConfig `json:"toolConfig,omitempty"`
	GenerationConfig  *gemGenConfig  `json:"generationConfig,omitempty"`
}

type gemContent struct {
	Role  string    `json:"role,omitempty"`
	Parts []gemPart `json:"parts"`
}

type gemPart struct {
	Text             string               `json:"text,omitempty"`
	Thought          bool                 `json:"thought,omitempty"`
	ThoughtSignature string               `json:"thoughtSignature,omitempty"`
	InlineData       *gemBlob             `json:"inlineData,omitempty"`
	FileData         *gemFileData         `json:"fileData,omitempty"`
	FunctionCall     *gemFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *gemFunctionResponse `json:"functionResponse,omitempty"`
}

type gemBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type gemFileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type gemFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type gemFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type gemTool struct {
	FunctionDeclarations []gemFunctionDecl `json:"functionDeclarations"`
}

type gemFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type gemToolConfig struct {
	FunctionCallingConfig gemFunctionCalling `json:"functionCallingConfig"`
}

type gemFunctionCalling struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type gemGenConfig struct {
	Temperature        *float64           `json:"temperature,omitempty"`
	TopP               *float64           `json:"topP,omitempty"`
	TopK               *int64             `json:"topK,omitempty"`
	MaxOutputTokens    *int64             `json:"maxOutputTokens,omitempty"`
	StopSequences      []string           `json:"stopSequences,omitempty"`
	PresencePenalty    *float64           `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64           `json:"frequencyPenalty,omitempty"`
	Seed               *int64             `json:"seed,omitempty"`
	ResponseMimeType   string             `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage    `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *gemThinkingConfig `json:"thinkingConfig,omitempty"`
}

func (g *gemGenConfig) empty() bool {
	return g.Temperature == nil && g.TopP == nil && g.TopK == nil && g.MaxOutputTokens == nil && len(g.StopSequences) == 0 &&
		g.PresencePenalty == nil && g.FrequencyPenalty == nil && g.Seed == nil && g.ResponseMimeType == "" &&
		len(g.ResponseJSONSchema) == 0 && g.ThinkingConfig == nil
}

type gemThinkingConfig struct {
	ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
}

type gemResponse struct {
	Candidates []struct {
		Content *struct {
			Parts []gemPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
		Index        int    `json:"index"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *gemUsage `json:"usageMetadata"`
	ModelVersion  string    `json:"modelVersion"`
	ResponseID    string    `json:"responseId"`
	Error         *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

type gemUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

// canonical maps by WIRE.md: promptTokenCount includes cached tokens;
// candidatesTokenCount excludes thoughts.
func (u *gemUsage) canonical() canonical.Usage {
	return canonical.Usage{
		Input:     u.PromptTokenCount + u.ToolUsePromptTokenCount,
		Output:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
		CacheRead: u.CachedContentTokenCount,
		Reasoning: u.ThoughtsTokenCount,
	}
}

// finishFromGemini maps a finishReason; tools says the answer called
// functions (Gemini still says STOP).
func finishFromGemini(s string, tools bool) canonical.FinishReason {
	switch s {
	case "STOP":
		if tools {
			return canonical.FinishToolCalls
		}
		return canonical.FinishStop
	case "MAX_TOKENS":
		return canonical.FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return canonical.FinishContentFilter
	case "":
		return canonical.FinishNone
	}
	return canonical.FinishOther
}

// --- tool-call ids ---
//
// Gemini's function calls often have no id, and Gemini 3 needs a call's
// thoughtSignature echoed on the next turn. Relay's id for a Gemini call
// carries both: "rgem_" + base64url(flags, len(id), id, signature), where
// the id is Gemini's own when it gave one, else a hash of the response id
// and the call's index in the response — stable and unique. The caller
// sends the id back with its result; the Gemini encoder reads the
// signature (and Gemini's id) out of it.

const geminiIDPrefix = "rgem_"

const (
	gemFlagProvided = 1 << iota // the id is Gemini's own
	gemFlagSigB64               // the signature was base64 and is stored decoded
)

// geminiCallID is Relay's id for the index-th function call of a response.
func geminiCallID(responseID string, index int, gid, sig string) string {
	var flags byte
	id := []byte(gid)
	if gid != "" {
		flags |= gemFlagProvided
	} else {
		var sum [32]byte
		if responseID != "" {
			sum = sha256.Sum256([]byte(responseID + ":" + strconv.Itoa(index)))
		} else {
			_, _ = rand.Read(sum[:])
		}
		id = sum[:9]
	}
	sigBytes := []byte(sig)
	if sig != "" {
		if raw, err := base64.StdEncoding.DecodeString(sig); err == nil && base64.StdEncoding.EncodeToString(raw) == sig {
			flags |= gemFlagSigB64
			sigBytes = raw
		}
	}
	buf := make([]byte, 0, 1+binary.MaxVarintLen64+len(id)+len(sigBytes))
	buf = append(buf, flags)
	buf = binary.AppendUvarint(buf, uint64(len(id)))
	buf = append(buf, id...)
	buf = append(buf, sigBytes...)
	return geminiIDPrefix + base64.RawURLEncoding.EncodeToString(buf)
}

// parseGeminiID reads an id minted by geminiCallID: Gemini's own id (when
// it gave one) and the signature; ok is false for any other id.
func parseGeminiID(id string) (gid, sig string, provided, ok bool) {
	rest, found := strings.CutPrefix(id, geminiIDPrefix)
	if !found {
		return "", "", false, false
	}
	buf, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(buf) < 2 {
		return "", "", false, false
	}
	flags := buf[0]
	n, k := binary.Uvarint(buf[1:])
	if k <= 0 || n > uint64(len(buf)-1-k) {
		return "", "", false, false
	}
	body := buf[1+k:]
	idBytes, sigBytes := body[:n], body[n:]
	if flags&gemFlagProvided != 0 {
		gid = string(idBytes)
	}
	if flags&gemFlagSigB64 != 0 {
		sig = base64.StdEncoding.EncodeToString(sigBytes)
	} else {
		sig = string(sigBytes)
	}
	return gid, sig, flags&gemFlagProvided != 0, true
}

// skipSignature is the placeholder Google documents for function calls
// Gemini did not make (history from another model), which it then does not
// validate.
const skipSignature = "skip_thought_signature_validator"

// ============================================================
// Upstream side: the gemini shape.
// ============================================================

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
	FeatParallelOff:     {Rejected, "Gemini cannot be told to call one function at a time"},
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
	msgs = canonical.GroupToolResults(msgs)
	names := canonical.ToolNames(msgs)
	add := func(role string, ps ...gemPart) {
		if len(ps) == 0 {
			return
		}
		if n := len(q.Contents); n > 0 && q.Contents[n-1].Role == role {
			q.Contents[n-1].Parts = append(q.Contents[n-1].Parts, ps...)
			return
		}
		q.Contents = append(q.Contents, gemContent{Role: role, Parts: ps})
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case canonical.RoleUser:
			for j := range m.Parts {
				p, ok, err := gemUserPart(&m.Parts[j], x)
				if err != nil {
					return dst, err
				}
				if ok {
					add("user", p)
				}
			}
		case canonical.RoleTool:
			for _, p := range m.Parts {
				if p.Type != canonical.PartToolResult {
					continue
				}
				fr, err := gemFunctionResult(p.ToolResult, names, x)
				if err != nil {
					return dst, err
				}
				add("user", gemPart{FunctionResponse: fr})
			}
		case canonical.RoleAssistant:
			var ps []gemPart
			signed := false
			first := -1
			for _, p := range m.Parts {
				switch p.Type {
				case canonical.PartText, canonical.PartRefusal:
					if p.Text != "" {
						ps = append(ps, gemPart{Text: p.Text})
					}
				case canonical.PartToolCall:
					args, ok := argsObject(p.ToolCall.Arguments)
					if !ok {
						return dst, badField("messages[].tool_calls[].function.arguments", "the arguments of tool call %q are not a JSON object", p.ToolCall.ID)
					}
					fc := &gemFunctionCall{Name: p.ToolCall.Name, Args: args}
					part := gemPart{FunctionCall: fc}
					if gid, sig, provided, ok := parseGeminiID(p.ToolCall.ID); ok {
						if provided {
							fc.ID = gid
						}
						part.ThoughtSignature = sig
						signed = signed || sig != ""
					}
					if first < 0 {
						first = len(ps)
					}
					ps = append(ps, part)
				}
			}
			if first >= 0 && !signed {
				ps[first].ThoughtSignature = skipSignature
			}
			add("model", ps...)
		}
	}
	if len(q.Contents) == 0 {
		return dst, badField("messages", "no message has content Gemini can take")
	}
	strict := false
	if len(r.Tools) > 0 {
		decls := make([]gemFunctionDecl, 0, len(r.Tools))
		for _, t := range r.Tools {
			decls = append(decls, gemFunctionDecl{Name: t.Name, Description: t.Description, ParametersJSONSchema: t.Parameters})
			strict = strict || t.Strict != nil && *t.Strict
		}
		q.Tools = []gemTool{{FunctionDeclarations: decls}}
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
		q.ToolConfig = &gemToolConfig{FunctionCallingConfig: gemFunctionCalling{Mode: mode, AllowedFunctionNames: allowed}}
	}
	g := gemGenConfig{
		Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MaxOutputTokens: r.MaxOutputTokens,
		PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty, Seed: r.Seed,
	}
	if len(r.Stop) > 5 {
		return dst, x.reject(FeatStop, "Gemini takes at most 5 stop sequences")
	}
	g.StopSequences = r.Stop
	if f := r.ResponseFormat; f != nil {
		switch f.Type {
		case canonical.FormatJSONObject:
			g.ResponseMimeType = "application/json"
		case canonical.FormatJSONSchema:
			g.ResponseMimeType, g.ResponseJSONSchema = "application/json", f.Schema
		}
	}
	if rs := r.Reasoning; rs != nil {
		tc := &gemThinkingConfig{}
		switch {
		case rs.Enabled != nil && !*rs.Enabled:
			tc = nil
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
				tc = nil
			} else {
				tc.IncludeThoughts = true
			}
		default:
			budgets := map[string]int64{"none": 0, "minimal": 0, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768}
			b, known := budgets[rs.Effort]
			if !known {
				return dst, x.reject(FeatReasoning, "unknown reasoning effort "+strconv.Quote(rs.Effort))
			}
			tc.ThinkingBudget, tc.IncludeThoughts = &b, b > 0
		}
		g.ThinkingConfig = tc
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

func (u *geminiUpstream) decodeResponse(body []byte, r *canonical.Response) error {
	var g gemResponse
	if err := json.Unmarshal(body, &g); err != nil {
		return fmt.Errorf("decode generateContent response: %w", err)
	}
	if g.Error != nil {
		return fmt.Errorf("the response is an error: %s", g.Error.Message)
	}
	r.ID, r.Model, r.Created = g.ResponseID, g.ModelVersion, u.now.Unix()
	if g.UsageMetadata != nil {
		r.Usage = g.UsageMetadata.canonical()
	}
	if len(g.Candidates) == 0 {
		if g.PromptFeedback != nil && g.PromptFeedback.BlockReason != "" {
			r.Finish = canonical.FinishContentFilter
			return nil
		}
		return fmt.Errorf("the response has no candidates")
	}
	c := g.Candidates[0]
	calls := 0
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				id := geminiCallID(g.ResponseID, calls, p.FunctionCall.ID, p.ThoughtSignature)
				calls++
				r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: id, Name: p.FunctionCall.Name, Arguments: argsText(p.FunctionCall.Args), Signature: p.ThoughtSignature}})
			case p.Text != "":
				kind := canonical.PartText
				if p.Thought {
					kind = canonical.PartThinking
				}
				if n := len(r.Parts); n > 0 && r.Parts[n-1].Type == kind {
					r.Parts[n-1].Text += p.Text
				} else {
					part := canonical.Part{Type: kind, Text: p.Text}
					if kind == canonical.PartThinking {
						part.Origin = canonical.OriginGemini
					}
					r.Parts = append(r.Parts, part)
				}
			}
		}
	}
	r.Finish = finishFromGemini(c.FinishReason, calls > 0)
	return nil
}

func (u *geminiUpstream) decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return evs, nil
	}
	var g gemResponse
	if err := json.Unmarshal(data, &g); err != nil {
		return evs, fmt.Errorf("decode generateContent chunk: %w", err)
	}
	if u.finished {
		// A trailing chunk may still bring the final usage.
		if g.UsageMetadata != nil {
			evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: g.UsageMetadata.canonical()})
		}
		return evs, nil
	}
	if g.Error != nil {
		u.finished = true
		e := streamErrorOf(g.Error.Status, g.Error.Code, g.Error.Message)
		return append(evs, canonical.Event{Kind: canonical.EventError, Err: e}), nil
	}
	if !u.started {
		u.started = true
		u.responseID = g.ResponseID
		ev := canonical.Event{Kind: canonical.EventStart, ID: g.ResponseID, Model: g.ModelVersion, Created: u.now.Unix()}
		if g.UsageMetadata != nil {
			ev.Usage = g.UsageMetadata.canonical()
			ev.Usage.Output, ev.Usage.Reasoning = 0, 0
		}
		evs = append(evs, ev)
	}
	finish := ""
	if len(g.Candidates) > 0 {
		c := g.Candidates[0]
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					evs = u.closeOpen(evs)
					at := u.next
					u.next++
					id := geminiCallID(u.responseID, u.calls, p.FunctionCall.ID, p.ThoughtSignature)
					u.calls++
					evs = append(evs,
						canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: canonical.PartToolCall, ID: id, Name: p.FunctionCall.Name, Signature: p.ThoughtSignature},
						canonical.Event{Kind: canonical.EventDelta, Index: at, Text: argsText(p.FunctionCall.Args)},
						canonical.Event{Kind: canonical.EventPartEnd, Index: at})
				case p.Text != "":
					kind := canonical.PartText
					if p.Thought {
						kind = canonical.PartThinking
					}
					if u.open < 0 || u.openKind != kind {
						evs = u.closeOpen(evs)
						u.open, u.openKind = u.next, kind
						u.next++
						start := canonical.Event{Kind: canonical.EventPartStart, Index: u.open, Part: kind}
						if kind == canonical.PartThinking {
							start.Origin = canonical.OriginGemini
						}
						evs = append(evs, start)
					}
					evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: u.open, Text: p.Text})
				}
			}
		}
		finish = c.FinishReason
	} else if g.PromptFeedback != nil && g.PromptFeedback.BlockReason != "" {
		u.blocked = true
	}
	if g.UsageMetadata != nil {
		evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: g.UsageMetadata.canonical()})
	}
	if finish != "" || u.blocked {
		u.finished = true
		evs = u.closeOpen(evs)
		f := canonical.FinishContentFilter
		if !u.blocked {
			f = finishFromGemini(finish, u.calls > 0)
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: f})
	}
	return evs, nil
}

func (u *geminiUpstream) closeOpen(evs []canonical.Event) []canonical.Event {
	if u.open >= 0 {
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: u.open})
		u.open = -1
	}
	return evs
}

// atEOF: Gemini streams just end; the stream was whole when its last chunk
// carried a finish reason (or the prompt was blocked).
func (u *geminiUpstream) atEOF(evs []canonical.Event) ([]canonical.Event, bool) {
	if !u.finished {
		return evs, false
	}
	return append(evs, canonical.Event{Kind: canonical.EventDone}), true
}

// --- embeddings (batchEmbedContents) ---

type gemBatchEmbedResponse struct {
	Embeddings []struct {
		Values []float32 `json:"values"`
	} `json:"embeddings"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// decodeGeminiEmbeddings reads a batchEmbedContents answer: one vector per
// request, in order. Every vector must have values.
func decodeGeminiEmbeddings(body []byte) ([][]float32, error) {
	var g gemBatchEmbedResponse
	if err := json.Unmarshal(body, &g); err != nil {
		return nil, fmt.Errorf("decode batchEmbedContents response: %w", err)
	}
	if g.Error != nil {
		return nil, fmt.Errorf("the response is an error: %s", g.Error.Message)
	}
	if g.Embeddings == nil {
		return nil, errors.New("the response holds no embeddings")
	}
	out := make([][]float32, len(g.Embeddings))
	for i := range g.Embeddings {
		if len(g.Embeddings[i].Values) == 0 {
			return nil, fmt.Errorf("embedding %d has no values", i)
		}
		out[i] = g.Embeddings[i].Values
	}
	return out, nil
}
