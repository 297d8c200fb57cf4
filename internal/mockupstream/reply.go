package mockupstream

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

type toolMode uint8

const (
	toolAuto   toolMode = iota
	toolNone            // never call a tool
	toolAny             // must call some tool
	toolForced          // must call convo.forced
)

// turn says what the conversation ends with.
type turn uint8

const (
	turnUser       turn = iota // a user message: answer it (or call a tool)
	turnToolResult             // a tool result: comment on it
	turnAssistant              // an assistant prefill: continue it
)

type toolDef struct {
	name   string
	schema json.RawMessage
	// namespace is the Responses namespace tool that holds this one ("" at
	// the top level); a call of it names the namespace, as OpenAI's does.
	namespace string
}

// convo is what the reply depends on, gathered from whichever shape the
// request came in.
type convo struct {
	model      string
	textBytes  int // prompt text: system, messages, tool definitions
	mediaParts int // images, audio, files
	messages   int
	userText   string // text of the last user message
	resultText string // text of the last tool result
	last       turn
	tools      []toolDef
	mode       toolMode
	forced     string   // toolForced
	allowed    []string // Gemini allowedFunctionNames; empty = all
	single     bool     // parallel tool calls disabled
	whenAsked  bool     // Options.ToolsWhenAsked
	maxTokens  int
	hasMax     bool
	stops      []string
	// showThinking: the request asked to see reasoning (Anthropic thinking,
	// Gemini includeThoughts).
	showThinking bool
	// cachedBytes of the bodyBytes the request sent were seen before on its
	// credential (Options.PromptCache).
	cachedBytes, bodyBytes int
}

// promptTokens estimates the prompt's token count the way a tokenizer would
// land roughly: four bytes a token, a few tokens of framing per message, a flat
// 85 per image or file.
func (c *convo) promptTokens() int {
	return max(1, (c.textBytes+3)/4+3*c.messages+3+85*c.mediaParts)
}

type finish uint8

const (
	finishStop finish = iota
	finishLength
	finishStopSequence
	finishToolCalls
)

type toolCall struct {
	name      string
	namespace string   // toolDef.namespace
	args      string   // a JSON object
	pieces    []string // args in stream fragments
}

// usage is shape-neutral: input counts the whole prompt, cached parts
// included; output counts visible output (text and tool calls), reasoning is
// apart. Each shape maps it to its own fields and semantics.
type usage struct {
	input      int
	cacheRead  int
	cacheWrite int
	output     int
	reasoning  int
}

// reply is the planned answer.
type reply struct {
	text     string   // visible text; on a tool turn, the preface if any
	pieces   []string // text split into stream deltas
	calls    []toolCall
	finish   finish
	stopSeq  string   // the stop sequence that ended the text
	thinking []string // reasoning text in deltas, when reasoning is on
	usage    usage
}

// argFragment is the size of the pieces tool-call arguments stream in.
const argFragment = 8

