package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Gemini as a caller's shape: generateContent and streamGenerateContent
// bodies decoded into the canonical request here, and answers written as
// GenerateContentResponse objects (gemini_caller_answer.go) — one body, or
// SSE "data:" chunks. The model and whether the caller streams are in the
// URL path, not the body: the proxy sets them with FromPath. A gemini
// binding serves such a caller byte for byte; this side exists for the
// other binding shapes.

// geminiFields is the field that carries each feature in a Gemini
// caller's body, "" when the shape cannot express it (the support
// matrix's column for this caller shape).
var geminiFields = [featCount]string{
	FeatSystem:          "systemInstruction",
	FeatSameRoleTurns:   "contents",
	FeatImageBase64:     "contents[].parts[].inlineData (image/*)",
	FeatImageURL:        "contents[].parts[].fileData (image/*, http(s) URI)",
	FeatAudioInput:      "contents[].parts[].inlineData (audio/*)",
	FeatFileInput:       "contents[].parts[].inlineData (application/pdf, text/plain)",
	FeatTools:           "tools[].functionDeclarations",
	FeatToolChoice:      "toolConfig.functionCallingConfig",
	FeatToolHistory:     "contents[].parts[].functionCall|functionResponse",
	FeatToolResultError: "contents[].parts[].functionResponse.response.error",
	FeatThinkingHistory: "contents[].parts[].thought",
	FeatReasoning:       "generationConfig.thinkingConfig",
	FeatMaxTokens:       "generationConfig.maxOutputTokens",
	FeatTemperature:     "generationConfig.temperature",
	FeatTopP:            "generationConfig.topP",
	FeatTopK:            "generationConfig.topK",
	FeatStop:            "generationConfig.stopSequences",
	FeatSeed:            "generationConfig.seed",
	FeatPenalties:       "generationConfig.presencePenalty, generationConfig.frequencyPenalty",
	FeatJSONObject:      "generationConfig.responseMimeType=application/json",
	FeatJSONSchema:      "generationConfig.responseJsonSchema|responseSchema",
	FeatPrefill:         "contents[-1].role=model",
	FeatStreaming:       ":streamGenerateContent?alt=sse",
}

// FromPath sets what a Gemini caller's URL path says: the catalog model
// and whether the answer streams.
func (r *Request) FromPath(model string, stream bool) {
	r.C.Model, r.C.Stream, r.C.IncludeUsage = model, stream, stream
	r.E.Model = model
}

// --- request decoding ---

func decodeGeminiRequest(body []byte, r *canonical.Request) error {
	var q gemCallerRequest
	if err := decodeGeminiStrict(body, &q); err != nil {
		return err
	}
	if q.CachedContent != "" {
		return unsupported("cachedContent", "cached contents live on Gemini's servers; send the contents themselves, or call a model bound in the gemini shape")
	}
	if len(q.Contents) == 0 {
		return badField("contents", "at least one content is required")
	}
	if s := q.SystemInstruction; s != nil {
		for j, p := range s.Parts {
			if p.Text == "" || p.Thought || p.InlineData != nil || p.FileData != nil || p.FunctionCall != nil || p.FunctionResponse != nil {
				return badField("systemInstruction.parts["+strconv.Itoa(j)+"]", "a system instruction holds text parts only")
			}
			r.System = append(r.System, canonical.Part{Type: canonical.PartText, Text: p.Text})
		}
	}
	if err := gemCallerContents(q.Contents, r); err != nil {
		return err
	}
	for i, t := range q.Tools {
		if t.FunctionDeclarations == nil {
			return unsupported("tools["+strconv.Itoa(i)+"]", "only functionDeclarations tools can be served by another provider")
		}
		for j, d := range t.FunctionDeclarations {
			at := "tools[" + strconv.Itoa(i) + "].functionDeclarations[" + strconv.Itoa(j) + "]"
			if d.Name == "" {
				return badField(at+".name", "a function needs a name")
			}
			var params json.RawMessage
			switch {
			case !isNull(d.ParametersJSONSchema) && !isNull(d.Parameters):
				return badField(at, "give parameters or parametersJsonSchema, not both")
			case !isNull(d.ParametersJSONSchema):
				params = d.ParametersJSONSchema
			case !isNull(d.Parameters):
				s, err := jsonSchemaOf(d.Parameters, at+".parameters")
				if err != nil {
					return err
				}
				params = s
			}
			if params != nil && bytes.TrimSpace(params)[0] != '{' {
				return badField(at+".parameters", "a schema object is required")
			}
			r.Tools = append(r.Tools, canonical.Tool{Name: d.Name, Description: d.Description, Parameters: params})
		}
	}
	if tc := q.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		if err := gemToolChoice(tc.FunctionCallingConfig, r); err != nil {
			return err
		}
	}
	if g := q.GenerationConfig; g != nil {
		if err := gemGenerationConfig(g, r); err != nil {
			return err
		}
	}
	return nil
}

