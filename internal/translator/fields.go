package translator

import (
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// The field policy: what each request field of a caller shape is to
// translation. A carried field is translated for every binding; an
// advisory one (metadata, client hints, cache hints, betas) is translated
// where the target can carry it and otherwise dropped and named in the
// response header X-Relay-Dropped-Fields; a semantic one changes the
// answer, and a binding that cannot express it is a 400 unsupported_feature
// naming the field. Fields of the support matrix take their class from
// featureClasses; fields only the caller's own shape knows are listed per
// shape in advisoryFields (the decoders accept exactly those and note them
// in canonical.Request.Advisory), and a field in neither is refused.

// Class is what a request field is to translation.
type Class uint8

// Classes.
const (
	Carried  Class = iota // translated for every binding
	Advisory              // dropped, and named, where the target cannot carry it
	Semantic              // changes the answer: refused where the target cannot express it
)

func (c Class) String() string {
	switch c {
	case Carried:
		return "carried"
	case Advisory:
		return "advisory"
	}
	return "semantic"
}

// featureClasses classifies the support matrix's features. An advisory
// feature is never Rejected by a pair; only an advisory one is Dropped;
// a carried one is never Rejected (TestFieldPolicy_ConsistentWithMatrix).
var featureClasses = [featCount]Class{
	FeatSystem:          Carried,
	FeatSystemMid:       Carried,
	FeatSameRoleTurns:   Carried,
	FeatMessageName:     Semantic,
	FeatImageBase64:     Semantic,
	FeatImageURL:        Semantic,
	FeatImageDetail:     Semantic,
	FeatAudioInput:      Semantic,
	FeatFileInput:       Semantic,
	FeatTools:           Carried,
	FeatToolStrict:      Semantic,
	FeatToolChoice:      Carried,
	FeatParallelOff:     Advisory,
	FeatToolHistory:     Carried,
	FeatToolResultError: Carried,
	FeatToolResultImage: Semantic,
	FeatThinkingHistory: Carried,
	FeatReasoning:       Semantic,
	FeatMaxTokens:       Carried,
	FeatTemperature:     Semantic,
	FeatTopP:            Semantic,
	FeatTopK:            Advisory,
	FeatStop:            Semantic,
	FeatN:               Semantic,
	FeatLogprobs:        Semantic,
	FeatLogitBias:       Semantic,
	FeatSeed:            Semantic,
	FeatPenalties:       Semantic,
	FeatJSONObject:      Semantic,
	FeatJSONSchema:      Semantic,
	FeatVerbosity:       Semantic,
	FeatMetadata:        Advisory,
	FeatUser:            Advisory,
	FeatServiceTier:     Advisory,
	FeatStore:           Semantic,
	FeatPromptCacheKey:  Advisory,
	FeatCacheControl:    Advisory,
	FeatPrefill:         Semantic,
	FeatStreaming:       Carried,
	FeatState:           Semantic,
}

// Class is f's class.
func (f Feature) Class() Class { return featureClasses[f] }

// advisoryField is a field only the caller's own shape knows, which no
// translation carries: a translated request drops it and names it.
type advisoryField struct {
	path string // JSON path in the caller's body; [] stands for every element
	what string
}

// advisoryFields is each caller shape's list. A decoder notes a field here
// (advise) only when it holds something: an empty annotations list or a
// null is not a loss.
var advisoryFields = map[wire.Inbound][]advisoryField{
	wire.InboundChat: {
		{"messages[].annotations", "the citations of an earlier answer, as the SDK pushes the message back"},
		{"messages[].parsed", "the openai SDKs' decoded copy of an earlier structured answer"},
		{"messages[].tool_calls[].function.parsed_arguments", "the openai SDKs' decoded copy of an earlier call's arguments"},
		{"prompt_cache_retention", "how long OpenAI keeps a cached prefix"},
	},
	wire.InboundMessages: {
		{"context_management", "Anthropic's server-side context editing (a beta Claude Code sends)"},
		{"messages[].content[].citations", "the citations of an earlier answer"},
		{"tools[].defer_loading", "a tool-search hint (a beta Claude Code sends); the tool is offered up front"},
		{"tools[].eager_input_streaming", "a delivery hint (the AI SDK sets it on every tool when it streams): the input streams as the upstream streams it"},
	},
	wire.InboundResponses: {
		{"client_metadata", "client hints (Codex sends its installation and session ids)"},
		{"prompt_cache_retention", "how long OpenAI keeps a cached prefix"},
		{"include", "extra output Relay cannot add to a translated response (reasoning.encrypted_content is carried)"},
		{"input[].content[].annotations", "the citations of an earlier answer"},
		{"input[].content[].logprobs", "the log probabilities of an earlier answer"},
		{"input[].content[].parsed", "the openai SDKs' decoded copy of an earlier structured answer"},
		{"input[].parsed_arguments", "the openai SDKs' decoded copy of an earlier call's arguments"},
		{"tools[].type=web_search", "OpenAI's hosted search, which Codex offers by default; the model answers without it (a tool_choice forcing it is refused)"},
	},
	wire.InboundGenerate: {},
}

// advise notes that the caller sent path, an advisory field no other
// shape carries, at at (path with its indices: tools[0].defer_loading).
func advise(r *canonical.Request, path, at string) {
	r.NoteSentAt(path, at)
	for _, p := range r.Advisory {
		if p == path {
			return
		}
	}
	r.Advisory = append(r.Advisory, path)
}

// cacheControlName is the name cache breakpoints are dropped under, at
// every level (system, message, part, tool) and in every caller shape
// that has them.
const cacheControlName = "cache_control"

// nonNull is raw, or nil when raw is absent or JSON null.
func nonNull(raw []byte) []byte {
	if isNull(raw) {
		return nil
	}
	return raw
}

// set reports whether a boolean hint holds something worth naming when
// dropped: present and not false.
func set(raw []byte) bool {
	return present(raw) && strings.TrimSpace(string(raw)) != "false"
}

// present reports whether raw holds something worth naming when dropped:
// not absent, null, [], {} or "".
func present(raw []byte) bool {
	switch strings.TrimSpace(string(raw)) {
	case "", "null", "[]", "{}", `""`:
		return false
	}
	return true
}

// fieldName is the first field a matrix feature's field list names.
func fieldName(field string) string {
	if i := strings.IndexByte(field, ','); i > 0 {
		field = field[:i]
	}
	if i := strings.IndexByte(field, ' '); i > 0 {
		field = field[:i]
	}
	return field
}

// fieldsMarkdown renders the field policy's part outside the matrix: each
// shape's advisory fields.
func fieldsMarkdown(b *strings.Builder) {
	b.WriteString("\nAdvisory fields outside the matrix (accepted, dropped on every translated binding, named in `X-Relay-Dropped-Fields`):\n\n")
	b.WriteString("| caller shape | field | what it is |\n| --- | --- | --- |\n")
	for _, sh := range []struct {
		in   wire.Inbound
		name string
	}{{wire.InboundChat, "chat"}, {wire.InboundMessages, "messages"}, {wire.InboundResponses, "responses"}} {
		for _, f := range advisoryFields[sh.in] {
			b.WriteString("| " + sh.name + " | `" + f.path + "` | " + f.what + " |\n")
		}
	}
}
