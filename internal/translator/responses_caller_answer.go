package translator

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Responses, caller side: encode a response object (the stream's
// events are responses_caller_stream.go).

// responsesCaller writes answers for a Responses caller.
type responsesCaller struct {
	req *canonical.Request

	shell []byte // the request echo every response object carries

	// Stream state.
	started bool
	failed  bool
	seq     int64
	id      string // resp_…
	core    string // what item ids are built on
	model   string
	created int64
	items   []respOut  // by canonical part index
	next    int        // next output index
	output  []byte     // finished items' JSON, for the terminal response
	spans   []respSpan // where each finished item sits in output
	usage   canonical.Usage
	finish  canonical.FinishReason
	// held is 1 + the index in items of a message whose part ended but
	// whose .done events wait for the next event: when that is the finish,
	// the message takes the response's status (incomplete when the output
	// was cut off), as OpenAI reports it. 0 when none is held.
	held int
}

// respSpan is one finished item in responsesCaller.output.
type respSpan struct{ out, start, end int }

// respOut is one output item being streamed.
type respOut struct {
	kind     canonical.PartType
	origin   canonical.Origin
	out      int // output index; -1 when the part shows no item
	id       string
	callID   string
	name     string
	ns       string // the namespace of the called tool (canonical.Tool.Namespace)
	text     []byte // text, refusal, arguments or summary so far: the .done events repeat it
	sig      []byte
	summary  bool // a reasoning summary part was added
	done     bool
	hasDelta bool
	// incomplete marks a message cut off by the output limit or a filter.
	incomplete bool
}

func newResponsesCaller(r *canonical.Request) caller { return &responsesCaller{req: r} }

// responseIDs sets the response id and the base of item ids from the
// upstream's response id.
func (c *responsesCaller) responseIDs(id string) {
	if st := c.req.State; st != nil && st.ID != "" {
		id = st.ID // Relay keeps the response under an id it minted
	}
	core := id
	for _, p := range []string{"resp_", "msg_", "chatcmpl-"} {
		if rest, ok := strings.CutPrefix(core, p); ok && rest != "" {
			core = rest
			break
		}
	}
	if core == "" {
		core = "relay"
	}
	c.core, c.id = core, "resp_"+core
}

func (c *responsesCaller) itemID(prefix string, out int) string {
	return prefix + c.core + "_" + strconv.Itoa(out)
}

// appendShell appends the request echo: the fields of a response object
// that restate what was asked, with OpenAI's defaults for what was not.
func (c *responsesCaller) appendShell(dst []byte) []byte {
	if c.shell == nil {
		c.shell = buildShell(c.req)
	}
	return append(dst, c.shell...)
}

func buildShell(r *canonical.Request) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `"instructions":`...)
	if len(r.System) > 0 {
		b = wire.AppendString(b, canonical.TextOf(r.System, "\n"))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"max_output_tokens":`...)
	if r.MaxOutputTokens != nil {
		b = appendInt(b, *r.MaxOutputTokens)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"metadata":`...)
	if len(r.Metadata) > 0 {
		m, _ := json.Marshal(r.Metadata)
		b = append(b, m...)
	} else {
		b = append(b, "{}"...)
	}
	b = append(b, `,"parallel_tool_calls":`...)
	b = strconv.AppendBool(b, r.ParallelToolCalls == nil || *r.ParallelToolCalls)
	b = append(b, `,"previous_response_id":`...)
	if st := r.State; st != nil && st.PreviousResponseID != "" {
		b = wire.AppendString(b, st.PreviousResponseID)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"reasoning":{"effort":`...)
	if rs := r.Reasoning; rs != nil && rs.Effort != "" {
		b = wire.AppendString(b, rs.Effort)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"summary":`...)
	if rs := r.Reasoning; rs != nil && rs.Summary != "" {
		b = wire.AppendString(b, rs.Summary)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `},"service_tier":`...)
	switch r.ServiceTier {
	case "", "standard_only":
		b = append(b, `"default"`...)
	default:
		b = wire.AppendString(b, r.ServiceTier)
	}
	b = append(b, `,"store":`...)
	b = strconv.AppendBool(b, r.State != nil && r.State.ID != "")
	b = append(b, `,"temperature":`...)
	b = strconv.AppendFloat(b, valueOr(r.Temperature, 1), 'g', -1, 64)
	b = append(b, `,"text":`...)
	b = appendShellText(b, r)
	b = append(b, `,"tool_choice":`...)
	b = appendShellToolChoice(b, r.ToolChoice)
	b = append(b, `,"tools":`...)
	b = appendShellTools(b, r.Tools)
	b = append(b, `,"top_p":`...)
	b = strconv.AppendFloat(b, valueOr(r.TopP, 1), 'g', -1, 64)
	b = append(b, `,"truncation":"disabled"`...)
	if r.User != "" {
		b = append(b, `,"safety_identifier":`...)
		b = wire.AppendString(b, r.User)
	}
	if r.PromptCacheKey != "" {
		b = append(b, `,"prompt_cache_key":`...)
		b = wire.AppendString(b, r.PromptCacheKey)
	}
	return b
}