// gemCallerContents turns contents into canonical messages: function
// responses into tool messages, everything else into user and assistant
// turns, in order. Calls without Gemini ids get ids from their place in
// the conversation, and a response without an id answers the earliest
// unanswered call of its function — the conversation is resent whole
// each turn, so the pairing is the same every time.
func gemCallerContents(contents []gemContent, r *canonical.Request) error {
	d := gemContentsReader{r: r}
	for i := range contents {
		if err := d.content(&contents[i], i); err != nil {
			return err
		}
	}
	if len(r.Messages) == 0 {
		return badField("contents", "no content has parts another provider can take")
	}
	return nil
}

// gemContentsReader reads a Gemini caller's contents into r's messages,
// pairing each functionResponse with the earlier call it answers.
type gemContentsReader struct {
	r     *canonical.Request
	calls []gemCallerCall
}

// gemCallerCall is a function call read so far.
type gemCallerCall struct {
	id, name string
	answered bool
}

// add appends p to the last message when it has role, else as a new
// message.
func (d *gemContentsReader) add(role canonical.Role, p canonical.Part) {
	r := d.r
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
		r.Messages[n-1].Parts = append(r.Messages[n-1].Parts, p)
		return
	}
	r.Messages = append(r.Messages, canonical.Message{Role: role, Parts: []canonical.Part{p}})
}

// content reads contents[i].
func (d *gemContentsReader) content(c *gemContent, i int) error {
	at := "contents[" + strconv.Itoa(i) + "]"
	var role canonical.Role
	switch c.Role {
	case "", "user", "function":
		role = canonical.RoleUser
	case "model":
		role = canonical.RoleAssistant
	default:
		return badField(at+".role", "one of user, model")
	}
	if len(c.Parts) == 0 {
		return badField(at+".parts", "at least one part is required")
	}
	for j := range c.Parts {
		if err := d.part(&c.Parts[j], role, i, j, at+".parts["+strconv.Itoa(j)+"]"); err != nil {
			return err
		}
	}
	return nil
}

// part reads part j of contents[i], at pat, by its kind.
func (d *gemContentsReader) part(p *gemPart, role canonical.Role, i, j int, pat string) error {
	set := 0
	for _, on := range []bool{p.Text != "" || p.Thought, p.InlineData != nil, p.FileData != nil, p.FunctionCall != nil, p.FunctionResponse != nil} {
		if on {
			set++
		}
	}
	if set == 0 && p.ThoughtSignature == "" {
		return nil // an empty text part, as Relay itself answers an empty turn
	}
	if set > 1 {
		return badField(pat, "a part holds exactly one of text, inlineData, fileData, functionCall, functionResponse")
	}
	switch {
	case p.FunctionCall != nil:
		return d.functionCall(p, role, i, j, pat)
	case p.FunctionResponse != nil:
		return d.functionResponse(p.FunctionResponse, role, pat)
	case p.Thought || set == 0:
		return d.thought(p, role, pat)
	case p.Text != "":
		d.add(role, canonical.Part{Type: canonical.PartText, Text: p.Text})
	case p.InlineData != nil:
		if role != canonical.RoleUser {
			return badField(pat+".inlineData", "only a user turn holds inline data here")
		}
		cp, err := gemInlinePart(p.InlineData, pat+".inlineData")
		if err != nil {
			return err
		}
		d.add(role, cp)
	case p.FileData != nil:
		fd := p.FileData
		if role != canonical.RoleUser || !strings.HasPrefix(fd.MimeType, "image/") ||
			!strings.HasPrefix(fd.FileURI, "https://") && !strings.HasPrefix(fd.FileURI, "http://") {
			return unsupported(pat+".fileData", "only images at http(s) URLs can be sent to another provider; Gemini file URIs live on Gemini's servers")
		}
		d.add(role, canonical.Part{Type: canonical.PartImage, Image: &canonical.Image{URL: fd.FileURI, MediaType: fd.MimeType}})
	}
	return nil
}

