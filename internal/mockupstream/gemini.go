package mockupstream

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Gemini's REST API is proto3 JSON, which accepts lowerCamel and snake_case
// field names alike; the request structs carry both spellings for the fields
// the mock reads, and the accessors merge them.

// --- request ---

type geminiRequest struct {
	Contents               []geminiContent         `json:"contents"`
	SystemInstruction      *geminiContent          `json:"systemInstruction"`
	SystemInstructionSnake *geminiContent          `json:"system_instruction"`
	Tools                  []geminiTool            `json:"tools"`
	ToolConfig             *geminiToolConfig       `json:"toolConfig"`
	ToolConfigSnake        *geminiToolConfig       `json:"tool_config"`
	GenerationConfig       *geminiGenerationConfig `json:"generationConfig"`
	GenerationConfigSnake  *geminiGenerationConfig `json:"generation_config"`
	// countTokens may wrap a whole request.
	GenerateContentRequest      *geminiRequest `json:"generateContentRequest"`
	GenerateContentRequestSnake *geminiRequest `json:"generate_content_request"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text                  string                  `json:"text"`
	Thought               bool                    `json:"thought"`
	InlineData            json.RawMessage         `json:"inlineData"`
	InlineDataSnake       json.RawMessage         `json:"inline_data"`
	FileData              json.RawMessage         `json:"fileData"`
	FileDataSnake         json.RawMessage         `json:"file_data"`
	FunctionCall          *geminiFunctionCall     `json:"functionCall"`
	FunctionCallSnake     *geminiFunctionCall     `json:"function_call"`
	FunctionResponse      *geminiFunctionResponse `json:"functionResponse"`
	FunctionResponseSnake *geminiFunctionResponse `json:"function_response"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiFunctionResponse struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type geminiTool struct {
	FunctionDeclarations      []geminiFunctionDecl `json:"functionDeclarations"`
	FunctionDeclarationsSnake []geminiFunctionDecl `json:"function_declarations"`
}

type geminiFunctionDecl struct {
	Name                      string          `json:"name"`
	Description               string          `json:"description"`
	Parameters                json.RawMessage `json:"parameters"`
	ParametersJSONSchema      json.RawMessage `json:"parametersJsonSchema"`
	ParametersJSONSchemaSnake json.RawMessage `json:"parameters_json_schema"`
}

type geminiToolConfig struct {
	FunctionCallingConfig      *geminiFunctionCalling `json:"functionCallingConfig"`
	FunctionCallingConfigSnake *geminiFunctionCalling `json:"function_calling_config"`
}

type geminiFunctionCalling struct {
	Mode                      string   `json:"mode"`
	AllowedFunctionNames      []string `json:"allowedFunctionNames"`
	AllowedFunctionNamesSnake []string `json:"allowed_function_names"`
}

type geminiGenerationConfig struct {
	MaxOutputTokens      *int                  `json:"maxOutputTokens"`
	MaxOutputTokensSnake *int                  `json:"max_output_tokens"`
	StopSequences        []string              `json:"stopSequences"`
	StopSequencesSnake   []string              `json:"stop_sequences"`
	Temperature          *float64              `json:"temperature"`
	ThinkingConfig       *geminiThinkingConfig `json:"thinkingConfig"`
	ThinkingConfigSnake  *geminiThinkingConfig `json:"thinking_config"`
}

type geminiThinkingConfig struct {
	IncludeThoughts      bool `json:"includeThoughts"`
	IncludeThoughtsSnake bool `json:"include_thoughts"`
}

func either[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func eitherSlice[T any](a, b []T) []T {
	if a != nil {
		return a
	}
	return b
}

func geminiInvalid(msg string) *apiError { return &apiError{kind: errInvalid, msg: msg} }

// decodeGemini parses and validates generateContent (or countTokens) into cv.
// The request is never nil.
func decodeGemini(body []byte, cv *convo, count bool) (*geminiRequest, *apiError) {
	req := &geminiRequest{}
	if e := decodeBody(body, req, provGemini); e != nil {
		return req, e
	}
	if count {
		if inner := either(req.GenerateContentRequest, req.GenerateContentRequestSnake); inner != nil {
			req = inner
		}
	}
	name := "GenerateContentRequest"
	if count {
		name = "CountTokensRequest"
	}
	if len(req.Contents) == 0 {
		return req, geminiInvalid("* " + name + ".contents: contents is not specified\n")
	}
	if si := either(req.SystemInstruction, req.SystemInstructionSnake); si != nil {
		for _, p := range si.Parts {
			cv.textBytes += len(p.Text)
		}
	}
	for i, ct := range req.Contents {
		at := name + ".contents[" + strconv.Itoa(i) + "]"
		if len(ct.Parts) == 0 {
			return req, geminiInvalid("* " + at + ".parts: contents.parts must not be empty.\n")
		}
		cv.messages++
		var text strings.Builder
		hasResult := false
		for _, p := range ct.Parts {
			switch {
			case either(p.FunctionCall, p.FunctionCallSnake) != nil:
				fc := either(p.FunctionCall, p.FunctionCallSnake)
				cv.textBytes += len(fc.Name) + len(fc.Args)
			case either(p.FunctionResponse, p.FunctionResponseSnake) != nil:
				fr := either(p.FunctionResponse, p.FunctionResponseSnake)
				hasResult = true
				cv.resultText = compactJSON(fr.Response)
				cv.textBytes += len(fr.Name) + len(cv.resultText)
			case !isNull(eitherSlice(p.InlineData, p.InlineDataSnake)) || !isNull(eitherSlice(p.FileData, p.FileDataSnake)):
				cv.mediaParts++
			default:
				cv.textBytes += len(p.Text)
				if !p.Thought {
					text.WriteString(p.Text)
				}
			}
		}
		switch ct.Role {
		case "", "user":
			if hasResult {
				cv.last = turnToolResult
			} else {
				cv.userText, cv.last = text.String(), turnUser
			}
		case "model":
			cv.last = turnAssistant
		case "function", "tool": // older SDKs send function responses in their own role
			cv.last = turnToolResult
		default:
			return req, geminiInvalid("Please use a valid role: user, model.")
		}
	}
	for _, t := range req.Tools {
		for _, fd := range eitherSlice(t.FunctionDeclarations, t.FunctionDeclarationsSnake) {
			if fd.Name == "" {
				return req, geminiInvalid("* " + name + ".tools[0].function_declarations[0].name: Name cannot be empty.\n")
			}
			schema := eitherSlice(fd.ParametersJSONSchema, fd.ParametersJSONSchemaSnake)
			if isNull(schema) {
				schema = fd.Parameters
			} else if !isNull(fd.Parameters) {
				return req, geminiInvalid("* " + name + ".tools[0].function_declarations[0].parameters_json_schema: parameters and parameters_json_schema are mutually exclusive.\n")
			}
			cv.tools = append(cv.tools, toolDef{name: fd.Name, schema: schema})
			cv.textBytes += len(fd.Name) + len(fd.Description) + len(schema)
		}
	}
	if tc := either(req.ToolConfig, req.ToolConfigSnake); tc != nil {
		if fcc := either(tc.FunctionCallingConfig, tc.FunctionCallingConfigSnake); fcc != nil {
			allowed := eitherSlice(fcc.AllowedFunctionNames, fcc.AllowedFunctionNamesSnake)
			switch strings.ToUpper(fcc.Mode) {
			case "", "MODE_UNSPECIFIED", "AUTO", "VALIDATED":
			case "NONE":
				cv.mode = toolNone
			case "ANY":
				cv.mode, cv.allowed = toolAny, allowed
			default:
				return req, geminiInvalid("Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), \"" + fcc.Mode + "\"")
			}
		}
	}
	if gc := either(req.GenerationConfig, req.GenerationConfigSnake); gc != nil {
		if m := either(gc.MaxOutputTokens, gc.MaxOutputTokensSnake); m != nil && *m > 0 {
			cv.maxTokens, cv.hasMax = *m, true
		}
		cv.stops = eitherSlice(gc.StopSequences, gc.StopSequencesSnake)
		if th := either(gc.ThinkingConfig, gc.ThinkingConfigSnake); th != nil {
			cv.showThinking = th.IncludeThoughts || th.IncludeThoughtsSnake
		}
	}
	return req, nil
}

func compactJSON(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	return string(appendCompact(nil, raw))
}

// --- response ---

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata *geminiUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

type geminiCandidate struct {
	Content      geminiContentOut `json:"content"`
	FinishReason string           `json:"finishReason,omitempty"`
	Index        int              `json:"index"`
}

type geminiContentOut struct {
	Parts []geminiPartOut `json:"parts,omitempty"`
	Role  string          `json:"role"`
}

type geminiPartOut struct {
	Text         string              `json:"text,omitempty"`
	Thought      bool                `json:"thought,omitempty"`
	FunctionCall *geminiFunctionCall `json:"functionCall,omitempty"`
}

type geminiUsage struct {
	PromptTokenCount        int                   `json:"promptTokenCount"`
	CandidatesTokenCount    int                   `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int                   `json:"totalTokenCount"`
	CachedContentTokenCount int                   `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int                   `json:"thoughtsTokenCount,omitempty"`
	PromptTokensDetails     []geminiModalityCount `json:"promptTokensDetails"`
}

type geminiModalityCount struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

type geminiTokenCount struct {
	TotalTokens         int                   `json:"totalTokens"`
	PromptTokensDetails []geminiModalityCount `json:"promptTokensDetails"`
}

func geminiFinish(f finish) string {
	if f == finishLength {
		return "MAX_TOKENS"
	}
	return "STOP" // tool calls end with STOP too
}

// geminiUsageOf maps usage: promptTokenCount includes cached tokens;
// candidatesTokenCount excludes thoughts.
func geminiUsageOf(u usage, final bool) *geminiUsage {
	gu := &geminiUsage{
		PromptTokenCount:        u.input,
		TotalTokenCount:         u.input,
		CachedContentTokenCount: u.cacheRead,
		PromptTokensDetails:     []geminiModalityCount{{Modality: "TEXT", TokenCount: u.input}},
	}
	if final {
		gu.CandidatesTokenCount = u.output
		gu.ThoughtsTokenCount = u.reasoning
		gu.TotalTokenCount = u.input + u.output + u.reasoning
	}
	return gu
}

func (c *call) serveGenerate() {
	rp := c.conv.plan(false)
	// Each stream chunk carries some parts; the non-stream answer all of them.
	var chunks [][]geminiPartOut
	if c.conv.showThinking {
		for _, p := range rp.thinking {
			chunks = append(chunks, []geminiPartOut{{Text: p, Thought: true}})
		}
	}
	for _, p := range rp.pieces {
		chunks = append(chunks, []geminiPartOut{{Text: p}})
	}
	for _, tc := range rp.calls {
		chunks = append(chunks, []geminiPartOut{{FunctionCall: &geminiFunctionCall{Name: tc.name, Args: json.RawMessage(tc.args)}}})
	}
	resp := geminiResponse{ModelVersion: c.model, ResponseID: geminiResponseID(), Candidates: make([]geminiCandidate, 1)}
	finishReason := geminiFinish(rp.finish)

	if !c.stream {
		var parts []geminiPartOut
		if c.conv.showThinking && len(rp.thinking) > 0 {
			parts = append(parts, geminiPartOut{Text: joinPieces(rp.thinking), Thought: true})
		}
		if rp.text != "" {
			parts = append(parts, geminiPartOut{Text: rp.text})
		}
		for _, ch := range chunks {
			if ch[0].FunctionCall != nil {
				parts = append(parts, ch[0])
			}
		}
		resp.Candidates[0] = geminiCandidate{Content: geminiContentOut{Parts: parts, Role: "model"}, FinishReason: finishReason}
		resp.UsageMetadata = geminiUsageOf(rp.usage, true)
		c.writeJSON(&resp)
		return
	}

	frame, ct := frameArray, "application/json; charset=UTF-8"
	if c.r.URL.Query().Get("alt") == "sse" {
		frame, ct = frameData, "text/event-stream"
	}
	if !c.beginStream(ct, frame) {
		return
	}
	if len(chunks) == 0 {
		chunks = append(chunks, nil)
	}
	partial := geminiUsageOf(rp.usage, false)
	for i, parts := range chunks {
		resp.Candidates[0] = geminiCandidate{Content: geminiContentOut{Parts: parts, Role: "model"}}
		resp.UsageMetadata = partial
		if i == len(chunks)-1 {
			resp.Candidates[0].FinishReason = finishReason
			resp.UsageMetadata = geminiUsageOf(rp.usage, true)
		}
		if !c.send("", &resp) {
			return
		}
	}
	c.endStream()
}
