package translator

import (
	"fmt"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Support is how a pair serves a request feature.
type Support uint8

// Support levels.
const (
	Yes      Support = iota // mapped losslessly
	Emulated                // served by a documented rule (see the note)
	Rejected                // a 400 naming the field and the binding
	Dropped                 // an advisory field not sent, named in X-Relay-Dropped-Fields
	NotApplicable
)

func (s Support) String() string {
	switch s {
	case Yes:
		return "yes"
	case Emulated:
		return "emulated"
	case Rejected:
		return "rejected"
	case Dropped:
		return "dropped"
	}
	return "—"
}

// Feature is a request feature some caller shape can express.
type Feature uint8

// Features, in the order of the support matrix.
const (
	FeatSystem Feature = iota
	FeatSystemMid
	FeatSameRoleTurns
	FeatMessageName
	FeatImageBase64
	FeatImageURL
	FeatImageDetail
	FeatAudioInput
	FeatFileInput
	FeatTools
	FeatToolStrict
	FeatToolChoice
	FeatParallelOff
	FeatToolHistory
	FeatToolResultError
	FeatToolResultImage
	FeatThinkingHistory
	FeatReasoning
	FeatMaxTokens
	FeatTemperature
	FeatTopP
	FeatTopK
	FeatStop
	FeatN
	FeatLogprobs
	FeatLogitBias
	FeatSeed
	FeatPenalties
	FeatJSONObject
	FeatJSONSchema
	FeatVerbosity
	FeatMetadata
	FeatUser
	FeatServiceTier
	FeatStore
	FeatPromptCacheKey
	FeatCacheControl
	FeatPrefill
	FeatStreaming
	FeatState
	featCount
)

// featureInfo describes a feature: its title in the matrix and the field
// that carries it in each caller shape ("" when the shape cannot say it).
type featureInfo struct {
	key      string
	title    string
	chat     string
	messages string
}

var features = [featCount]featureInfo{
	FeatSystem:          {"system", "System prompt", "messages[].role=system|developer (leading)", "system"},
	FeatSystemMid:       {"system_mid", "System message after the conversation began", "messages[].role=system|developer", "messages[].role=system"},
	FeatSameRoleTurns:   {"same_role_turns", "Consecutive turns of one role", "messages", "messages"},
	FeatMessageName:     {"message_name", "Participant name", "messages[].name", ""},
	FeatImageBase64:     {"image_base64", "Image, base64", "messages[].content[].image_url (data: URI)", "messages[].content[].source.type=base64"},
	FeatImageURL:        {"image_url", "Image, URL", "messages[].content[].image_url.url", "messages[].content[].source.type=url"},
	FeatImageDetail:     {"image_detail", "Image detail level", "messages[].content[].image_url.detail", ""},
	FeatAudioInput:      {"audio_input", "Audio input", "messages[].content[].input_audio", ""},
	FeatFileInput:       {"file_input", "File / document input", "messages[].content[].file", "messages[].content[].type=document"},
	FeatTools:           {"tools", "Function tools", "tools", "tools"},
	FeatToolStrict:      {"tool_strict", "Strict tool schemas", "tools[].function.strict", "tools[].strict"},
	FeatToolChoice:      {"tool_choice", "Tool choice (auto, none, required, named)", "tool_choice", "tool_choice"},
	FeatParallelOff:     {"parallel_tool_calls_off", "Parallel tool calls off", "parallel_tool_calls", "tool_choice.disable_parallel_tool_use"},
	FeatToolHistory:     {"tool_history", "Tool calls and results in history", "messages[].tool_calls, role=tool", "tool_use, tool_result"},
	FeatToolResultError: {"tool_result_error", "Tool result marked as error", "", "tool_result.is_error"},
	FeatToolResultImage: {"tool_result_image", "Image inside a tool result", "", "tool_result.content[].type=image"},
	FeatThinkingHistory: {"thinking_history", "Signed thinking replayed in history", "messages[].thinking_blocks (Relay extension)", "messages[].content[].type=thinking|redacted_thinking"},
	FeatReasoning:       {"reasoning", "Reasoning / thinking configuration", "reasoning_effort", "thinking"},
	FeatMaxTokens:       {"max_tokens", "Output limit", "max_completion_tokens, max_tokens", "max_tokens"},
	FeatTemperature:     {"temperature", "Temperature", "temperature", "temperature"},
	FeatTopP:            {"top_p", "Top-p", "top_p", "top_p"},
	FeatTopK:            {"top_k", "Top-k", "top_k (OpenAI-compatible servers' extension)", "top_k"},
	FeatStop:            {"stop", "Stop sequences", "stop", "stop_sequences"},
	FeatN:               {"n", "Several choices (n > 1)", "n", ""},
	FeatLogprobs:        {"logprobs", "Log probabilities", "logprobs, top_logprobs", ""},
	FeatLogitBias:       {"logit_bias", "Logit bias", "logit_bias", ""},
	FeatSeed:            {"seed", "Seed", "seed", ""},
	FeatPenalties:       {"penalties", "Presence / frequency penalty", "presence_penalty, frequency_penalty", ""},
	FeatJSONObject:      {"json_object", "JSON mode (any object)", "response_format.type=json_object", ""},
	FeatJSONSchema:      {"json_schema", "Structured output (JSON schema)", "response_format.type=json_schema", "output_config.format"},
	FeatVerbosity:       {"verbosity", "Verbosity", "verbosity", ""},
	FeatMetadata:        {"metadata", "Metadata key/values", "metadata", ""},
	FeatUser:            {"user", "End-user id", "safety_identifier, user", "metadata.user_id"},
	FeatServiceTier:     {"service_tier", "Service tier", "service_tier", "service_tier"},
	FeatStore:           {"store", "Stored completion", "store", ""},
	FeatPromptCacheKey:  {"prompt_cache_key", "Prompt cache key", "prompt_cache_key", ""},
	FeatCacheControl:    {"cache_control", "Prompt-cache breakpoints", "cache_control (on messages[], messages[].content[], messages[].tool_calls[], tools[]; a message's goes on its last part)", "cache_control"},
	FeatPrefill:         {"prefill", "Final assistant message (prefill)", "messages[-1].role=assistant", "messages[-1].role=assistant"},
	FeatStreaming:       {"streaming", "Streaming with usage", "stream, stream_options.include_usage", "stream"},
	FeatState:           {"state", "Server-side conversation state", "", ""},
}

// responsesFields is the field that carries each feature in a Responses
// caller's body ("" when Responses cannot express it).
var responsesFields = [featCount]string{
	FeatSystem:          "instructions, input[].role=system|developer (leading)",
	FeatSystemMid:       "input[].role=system|developer",
	FeatSameRoleTurns:   "input",
	FeatImageBase64:     "input[].content[].image_url (data: URI)",
	FeatImageURL:        "input[].content[].image_url",
	FeatImageDetail:     "input[].content[].detail",
	FeatFileInput:       "input[].content[].type=input_file",
	FeatTools:           "tools",
	FeatToolStrict:      "tools[].strict",
	FeatToolChoice:      "tool_choice",
	FeatParallelOff:     "parallel_tool_calls",
	FeatToolHistory:     "input[].type=function_call|function_call_output",
	FeatToolResultImage: "input[].output[].type=input_image",
	FeatThinkingHistory: "input[].type=reasoning",
	FeatReasoning:       "reasoning",
	FeatMaxTokens:       "max_output_tokens",
	FeatTemperature:     "temperature",
	FeatTopP:            "top_p",
	FeatJSONObject:      "text.format.type=json_object",
	FeatJSONSchema:      "text.format.type=json_schema",
	FeatVerbosity:       "text.verbosity",
	FeatMetadata:        "metadata",
	FeatUser:            "safety_identifier, user",
	FeatServiceTier:     "service_tier",
	FeatStore:           "store",
	FeatPromptCacheKey:  "prompt_cache_key",
	FeatPrefill:         "input[-1].role=assistant",
	FeatStreaming:       "stream",
	FeatState:           "conversation",
}

// Field is the field that carries f in shape in, "" when that shape
// cannot express f.
func (f Feature) Field(in wire.Inbound) string {
	switch in {
	case wire.InboundChat:
		return features[f].chat
	case wire.InboundMessages:
		return features[f].messages
	case wire.InboundResponses:
		return responsesFields[f]
	case wire.InboundGenerate:
		return generateFields[f]
	case wire.InboundGemini:
		return geminiFields[f]
	}
	return ""
}

func (f Feature) String() string { return features[f].key }

// supportNote is one cell's level and the rule behind it.
type supportNote struct {
	level Support
	note  string
}

// supportTable is one upstream shape's (or one pair's) departures from
// Yes; an absent feature is Yes with no note.
type supportTable map[Feature]supportNote

// pairSpec is one (inbound, upstream) pair.
type pairSpec struct {
	name        string
	in          wire.Inbound
	up          wire.Shape
	newUpstream func(now time.Time) upstream
	newCaller   func(r *canonical.Request) caller
	// base is the upstream shape's table; override the pair's own
	// departures from it.
	base, override supportTable
}

func (p *pairSpec) support(f Feature) supportNote {
	if f.Field(p.in) == "" {
		return supportNote{level: NotApplicable}
	}
	if s, ok := p.override[f]; ok {
		return s
	}
	if s, ok := p.base[f]; ok {
		return s
	}
	return supportNote{level: Yes}
}

// pairs lists every pair, in the matrix's column order.
var pairs = []*pairSpec{&chatAnthropic, &chatGemini, &chatResponses, &messagesOpenAI, &messagesGemini, &messagesResponses,
	&responsesOpenAI, &responsesAnthropic, &responsesGemini,
	&generateOpenAI, &generateResponses, &generateAnthropic, &generateGemini,
	&geminiOpenAI, &geminiResponses, &geminiAnthropic,
	&chatConverse, &messagesConverse, &responsesConverse, &generateConverse, &geminiConverse}

// pairOf is the one switch that picks a pair; nil when there is none.
func pairOf(in wire.Inbound, up wire.Shape) *pairSpec {
	switch in {
	case wire.InboundChat:
		switch up {
		case wire.ShapeBedrockConverse:
			return &chatConverse
		case wire.ShapeAnthropic:
			return &chatAnthropic
		case wire.ShapeGemini:
			return &chatGemini
		case wire.ShapeOpenAIResponses:
			return &chatResponses
		}
	case wire.InboundMessages:
		switch up {
		case wire.ShapeBedrockConverse:
			return &messagesConverse
		case wire.ShapeOpenAI:
			return &messagesOpenAI
		case wire.ShapeGemini:
			return &messagesGemini
		case wire.ShapeOpenAIResponses:
			return &messagesResponses
		}
	case wire.InboundResponses:
		switch up {
		case wire.ShapeBedrockConverse:
			return &responsesConverse
		case wire.ShapeOpenAI:
			return &responsesOpenAI
		case wire.ShapeAnthropic:
			return &responsesAnthropic
		case wire.ShapeGemini:
			return &responsesGemini
		}
	case wire.InboundEmbeddings:
		switch up {
		case wire.ShapeGemini:
			return &embeddingsGemini
		case wire.ShapeBedrockConverse:
			return &embeddingsConverse
		}
	case wire.InboundGenerate:
		switch up {
		case wire.ShapeBedrockConverse:
			return &generateConverse
		case wire.ShapeOpenAI:
			return &generateOpenAI
		case wire.ShapeOpenAIResponses:
			return &generateResponses
		case wire.ShapeAnthropic:
			return &generateAnthropic
		case wire.ShapeGemini:
			return &generateGemini
		}
	case wire.InboundGemini:
		switch up {
		case wire.ShapeBedrockConverse:
			return &geminiConverse
		case wire.ShapeOpenAI:
			return &geminiOpenAI
		case wire.ShapeOpenAIResponses:
			return &geminiResponses
		case wire.ShapeAnthropic:
			return &geminiAnthropic
		}
	case wire.InboundGeminiEmbed:
		if up == wire.ShapeOpenAI {
			return &geminiEmbedOpenAI
		}
	case wire.InboundGeminiBatchEmbed:
		if up == wire.ShapeOpenAI {
			return &geminiBatchEmbedOpenAI
		}
	}
	return nil
}

// encoder is the context an upstream encoder works in: the request, the
// caller's shape (for field names), the binding, and the pair's support.
type encoder struct {
	r    *canonical.Request
	e    *canonical.EmbedRequest
	in   wire.Inbound
	t    *Target
	pair *pairSpec
	// dropped names the advisory fields the upstream request leaves out.
	dropped []string
}

// check rejects f when the pair's matrix says so, and notes it dropped
// when the matrix drops it.
func (x *encoder) check(f Feature) error {
	switch s := x.pair.support(f); s.level {
	case Rejected:
		return x.reject(f, s.note)
	case Dropped:
		x.drop(f)
	}
	return nil
}

// drop notes that the advisory feature f is not sent.
func (x *encoder) drop(f Feature) {
	path := fieldName(f.Field(x.in))
	for _, d := range x.dropped {
		if d == path {
			return
		}
	}
	x.dropped = append(x.dropped, path)
}

// reject is the 400 for a feature the binding cannot express.
func (x *encoder) reject(f Feature, why string) error {
	return rejectField(x.in, f.Field(x.in), x.t, why)
}

func rejectField(in wire.Inbound, field string, t *Target, why string) error {
	field = fieldName(field)
	msg := fmt.Sprintf("The field %q cannot be translated for the model %q on host %q, whose binding speaks %s", field, t.Model, t.Host, t.Shape)
	if why != "" {
		msg += ": " + why
	}
	return &wire.Error{Kind: wire.ErrUnsupportedFeature, Msg: msg + ".", Param: field}
}

// refuseDropped is a strict caller's 400 for the advisory field named
// name, which this binding would drop: it names the place the caller
// sent it (messages[2].cache_control) where the decoder noted one.
func (x *encoder) refuseDropped(name string) error {
	at := name
	if s, ok := x.r.SentAt[name]; ok {
		at = s
	}
	msg := fmt.Sprintf("The field %q cannot be carried to the model %q on host %q, whose binding speaks %s; %s: true refuses what it would drop (without it, the field is dropped and named in X-Relay-Dropped-Fields).", at, x.t.Model, x.t.Host, x.t.Shape, StrictHeader)
	return &wire.Error{Kind: wire.ErrUnsupportedFeature, Msg: msg, Param: at}
}

// Cell is one entry of the support matrix.
type Cell struct {
	Feature Feature
	Pair    string // e.g. "chat→anthropic"
	Support Support
	Note    string
}

// Matrix is the support matrix, feature by feature, pair by pair, as the
// code applies it.
func Matrix() []Cell {
	cells := make([]Cell, 0, int(featCount)*len(pairs))
	for f := Feature(0); f < featCount; f++ {
		for _, p := range pairs {
			s := p.support(f)
			cells = append(cells, Cell{Feature: f, Pair: p.name, Support: s.level, Note: s.note})
		}
	}
	return cells
}

// MatrixMarkdown renders the matrix as the table docs/translation.md
// holds, with the notes under it.
func MatrixMarkdown() string {
	var b strings.Builder
	b.WriteString("| feature | class | chat field | messages field | responses field |")
	for _, p := range pairs {
		b.WriteString(" " + p.name + " |")
	}
	b.WriteString("\n| --- | --- | --- | --- | --- |")
	for range pairs {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	var notes []string
	for f := Feature(0); f < featCount; f++ {
		fi := &features[f]
		field := func(s string) string {
			if s == "" {
				return "—"
			}
			return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
		}
		b.WriteString("| " + fi.title + " | " + f.Class().String() + " | " + field(fi.chat) + " | " + field(fi.messages) + " | " + field(responsesFields[f]) + " |")
		// Notes shared by several pairs are written once.
		var order []string
		byNote := map[string][]string{}
		for _, p := range pairs {
			s := p.support(f)
			cell := s.level.String()
			if s.note != "" {
				if _, ok := byNote[s.note]; !ok {
					order = append(order, s.note)
				}
				byNote[s.note] = append(byNote[s.note], p.name)
				cell += " ¹"
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
		for _, n := range order {
			notes = append(notes, "- **"+fi.title+"** ("+strings.Join(byNote[n], ", ")+"): "+n+".")
		}
	}
	b.WriteString("\n¹ Notes:\n\n")
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	fieldsMarkdown(&b)
	return b.String()
}
