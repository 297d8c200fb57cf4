package translator

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
)

// Google Gemini (Developer API): the wire types both sides share, the
// finish reasons, and the encodings Relay puts on Gemini's ids and
// thought signatures. The gemini caller side is gemini_caller.go (decode
// a request) and gemini_caller_answer.go (encode answers); the gemini
// upstream side is gemini_upstream.go (encode a request) and
// gemini_upstream_answer.go (decode answers, then the stream).

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

// --- wire types (the caller's request) ---

type gemCallerRequest struct {
	Contents          []gemContent         `json:"contents"`
	SystemInstruction *gemContent          `json:"systemInstruction"`
	Tools             []gemCallerTool      `json:"tools"`
	ToolConfig        *gemCallerToolConfig `json:"toolConfig"`
	GenerationConfig  *gemCallerGenConfig  `json:"generationConfig"`
	// SafetySettings are advisory: only Gemini has them.
	SafetySettings json.RawMessage `json:"safetySettings"`
	CachedContent  string          `json:"cachedContent"`
	// Model is sent by some clients in the body as well; the path's wins.
	Model string `json:"model"`
}

type gemCallerTool struct {
	FunctionDeclarations []gemCallerFunctionDecl `json:"functionDeclarations"`
}

type gemCallerFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
	// Response and ResponseJSONSchema describe what the function returns:
	// advisory, no other shape declares it.
	Response           json.RawMessage `json:"response"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
}

type gemCallerToolConfig struct {
	FunctionCallingConfig *gemFunctionCalling `json:"functionCallingConfig"`
}

type gemCallerGenConfig struct {
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"topP"`
	TopK               *float64        `json:"topK"`
	CandidateCount     *int64          `json:"candidateCount"`
	MaxOutputTokens    *int64          `json:"maxOutputTokens"`
	StopSequences      []string        `json:"stopSequences"`
	PresencePenalty    *float64        `json:"presencePenalty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty"`
	Seed               *int64          `json:"seed"`
	ResponseMimeType   string          `json:"responseMimeType"`
	ResponseSchema     json.RawMessage `json:"responseSchema"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	ResponseLogprobs   *bool           `json:"responseLogprobs"`
	Logprobs           *int64          `json:"logprobs"`
	ResponseModalities []string        `json:"responseModalities"`
	// MediaResolution is advisory: a token-cost hint for media inputs.
	MediaResolution string                   `json:"mediaResolution"`
	ThinkingConfig  *gemCallerThinkingConfig `json:"thinkingConfig"`
}

type gemCallerThinkingConfig struct {
	IncludeThoughts *bool  `json:"includeThoughts"`
	ThinkingBudget  *int64 `json:"thinkingBudget"`
	ThinkingLevel   string `json:"thinkingLevel"`
}

// --- finish reasons ---

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

// --- thought signatures ---

// thoughtOrigins are the prefixes Relay puts on another provider's
// thinking signature when it hands it to a Gemini caller as a
// thoughtSignature, so the signature finds its way home on the next turn.
// Gemini's own signatures are base64 and never hold a colon.
var thoughtOrigins = []struct {
	prefix   string
	origin   canonical.Origin
	redacted bool
}{
	{"anthropic:", canonical.OriginAnthropic, false},
	{"anthropic-redacted:", canonical.OriginAnthropic, true},
	{"openai:", canonical.OriginOpenAI, false},
}

func thoughtSignatureOf(p *canonical.Part) string {
	if p.Type == canonical.PartRedactedThinking {
		return "anthropic-redacted:" + p.Signature
	}
	if p.Signature == "" || p.Origin == canonical.OriginGemini || p.Origin == canonical.OriginNone {
		return p.Signature
	}
	return string(p.Origin) + ":" + p.Signature
}