// functionCall reads a model turn's function call; a call without an id
// gets one from its place.
func (d *gemContentsReader) functionCall(p *gemPart, role canonical.Role, i, j int, pat string) error {
	if role != canonical.RoleAssistant {
		return badField(pat+".functionCall", "only a model turn holds function calls")
	}
	fc := p.FunctionCall
	if fc.Name == "" {
		return badField(pat+".functionCall.name", "a function call needs a name")
	}
	if !isNull(fc.Args) && bytes.TrimSpace(fc.Args)[0] != '{' {
		return badField(pat+".functionCall.args", "an object is expected")
	}
	id := fc.ID
	if id == "" {
		id = "gcall_" + strconv.Itoa(i) + "_" + strconv.Itoa(j)
	}
	d.calls = append(d.calls, gemCallerCall{id: id, name: fc.Name})
	d.add(role, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: id, Name: fc.Name, Arguments: argsText(fc.Args), Signature: p.ThoughtSignature}})
	return nil
}

// functionResponse reads a user turn's function response, which answers
// the earliest unanswered call with its id (or, without an id, its name).
func (d *gemContentsReader) functionResponse(fr *gemFunctionResponse, role canonical.Role, pat string) error {
	if role != canonical.RoleUser {
		return badField(pat+".functionResponse", "only a user turn holds function responses")
	}
	id := fr.ID
	for k := range d.calls {
		c := &d.calls[k]
		if !c.answered && (id != "" && c.id == id || id == "" && c.name == fr.Name) {
			c.answered, id = true, c.id
			break
		}
	}
	if id == "" {
		return badField(pat+".functionResponse", "no earlier function call of %q is left to answer", fr.Name)
	}
	tr, err := gemToolResult(fr, id, pat)
	if err != nil {
		return err
	}
	d.add(canonical.RoleTool, canonical.Part{Type: canonical.PartToolResult, ToolResult: tr})
	return nil
}

// thought reads a model turn's thought, or a signature on its own; a
// signature Relay marked as another provider's goes home as that
// provider's thinking.
func (d *gemContentsReader) thought(p *gemPart, role canonical.Role, pat string) error {
	if role != canonical.RoleAssistant {
		return badField(pat+".thought", "only a model turn holds thoughts")
	}
	th := canonical.Part{Type: canonical.PartThinking, Text: p.Text, Signature: p.ThoughtSignature, Origin: canonical.OriginGemini}
	for _, o := range thoughtOrigins {
		if rest, ok := strings.CutPrefix(p.ThoughtSignature, o.prefix); ok {
			th.Signature, th.Origin = rest, o.origin
			if o.redacted {
				th.Type, th.Text = canonical.PartRedactedThinking, ""
			}
			break
		}
	}
	// Thought parts in a row are one thought, closed by its
	// signature (Relay streams the signature as a part of its own).
	r := d.r
	if k := len(r.Messages) - 1; k >= 0 && r.Messages[k].Role == role && th.Type == canonical.PartThinking {
		msg := &r.Messages[k]
		if n := len(msg.Parts); n > 0 && msg.Parts[n-1].Type == canonical.PartThinking && msg.Parts[n-1].Signature == "" {
			msg.Parts[n-1].Text += th.Text
			msg.Parts[n-1].Signature, msg.Parts[n-1].Origin = th.Signature, th.Origin
			return nil
		}
	}
	d.add(role, th)
	return nil
}