// plan decides the reply. preface adds a short text before tool calls, as
// Claude does (and which shifts the tool_use block index off 0).
func (c *convo) plan(preface bool) reply {
	var r reply
	lower := strings.ToLower(c.model)
	if c.showThinking || strings.Contains(lower, "reasoning") || strings.Contains(lower, "thinking") {
		r.thinking = splitWords(`The user said "` + snippet(c.userText) + `". A short greeting that echoes it back will do.`)
		r.usage.reasoning = len(r.thinking)
	}
	if calls := c.toolCalls(lower); len(calls) > 0 {
		r.calls = calls
		r.finish = finishToolCalls
		if preface {
			names := make([]string, len(calls))
			for i, call := range calls {
				names[i] = call.name
			}
			r.text = "I'll call " + strings.Join(names, " and ") + "."
			r.pieces = splitWords(r.text)
		}
		r.usage.output = len(r.pieces)
		for i := range calls {
			calls[i].pieces = fragments(calls[i].args, argFragment)
			r.usage.output += 1 + len(calls[i].pieces)
		}
	} else {
		r.text, r.stopSeq = cutStop(c.replyText(), c.stops)
		if r.stopSeq != "" {
			r.finish = finishStopSequence
		}
		r.pieces = splitWords(r.text)
		if c.hasMax && len(r.pieces) > c.maxTokens {
			r.pieces = r.pieces[:c.maxTokens]
			n := 0
			for _, p := range r.pieces {
				n += len(p)
			}
			r.text = r.text[:n]
			r.finish, r.stopSeq = finishLength, ""
		}
		r.usage.output = len(r.pieces)
	}
	in := c.promptTokens()
	r.usage.input = in
	if strings.Contains(lower, "cached") {
		r.usage.cacheRead = in / 2
	}
	r.usage.cacheRead = max(r.usage.cacheRead, cachedTokens(in, c.cachedBytes, c.bodyBytes))
	if strings.Contains(lower, "cache-write") {
		r.usage.cacheWrite = (in - r.usage.cacheRead) / 2
	}
	return r
}

// replyText is the deterministic answer before stops and limits.
func (c *convo) replyText() string {
	if c.last == turnToolResult {
		return "The tool returned: " + snippet(c.resultText)
	}
	s := snippet(c.userText)
	if s == "" {
		return "Hello from " + c.model + "."
	}
	return "Hello from " + c.model + ". You said: " + s
}

// toolCalls picks the calls to make, if the turn calls for any.
func (c *convo) toolCalls(lower string) []toolCall {
	if len(c.tools) == 0 || c.mode == toolNone || c.last != turnUser || (c.hasMax && c.maxTokens == 0) {
		return nil
	}
	if c.mode == toolForced {
		for _, t := range c.tools {
			if t.name == c.forced {
				return []toolCall{{name: t.name, namespace: t.namespace, args: exampleArgs(t.schema)}}
			}
		}
		return nil
	}
	want := 1
	if strings.Contains(lower, "parallel") && !c.single {
		want = 2
	}
	tools := c.tools
	if c.whenAsked {
		// tool_choice required: some tool it must be, asked or not.
		if tools = c.askedTools(c.mode == toolAny); len(tools) == 0 {
			return nil
		}
	}
	var calls []toolCall
	for _, t := range tools {
		if len(calls) == want {
			break
		}
		if len(c.allowed) > 0 && !contains(c.allowed, t.name) {
			continue
		}
		calls = append(calls, toolCall{name: t.name, namespace: t.namespace, args: exampleArgs(t.schema)})
	}
	return calls
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// snippet is the first 40 characters of s, trimmed.
func snippet(s string) string {
	s = strings.TrimSpace(s)
	n := 0
	for i := range s {
		if n == 40 {
			return strings.TrimSpace(s[:i])
		}
		n++
	}
	return s
}

// cutStop ends text before the earliest stop sequence in it.
func cutStop(text string, stops []string) (string, string) {
	at, seq := -1, ""
	for _, s := range stops {
		if s == "" {
			continue
		}
		if i := strings.Index(text, s); i >= 0 && (at < 0 || i < at) {
			at, seq = i, s
		}
	}
	if at < 0 {
		return text, ""
	}
	return text[:at], seq
}

// splitWords splits s into stream deltas: a word with the spaces before it.
func splitWords(s string) []string {
	if s == "" {
		return nil
	}
	out := make([]string, 0, 1+strings.Count(s, " "))
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' && s[i-1] != ' ' {
			out = append(out, s[start:i])
			start = i
		}
	}
	return append(out, s[start:])
}

// fragments splits s into pieces of at most size bytes without cutting a
// UTF-8 sequence.
func fragments(s string, size int) []string {
	out := make([]string, 0, (len(s)+size-1)/size)
	for len(s) > size {
		cut := size
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = size
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// joinPieces concatenates stream pieces.
func joinPieces(p []string) string { return strings.Join(p, "") }
