package canonical

import "encoding/json"

// Request is one generation request, whatever shape it arrived in.
//
// Pointer and zero-value fields mean "not set": an encoder sends only what
// the caller asked for and leaves the rest to the provider's defaults.
type Request struct {
	// Model is the caller's model name; encoders send the binding's
	// upstream model instead.
	Model string `json:"model"`
	// System is the system prompt: Chat's leading system/developer
	// messages, Responses' instructions, Anthropic's system. Each entry is
	// a PartText part (with CacheHint where the caller set one).
	System []Part `json:"system,omitempty"`
	// Messages is the conversation in caller order. See Message.
	Messages []Message `json:"messages"`

	Tools             []Tool     `json:"tools,omitempty"`
	ToolChoice        ToolChoice `json:"tool_choice,omitzero"`
	ParallelToolCalls *bool      `json:"parallel_tool_calls,omitempty"`

	// MaxOutputTokens caps generated tokens (visible + reasoning).
	MaxOutputTokens *int64   `json:"max_output_tokens,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	TopP            *float64 `json:"top_p,omitempty"`
	TopK            *int64   `json:"top_k,omitempty"`
	// PresencePenalty and FrequencyPenalty are OpenAI's −2..2 penalties.
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	// LogitBias is OpenAI's token-id → bias map, kept raw.
	LogitBias json.RawMessage `json:"logit_bias,omitempty"`
	Stop      []string        `json:"stop,omitempty"`
	// N is the number of choices asked for; 0 means one.
	N int `json:"n,omitempty"`
	// Logprobs asks for token log probabilities; TopLogprobs for that many
	// alternatives each.
	Logprobs    bool   `json:"logprobs,omitempty"`
	TopLogprobs *int64 `json:"top_logprobs,omitempty"`

	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	Reasoning      *Reasoning      `json:"reasoning,omitempty"`
	// Verbosity is OpenAI's low | medium | high answer length hint.
	Verbosity string `json:"verbosity,omitempty"`

	// Metadata is the caller's free-form key/value metadata.
	Metadata map[string]string `json:"metadata,omitempty"`
	// User identifies the end user for abuse monitoring: Chat and
	// Responses safety_identifier (or the deprecated user), Anthropic
	// metadata.user_id.
	User string `json:"user,omitempty"`
	// PromptCacheKey is OpenAI's cache-routing hint.
	PromptCacheKey string `json:"prompt_cache_key,omitempty"`
	// ServiceTier is the caller's service tier, in the caller's vocabulary.
	ServiceTier string `json:"service_tier,omitempty"`

	// Stream asks for an event stream; IncludeUsage (Chat's
	// stream_options.include_usage) asks for the usage chunk in it.
	Stream       bool `json:"stream,omitempty"`
	IncludeUsage bool `json:"include_usage,omitempty"`

	// State is the Responses API's server-side conversation state.
	State *State `json:"state,omitempty"`

	// Advisory names, as JSON paths in the caller's body, the hints the
	// caller sent that only its own shape carries (context_management,
	// client_metadata …): a translated request leaves them out and says so.
	Advisory []string `json:"advisory,omitempty"`
	// SentAt is where, in the caller's body, each advisory hint was first
	// sent (messages[2].cache_control), by the name Advisory and the
	// dropped-fields header give it (messages[].cache_control): a strict
	// caller's refusal names the place. Decoders fill it for the hints
	// they accept; a name without an entry is refused under its own name.
	SentAt map[string]string `json:"-"`
}

// NoteSentAt records that the hint named name was sent at at, unless it
// was sent earlier.
func (r *Request) NoteSentAt(name, at string) {
	if _, ok := r.SentAt[name]; ok {
		return
	}
	if r.SentAt == nil {
		r.SentAt = map[string]string{}
	}
	r.SentAt[name] = at
}

// Role is who speaks a message.
type Role string

// Roles. RoleSystem appears in Messages only for a system or developer
// message placed after the conversation began; leading ones live in
// Request.System. RoleTool messages hold PartToolResult parts only.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of the conversation.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts"`
	// Name is Chat's optional participant name.
	Name string `json:"name,omitempty"`
}