func gemInlinePart(b *gemBlob, at string) (canonical.Part, error) {
	if b.Data == "" {
		return canonical.Part{}, badField(at+".data", "data is required")
	}
	mt := strings.ToLower(b.MimeType)
	switch {
	case strings.HasPrefix(mt, "image/"):
		return canonical.Part{Type: canonical.PartImage, Image: &canonical.Image{MediaType: mt, Data: b.Data}}, nil
	case strings.HasPrefix(mt, "audio/"):
		format := strings.TrimPrefix(mt, "audio/")
		switch format {
		case "mpeg", "mp3":
			format = "mp3"
		case "wav", "x-wav", "wave":
			format = "wav"
		}
		return canonical.Part{Type: canonical.PartAudio, Audio: &canonical.Audio{Data: b.Data, Format: format}}, nil
	case mt == "application/pdf", mt == "text/plain":
		return canonical.Part{Type: canonical.PartFile, File: &canonical.File{MediaType: mt, Data: b.Data}}, nil
	case mt == "":
		return canonical.Part{}, badField(at+".mimeType", "a MIME type is required")
	}
	return canonical.Part{}, unsupported(at+".mimeType", "another provider takes images, audio, PDF or plain text, not "+strconv.Quote(b.MimeType))
}

// gemToolResult reads a functionResponse: {"output": text} and
// {"error": text} are that text (the second marked as an error), any
// other response object is passed as its JSON text.
func gemToolResult(fr *gemFunctionResponse, id, at string) (*canonical.ToolResult, error) {
	tr := &canonical.ToolResult{CallID: id, Name: fr.Name}
	raw := bytes.TrimSpace(fr.Response)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, badField(at+".functionResponse.response", "an object is required")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, badField(at+".functionResponse.response", "malformed object")
	}
	text := string(raw)
	if len(m) == 1 {
		for k, v := range m {
			var s string
			if (k == "output" || k == "error") && json.Unmarshal(v, &s) == nil {
				text, tr.IsError = s, k == "error"
			} else if k == "error" {
				tr.IsError = true
			}
		}
	}
	tr.Content = []canonical.Part{{Type: canonical.PartText, Text: text}}
	return tr, nil
}

func gemToolChoice(fc *gemFunctionCalling, r *canonical.Request) error {
	const at = "toolConfig.functionCallingConfig"
	switch fc.Mode {
	case "", "MODE_UNSPECIFIED", "AUTO", "VALIDATED":
		if len(fc.AllowedFunctionNames) > 0 {
			return badField(at+".allowedFunctionNames", "allowed function names go with mode ANY")
		}
		if fc.Mode != "" && fc.Mode != "MODE_UNSPECIFIED" {
			r.ToolChoice.Mode = canonical.ToolChoiceAuto
		}
	case "NONE":
		r.ToolChoice.Mode = canonical.ToolChoiceNone
	case "ANY":
		r.ToolChoice.Mode = canonical.ToolChoiceRequired
		for _, name := range fc.AllowedFunctionNames {
			if !hasTool(r.Tools, name) {
				return badField(at+".allowedFunctionNames", "no function is declared as %q", name)
			}
		}
		switch n := len(fc.AllowedFunctionNames); {
		case n == 1:
			r.ToolChoice = canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: fc.AllowedFunctionNames[0]}
		case n > 1:
			// Required among some: offer only those.
			kept := r.Tools[:0:0]
			for _, t := range r.Tools {
				for _, name := range fc.AllowedFunctionNames {
					if t.Name == name {
						kept = append(kept, t)
						break
					}
				}
			}
			r.Tools = kept
		}
	default:
		return badField(at+".mode", "one of AUTO, ANY, NONE, VALIDATED")
	}
	return nil
}

