package wire

import (
	"fmt"
	"strings"
)

// What Relay reads from a Gemini body (generateContent and its kin): the
// model and whether to stream come from the URL path; the body gives the
// output-token estimate and whether structured output is asked for, both
// inside generationConfig. Every member is found through findMembers, so
// "generation_config", "max_output_tokens" and escaped spellings are the
// members Gemini reads, and two of them are refused.

// The members of a Gemini body's generationConfig Relay reads.
const (
	gcMaxOutputTokens = iota
	gcResponseSchema
	gcResponseJSONSchema
	nGenerationConfig
)

// geminiRoot spells generationConfig; generationConfigMembers what Relay
// reads inside it. Read only.
var (
	geminiRoot              = []spelling{{"generationConfig", 0}, {"generation_config", 0}}
	generationConfigMembers = []spelling{
		{"maxOutputTokens", gcMaxOutputTokens}, {"max_output_tokens", gcMaxOutputTokens},
		{"responseSchema", gcResponseSchema}, {"response_schema", gcResponseSchema},
		{"responseJsonSchema", gcResponseJSONSchema}, {"response_json_schema", gcResponseJSONSchema},
	}
)

// GeminiRequest is what Relay reads from a Gemini body.
type GeminiRequest struct {
	// MaxTokens is generationConfig.maxOutputTokens when it is a
	// non-negative number (rounded up, capped at MaxTokenLimit), else 0.
	MaxTokens int64
	// JSONSchema: generationConfig asks for a response schema.
	JSONSchema bool
}

// ScanGemini reads a Gemini body, which must be one JSON object. A member
// it reads that appears twice — under one spelling or under two Gemini
// takes for the same field, such as maxOutputTokens and max_output_tokens
// — or under a case-folded spelling fails the scan with an *Error of kind
// ErrMalformedRequest naming it. It does not allocate unless it refuses.
func ScanGemini(body []byte) (GeminiRequest, error) {
	var g GeminiRequest
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return g, ErrNotObject
	}
	spans := [1][2]int{noSpan}
	end, refused, syntax := findMembers(body, i, 1, "", geminiRoot, spans[:])
	if syntax != nil {
		return g, fmt.Errorf("scan request body: %w", syntax)
	}
	if j := skipWS(body, end); j != len(body) {
		return g, fmt.Errorf("scan request body: %w", syntaxErr(j, "data after the top-level object"))
	}
	if refused != nil {
		return g, refused
	}
	if spans[0][0] < 0 {
		return g, nil
	}
	var err *Error
	g.MaxTokens, g.JSONSchema, err = scanGenerationConfig(body[spans[0][0]:spans[0][1]])
	if err != nil {
		return g, err
	}
	return g, nil
}

// scanGenerationConfig reads a generationConfig value.
func scanGenerationConfig(v []byte) (maxTokens int64, schema bool, refused *Error) {
	if len(v) == 0 || v[0] != '{' {
		return 0, false, nil
	}
	spans := [nGenerationConfig][2]int{noSpan, noSpan, noSpan}
	if _, err, _ := findMembers(v, 0, 2, "generationConfig.", generationConfigMembers, spans[:]); err != nil {
		return 0, false, err
	}
	if s := spans[gcMaxOutputTokens]; s[0] >= 0 {
		if n, ok := tokenLimit(v[s[0]:s[1]]); ok {
			maxTokens = n
		}
	}
	for _, s := range spans[gcResponseSchema:] {
		if s[0] >= 0 && string(v[s[0]:s[1]]) != "null" {
			schema = true
		}
	}
	return maxTokens, schema, nil
}

// geminiPath is what a Gemini path names.
type geminiPath struct {
	model  string  // the catalog model; "" for the model list
	in     Inbound // InboundNone for a GET of a model or the list
	stream bool
}

// geminiMethod is the inbound shape of a method in a Gemini path
// (…/models/{model}:{method}), and whether it streams; InboundNone for a
// method Relay does not serve.
func geminiMethod(method string) (Inbound, bool) {
	switch method {
	case "generateContent":
		return InboundGemini, false
	case "streamGenerateContent":
		return InboundGemini, true
	case "countTokens":
		return InboundGeminiCountTokens, false
	case "embedContent":
		return InboundGeminiEmbed, false
	case "batchEmbedContents":
		return InboundGeminiBatchEmbed, false
	}
	return InboundNone, false
}

// parseGeminiPath reads a path whose /gemini prefix (prefixed) is already
// off: /v1beta/models[/{model}[:{method}]], and the same under
// /v1/models/. A catalog name may itself hold a slash, and the SDKs send
// models/{model}. ok is false for a path that is not one of Gemini's
// (OpenAI's GET /v1/models/{name} among them, unless prefixed).
func parseGeminiPath(path string, prefixed bool) (geminiPath, bool) {
	var rest string
	switch {
	case strings.HasPrefix(path, "/v1beta/models"):
		rest = path[len("/v1beta/models"):]
	case strings.HasPrefix(path, "/v1/models/") || prefixed && path == "/v1/models":
		rest = path[len("/v1/models"):]
	default:
		return geminiPath{}, false
	}
	if rest == "" || rest == "/" {
		return geminiPath{}, true // the list
	}
	if rest[0] != '/' {
		return geminiPath{}, false
	}
	name := rest[1:]
	var g geminiPath
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		if in, stream := geminiMethod(name[i+1:]); in != InboundNone {
			g.in, g.stream, name = in, stream, name[:i]
		}
	}
	if g.in == InboundNone && !prefixed && strings.HasPrefix(path, "/v1/") {
		return geminiPath{}, false // OpenAI's GET /v1/models/{name}
	}
	g.model = strings.TrimPrefix(name, "models/")
	if g.model == "" {
		return geminiPath{}, false
	}
	return g, true
}