// PartType says what a Part holds.
type PartType string

// Part types.
const (
	PartText       PartType = "text"        // Text
	PartRefusal    PartType = "refusal"     // Text: the model declined (output only)
	PartImage      PartType = "image"       // Image
	PartAudio      PartType = "audio"       // Audio
	PartFile       PartType = "file"        // File (a document: PDF, text …)
	PartToolCall   PartType = "tool_call"   // ToolCall (assistant)
	PartToolResult PartType = "tool_result" // ToolResult (tool)
	// PartThinking is reasoning the model showed: Text, and Signature when
	// the provider signed it (Anthropic) or encrypted it (OpenAI), with
	// Origin naming whose signature it is.
	PartThinking PartType = "thinking"
	// PartRedactedThinking is Anthropic's opaque redacted_thinking; its
	// data is in Signature.
	PartRedactedThinking PartType = "redacted_thinking"
)

// Origin names the provider family that signed a thinking part. Thinking is
// only ever replayed to the provider that signed it.
type Origin string

// Origins.
const (
	OriginNone      Origin = ""
	OriginAnthropic Origin = "anthropic"
	OriginOpenAI    Origin = "openai"
	OriginGemini    Origin = "gemini"
)

// Part is one typed piece of a message. Exactly the fields of its Type are
// set.
type Part struct {
	Type       PartType    `json:"type"`
	Text       string      `json:"text,omitempty"`
	Image      *Image      `json:"image,omitempty"`
	Audio      *Audio      `json:"audio,omitempty"`
	File       *File       `json:"file,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
	Signature  string      `json:"signature,omitempty"`
	Origin     Origin      `json:"origin,omitempty"`
	// CacheHint is Anthropic's cache_control on this part, kept raw.
	CacheHint json.RawMessage `json:"cache_hint,omitempty"`
}

// Image is an image input: inline bytes (MediaType + base64 Data) or a URL.
type Image struct {
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"` // base64, standard alphabet
	URL       string `json:"url,omitempty"`
	// Detail is OpenAI's low | high | auto.
	Detail string `json:"detail,omitempty"`
}

// Audio is an audio input: base64 Data in Format (wav, mp3 …).
type Audio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// File is a document input: inline base64 Data with MediaType, a URL, or a
// provider file id.
type File struct {
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
	Filename  string `json:"filename,omitempty"`
}

// ToolCall is a function call the model made.
type ToolCall struct {
	// ID pairs the call with its result. Translators keep it round-trip
	// safe across shapes; see the translator package.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments as the model produced it
	// (Chat and Responses send a string, which may be empty or invalid;
	// Anthropic and Gemini an object).
	Arguments string `json:"arguments"`
	// ItemID is the Responses output item id (fc_…), distinct from the
	// call id the result pairs with.
	ItemID string `json:"item_id,omitempty"`
	// Signature is a provider's opaque token that must travel with the call
	// (Gemini's thoughtSignature).
	Signature string `json:"signature,omitempty"`
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID string `json:"call_id"`
	// Name is the called function's name; Gemini needs it, so Normalize
	// fills it from the preceding call.
	Name string `json:"name,omitempty"`
	// Content is the result: PartText and, where the caller's shape allows
	// it, PartImage parts.
	Content []Part `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// Tool is a function the model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments; nil when the caller
	// gave none.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Strict     *bool           `json:"strict,omitempty"`
	CacheHint  json.RawMessage `json:"cache_hint,omitempty"`
	// Namespace is the Responses namespace tool the caller offered this
	// one in ("" at the top level; Codex offers each MCP server's tools
	// so). Upstreams see the tool by its own name; the caller's answer
	// names the namespace on each call of it, as OpenAI's does, so the
	// caller can route the call.
	Namespace string `json:"namespace,omitempty"`
}

// ToolChoiceMode is how the model may use tools.
type ToolChoiceMode string

// Tool choice modes; the empty mode leaves the provider's default (auto).
const (
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required" // some tool
	ToolChoiceTool     ToolChoiceMode = "tool"     // the tool named Name
)

// ToolChoice constrains tool use.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"`
}