func gemGenerationConfig(g *gemCallerGenConfig, r *canonical.Request) error {
	const at = "generationConfig."
	if g.CandidateCount != nil && *g.CandidateCount != 1 {
		if *g.CandidateCount < 1 {
			return badField(at+"candidateCount", "must be at least 1")
		}
		return unsupported(at+"candidateCount", "Relay asks other providers for one candidate")
	}
	if g.MaxOutputTokens != nil && *g.MaxOutputTokens < 1 {
		return badField(at+"maxOutputTokens", "must be at least 1")
	}
	r.MaxOutputTokens, r.Temperature, r.TopP, r.Seed = g.MaxOutputTokens, g.Temperature, g.TopP, g.Seed
	r.PresencePenalty, r.FrequencyPenalty = g.PresencePenalty, g.FrequencyPenalty
	if g.TopK != nil {
		if *g.TopK < 1 || *g.TopK != float64(int64(*g.TopK)) {
			return badField(at+"topK", "a positive integer is expected")
		}
		k := int64(*g.TopK)
		r.TopK = &k
	}
	for i, s := range g.StopSequences {
		if s == "" {
			return badField(at+"stopSequences["+strconv.Itoa(i)+"]", "a stop sequence cannot be empty")
		}
	}
	r.Stop = g.StopSequences
	if g.ResponseLogprobs != nil && *g.ResponseLogprobs || g.Logprobs != nil {
		return unsupported(at+"responseLogprobs", "Relay does not write other providers' log probabilities as Gemini's logprobsResult")
	}
	for _, m := range g.ResponseModalities {
		if m != "TEXT" {
			return unsupported(at+"responseModalities", "Relay translates text answers only")
		}
	}
	switch mt := g.ResponseMimeType; mt {
	case "", "text/plain":
		if !isNull(g.ResponseSchema) || !isNull(g.ResponseJSONSchema) {
			return badField(at+"responseMimeType", "a response schema needs responseMimeType application/json")
		}
	case "application/json":
		rf := &canonical.ResponseFormat{Type: canonical.FormatJSONObject}
		switch {
		case !isNull(g.ResponseSchema) && !isNull(g.ResponseJSONSchema):
			return badField(at+"responseJsonSchema", "give responseSchema or responseJsonSchema, not both")
		case !isNull(g.ResponseJSONSchema):
			if bytes.TrimSpace(g.ResponseJSONSchema)[0] != '{' {
				return badField(at+"responseJsonSchema", "a JSON Schema object is required")
			}
			rf.Type, rf.Schema = canonical.FormatJSONSchema, g.ResponseJSONSchema
		case !isNull(g.ResponseSchema):
			s, err := jsonSchemaOf(g.ResponseSchema, at+"responseSchema")
			if err != nil {
				return err
			}
			rf.Type, rf.Schema = canonical.FormatJSONSchema, s
		}
		r.ResponseFormat = rf
	default:
		return unsupported(at+"responseMimeType", "other providers answer text/plain or application/json, not "+strconv.Quote(mt))
	}
	if tc := g.ThinkingConfig; tc != nil {
		rs := &canonical.Reasoning{}
		if tc.IncludeThoughts != nil && *tc.IncludeThoughts {
			rs.Summary = "auto" // thoughts are shown (geminiCaller.showThoughts)
		}
		switch {
		case tc.ThinkingBudget != nil && tc.ThinkingLevel != "":
			return badField(at+"thinkingConfig", "give thinkingBudget or thinkingLevel, not both")
		case tc.ThinkingLevel != "":
			switch tc.ThinkingLevel {
			case "MINIMAL", "LOW", "MEDIUM", "HIGH":
				rs.Effort = strings.ToLower(tc.ThinkingLevel)
			default:
				return badField(at+"thinkingConfig.thinkingLevel", "one of MINIMAL, LOW, MEDIUM, HIGH")
			}
		case tc.ThinkingBudget != nil:
			b := *tc.ThinkingBudget
			on := b != 0
			rs.Enabled = &on
			switch {
			case b == -1:
				rs.Adaptive = true
			case b > 0:
				rs.BudgetTokens = b
			case b < -1:
				return badField(at+"thinkingConfig.thinkingBudget", "-1 (dynamic), 0 (off) or a positive budget")
			}
		}
		if rs.Enabled != nil || rs.Effort != "" || rs.Summary != "" {
			r.Reasoning = rs
		}
	}
	return nil
}