// appendShellText appends the text object: the format asked for (text
// by default) and the verbosity.
func appendShellText(b []byte, r *canonical.Request) []byte {
	b = append(b, `{"format":`...)
	switch f := r.ResponseFormat; {
	case f == nil:
		b = append(b, `{"type":"text"}`...)
	case f.Type == canonical.FormatJSONObject:
		b = append(b, `{"type":"json_object"}`...)
	default:
		name := f.Name
		if name == "" {
			name = "response"
		}
		fm, _ := json.Marshal(respFormat{Type: "json_schema", Name: name, Description: f.Description, Schema: f.Schema, Strict: f.Strict})
		b = append(b, fm...)
	}
	if r.Verbosity != "" {
		b = append(b, `,"verbosity":`...)
		b = wire.AppendString(b, r.Verbosity)
	}
	return append(b, '}')
}

// appendShellToolChoice appends tool_choice, auto by default.
func appendShellToolChoice(b []byte, tc canonical.ToolChoice) []byte {
	switch tc.Mode {
	case canonical.ToolChoiceNone:
		return append(b, `"none"`...)
	case canonical.ToolChoiceRequired:
		return append(b, `"required"`...)
	case canonical.ToolChoiceTool:
		b = append(b, `{"type":"function","name":`...)
		b = wire.AppendString(b, tc.Name)
		return append(b, '}')
	}
	return append(b, `"auto"`...)
}

// appendShellTools appends the tools as function tools, parameters
// compacted.
func appendShellTools(b []byte, tools []canonical.Tool) []byte {
	b = append(b, '[')
	for i, t := range tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"function","name":`...)
		b = wire.AppendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = wire.AppendString(b, t.Description)
		}
		b = append(b, `,"parameters":`...)
		if isNull(t.Parameters) {
			b = append(b, "null"...)
		} else {
			var cb bytes.Buffer
			if json.Compact(&cb, t.Parameters) == nil {
				b = append(b, cb.Bytes()...)
			} else {
				b = append(b, "null"...)
			}
		}
		b = append(b, `,"strict":`...)
		if t.Strict != nil {
			b = strconv.AppendBool(b, *t.Strict)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func valueOr(v *float64, def float64) float64 {
	if v == nil {
		return def
	}
	return *v
}

func appendRespUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = appendInt(dst, u.Input)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = appendInt(dst, u.CacheRead)
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = appendInt(dst, u.CacheWrite)
	dst = append(dst, `},"output_tokens":`...)
	dst = appendInt(dst, u.Output)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = appendInt(dst, u.Reasoning)
	dst = append(dst, `},"total_tokens":`...)
	dst = appendInt(dst, u.Total())
	return append(dst, '}')
}

// respStatus is a finished response's status and incomplete reason.
func respStatus(f canonical.FinishReason) (status, reason string) {
	switch f {
	case canonical.FinishLength, canonical.FinishContextWindow:
		return "incomplete", "max_output_tokens"
	case canonical.FinishContentFilter:
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// respErrorCode is the Responses error code (an enum) for an error.
func respErrorCode(e *canonical.Error) string {
	switch e.Kind {
	case canonical.ErrRateLimit:
		return "rate_limit_exceeded"
	case canonical.ErrInvalidRequest:
		return "invalid_prompt"
	}
	return "server_error"
}

// appendResponse appends a response object. usage nil leaves it out; e non-nil
// is a failed response's error.
func (c *responsesCaller) appendResponse(dst []byte, status, reason string, output []byte, usage *canonical.Usage, e *canonical.Error) []byte {
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, c.id)
	dst = append(dst, `,"object":"response","created_at":`...)
	dst = appendInt(dst, c.created)
	dst = append(dst, `,"status":`...)
	dst = wire.AppendString(dst, status)
	dst = append(dst, `,"background":false,"error":`...)
	if e != nil {
		dst = append(dst, `{"code":`...)
		dst = wire.AppendString(dst, respErrorCode(e))
		dst = append(dst, `,"message":`...)
		dst = wire.AppendString(dst, e.Message)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if reason != "" {
		dst = append(dst, `{"reason":`...)
		dst = wire.AppendString(dst, reason)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"model":`...)
	dst = wire.AppendString(dst, c.model)
	dst = append(dst, `,"output":[`...)
	dst = append(dst, output...)
	dst = append(dst, "],"...)
	dst = c.appendShell(dst)
	if usage != nil { // the spec's usage is not nullable: absent until known
		dst = append(dst, `,"usage":`...)
		dst = appendRespUsage(dst, *usage)
	}
	return append(dst, '}')
}

// namespace is the namespace the caller offered the tool named name in
// ("" at the top level or when it offered no such tool).
func (c *responsesCaller) namespace(name string) string {
	for i := range c.req.Tools {
		if t := &c.req.Tools[i]; t.Name == name {
			return t.Namespace
		}
	}
	return ""
}