// ResponseFormatType is the kind of structured output asked for.
type ResponseFormatType string

// Response format types.
const (
	FormatText       ResponseFormatType = "text"
	FormatJSONObject ResponseFormatType = "json_object"
	FormatJSONSchema ResponseFormatType = "json_schema"
)

// ResponseFormat is structured output / JSON mode.
type ResponseFormat struct {
	Type        ResponseFormatType `json:"type"`
	Name        string             `json:"name,omitempty"`
	Description string             `json:"description,omitempty"`
	Schema      json.RawMessage    `json:"schema,omitempty"`
	Strict      *bool              `json:"strict,omitempty"`
}

// Reasoning configures the model's reasoning. Effort is OpenAI's vocabulary
// (none, minimal, low, medium, high, xhigh); BudgetTokens Anthropic's and
// Gemini's. Enabled is nil when the caller did not say.
type Reasoning struct {
	Enabled      *bool  `json:"enabled,omitempty"`
	Adaptive     bool   `json:"adaptive,omitempty"` // Anthropic {type:"adaptive"}
	Effort       string `json:"effort,omitempty"`
	BudgetTokens int64  `json:"budget_tokens,omitempty"`
	// Summary is Responses' reasoning.summary (auto, concise, detailed).
	Summary string `json:"summary,omitempty"`
}

// State is the Responses API's server-side conversation state. Stateless
// upstreams cannot honour it: a translator must store the conversation or
// reject the request.
type State struct {
	PreviousResponseID string   `json:"previous_response_id,omitempty"`
	Conversation       string   `json:"conversation,omitempty"`
	Store              *bool    `json:"store,omitempty"`
	Include            []string `json:"include,omitempty"`
	// ID is the response id Relay keeps the answer under when it stores
	// the state itself (package respstore); "" when it does not, and the
	// id is derived from the upstream's.
	ID string `json:"-"`
	// Expanded: Relay has put the items of PreviousResponseID and of the
	// item references into the input, so an encoder need not refuse them.
	Expanded bool `json:"-"`
}

// TextOf joins the text of the PartText parts of ps with sep.
func TextOf(ps []Part, sep string) string {
	n, k := 0, 0
	for i := range ps {
		if ps[i].Type == PartText {
			n += len(ps[i].Text)
			k++
		}
	}
	if k == 1 {
		for i := range ps {
			if ps[i].Type == PartText {
				return ps[i].Text
			}
		}
	}
	b := make([]byte, 0, n+len(sep)*k)
	first := true
	for i := range ps {
		if ps[i].Type != PartText {
			continue
		}
		if !first {
			b = append(b, sep...)
		}
		first = false
		b = append(b, ps[i].Text...)
	}
	return string(b)
}

// EmbedRequest is an embeddings request.
type EmbedRequest struct {
	Model string `json:"model"`
	// Inputs are the texts to embed (token-id inputs are a caller-shape
	// detail a translator rejects or decodes).
	Inputs     []string `json:"inputs"`
	Dimensions *int64   `json:"dimensions,omitempty"`
	// EncodingFormat is float (default) or base64: how the caller wants
	// vectors written, not something an upstream needs.
	EncodingFormat string `json:"encoding_format,omitempty"`
	// TaskType is Gemini's retrieval task hint.
	TaskType string `json:"task_type,omitempty"`
	User     string `json:"user,omitempty"`
}

// EmbedResponse is an embeddings answer: one vector per input, in order.
type EmbedResponse struct {
	Model   string      `json:"model"`
	Vectors [][]float32 `json:"vectors"`
	// Usage.Input is the prompt token count; zero when the provider does
	// not report one (Gemini's Developer API).
	Usage Usage `json:"usage"`
}