// jsonSchemaOf turns Gemini's Schema object (an OpenAPI 3.0 subset with
// upper-case types and nullable) into the JSON Schema other providers
// take. Keys it does not know are kept as they are.
func jsonSchemaOf(raw json.RawMessage, at string) (json.RawMessage, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, badField(at, "malformed schema")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badField(at, "a schema object is required")
	}
	convertSchema(m)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, badField(at, "malformed schema")
	}
	return b, nil
}

func convertSchema(m map[string]any) {
	if t, ok := m["type"].(string); ok {
		t = strings.ToLower(t)
		if t == "type_unspecified" {
			delete(m, "type")
		} else if n, _ := m["nullable"].(bool); n {
			m["type"] = []any{t, "null"}
		} else {
			m["type"] = t
		}
	}
	delete(m, "nullable")
	delete(m, "propertyOrdering")
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			if pm, ok := p.(map[string]any); ok {
				convertSchema(pm)
			}
		}
	}
	if it, ok := m["items"].(map[string]any); ok {
		convertSchema(it)
	}
	if alts, ok := m["anyOf"].([]any); ok {
		for _, s := range alts {
			if sm, ok := s.(map[string]any); ok {
				convertSchema(sm)
			}
		}
	}
	for _, k := range []string{"minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"} {
		// Gemini's int64 fields come as JSON strings.
		if s, ok := m[k].(string); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				m[k] = n
			}
		}
	}
}

// decodeGeminiStrict is decodeStrict for a Gemini body, which may spell
// its field names as proto names (system_instruction, inline_data …), as
// Google's REST examples do: a body refused for a snake_case field is
// read again with its field names in JSON (camelCase) form. Values Gemini
// passes along uninterpreted (function arguments and responses, schemas)
// keep their keys.
func decodeGeminiStrict(body []byte, v any) error {
	err := decodeStrict(body, v)
	var we *wire.Error
	if err == nil || !errors.As(err, &we) || !errors.Is(err, wire.ErrUnsupportedFeature) || !strings.Contains(we.Param, "_") {
		return err
	}
	camel, ok := camelKeys(body)
	if !ok {
		return err
	}
	return decodeStrict(camel, v)
}

// geminiOpaque are the members whose values are the caller's own JSON.
var geminiOpaque = map[string]bool{
	"args": true, "response": true, "parameters": true, "parametersJsonSchema": true,
	"responseSchema": true, "responseJsonSchema": true,
}

func camelKeys(body []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	out := make([]byte, 0, len(body))
	var value func() bool
	value = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				out = append(out, '{')
				for i := 0; dec.More(); i++ {
					k, err := dec.Token()
					key, ok := k.(string)
					if err != nil || !ok {
						return false
					}
					if i > 0 {
						out = append(out, ',')
					}
					key = snakeToCamel(key)
					out = wire.AppendString(out, key)
					out = append(out, ':')
					if geminiOpaque[key] {
						var raw json.RawMessage
						if dec.Decode(&raw) != nil {
							return false
						}
						out = append(out, raw...)
						continue
					}
					if !value() {
						return false
					}
				}
				if _, err := dec.Token(); err != nil {
					return false
				}
				out = append(out, '}')
			case '[':
				out = append(out, '[')
				for i := 0; dec.More(); i++ {
					if i > 0 {
						out = append(out, ',')
					}
					if !value() {
						return false
					}
				}
				if _, err := dec.Token(); err != nil {
					return false
				}
				out = append(out, ']')
			default:
				return false
			}
		default:
			b, err := json.Marshal(t)
			if err != nil {
				return false
			}
			out = append(out, b...)
		}
		return true
	}
	if !value() {
		return nil, false
	}
	return out, true
}

func snakeToCamel(s string) string {
	if strings.IndexByte(s, '_') <= 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	up := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '_':
			up = true
		case up && c >= 'a' && c <= 'z':
			b = append(b, c-'a'+'A')
			up = false
		default:
			b = append(b, c)
			up = false
		}
	}
	return string(b)
}