// appendItem appends the output item for a finished part (or, with
// added, the item as output_item.added shows it: in progress and empty).
func appendItem(dst []byte, it *respOut, added bool) []byte {
	status := "completed"
	if added {
		status = "in_progress"
	}
	switch it.kind {
	case canonical.PartToolCall:
		dst = append(dst, `{"id":`...)
		dst = wire.AppendString(dst, it.id)
		dst = append(dst, `,"type":"function_call","status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","arguments":`...)
		if added {
			dst = append(dst, `""`...)
		} else {
			dst = wire.AppendString(dst, orEmptyObject(string(it.text)))
		}
		dst = append(dst, `,"call_id":`...)
		dst = wire.AppendString(dst, it.callID)
		if it.ns != "" {
			dst = append(dst, `,"namespace":`...)
			dst = wire.AppendString(dst, it.ns)
		}
		dst = append(dst, `,"name":`...)
		dst = wire.AppendString(dst, it.name)
		return append(dst, '}')
	case canonical.PartThinking, canonical.PartRedactedThinking:
		dst = append(dst, `{"id":`...)
		dst = wire.AppendString(dst, it.id)
		dst = append(dst, `,"type":"reasoning","summary":[`...)
		if !added && it.kind == canonical.PartThinking && (len(it.text) > 0 || it.summary) {
			dst = append(dst, `{"type":"summary_text","text":`...)
			dst = wire.AppendString(dst, string(it.text))
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
		if enc := it.encrypted(); enc != "" {
			dst = append(dst, `,"encrypted_content":`...)
			dst = wire.AppendString(dst, enc)
		}
		return append(dst, '}')
	}
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, it.id)
	if !added && it.incomplete {
		status = "incomplete"
	}
	dst = append(dst, `,"type":"message","status":"`...)
	dst = append(dst, status...)
	dst = append(dst, `","content":[`...)
	if !added {
		dst = appendContentPart(dst, it.kind, string(it.text))
	}
	return append(dst, `],"role":"assistant"}`...)
}

func appendContentPart(dst []byte, kind canonical.PartType, text string) []byte {
	if kind == canonical.PartRefusal {
		dst = append(dst, `{"type":"refusal","refusal":`...)
		dst = wire.AppendString(dst, text)
		return append(dst, '}')
	}
	dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	dst = wire.AppendString(dst, text)
	return append(dst, '}')
}

// encrypted is the reasoning item's encrypted_content: Anthropic's
// signature or redacted data, marked so it finds its way back.
func (it *respOut) encrypted() string {
	if it.origin != canonical.OriginAnthropic || len(it.sig) == 0 {
		return ""
	}
	if it.kind == canonical.PartRedactedThinking {
		return respAnthropicRedacted + string(it.sig)
	}
	return respAnthropicThinking + string(it.sig)
}

func respItemPrefix(kind canonical.PartType) string {
	switch kind {
	case canonical.PartToolCall:
		return "fc_"
	case canonical.PartThinking, canonical.PartRedactedThinking:
		return "rs_"
	}
	return "msg_"
}

// shows reports whether a part becomes an output item: reasoning always
// does (its summary), redacted thinking only when it can go back.
func respShows(kind canonical.PartType, origin canonical.Origin) bool {
	return kind != canonical.PartRedactedThinking || origin == canonical.OriginAnthropic
}

func (c *responsesCaller) response(dst []byte, r *canonical.Response) []byte {
	c.responseIDs(r.ID)
	c.created, c.model = r.Created, r.Model
	if c.model == "" {
		c.model = c.req.Model
	}
	status, reason := respStatus(r.Finish)
	last := -1 // the message a cut-off response ends in
	for i := range r.Parts {
		if t := r.Parts[i].Type; t == canonical.PartText || t == canonical.PartRefusal {
			last = i
		}
	}
	var output []byte
	n := 0
	for i := range r.Parts {
		p := &r.Parts[i]
		if !respShows(p.Type, p.Origin) {
			continue
		}
		it := respOut{kind: p.Type, origin: p.Origin, out: n, incomplete: i == last && status == "incomplete"}
		it.id = c.itemID(respItemPrefix(p.Type), n)
		switch p.Type {
		case canonical.PartToolCall:
			if p.ToolCall == nil {
				continue
			}
			it.callID, it.name, it.text = callerID(chatCallPrefix, p.ToolCall.ID), p.ToolCall.Name, []byte(p.ToolCall.Arguments)
			it.ns = c.namespace(it.name)
		case canonical.PartText, canonical.PartRefusal, canonical.PartThinking:
			it.text, it.sig = []byte(p.Text), []byte(p.Signature)
		case canonical.PartRedactedThinking:
			it.sig = []byte(p.Signature)
		default:
			continue
		}
		if n > 0 {
			output = append(output, ',')
		}
		output = appendItem(output, &it, false)
		n++
	}
	u := r.Usage
	dst = c.appendResponse(dst, status, reason, output, &u, nil)
	return append(dst, '\n')
}
