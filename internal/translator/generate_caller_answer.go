package translator

import (
	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Relay's /v1/generate, caller side: encode a response, its event stream
// and errors.

// generateCaller encodes answers for /v1/generate callers. Part indices
// are the canonical ones: every output part is shown.
type generateCaller struct {
	req     *canonical.Request
	pricing *snapshot.Pricing // X-Relay-Usage: full; nil otherwise

	// Stream state.
	parts   []canonical.PartType // by index
	tools   bool
	usage   canonical.Usage
	finish  canonical.FinishReason
	stopSeq string
}

func newGenerateCaller(r *canonical.Request) caller { return &generateCaller{req: r} }

// price makes the caller add the cost under p to every usage block.
func (c *generateCaller) price(p *snapshot.Pricing) { c.pricing = p }

func generateID(id string) string {
	if id == "" {
		return "gen_relay"
	}
	return id
}

// generateFinish is the finish_reason a generate caller sees.
func generateFinish(f canonical.FinishReason, tools bool) string {
	switch {
	case f == canonical.FinishNone:
		return string(canonical.FinishOther)
	case f == canonical.FinishStop && tools:
		return string(canonical.FinishToolCalls)
	}
	return string(f)
}

func (c *generateCaller) appendUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = appendInt(dst, u.Input)
	dst = append(dst, `,"output_tokens":`...)
	dst = appendInt(dst, u.Output)
	dst = append(dst, `,"total_tokens":`...)
	dst = appendInt(dst, u.Total())
	dst = append(dst, `,"cache_read_tokens":`...)
	dst = appendInt(dst, u.CacheRead)
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = appendInt(dst, u.CacheWrite)
	dst = append(dst, `,"reasoning_tokens":`...)
	dst = appendInt(dst, u.Reasoning)
	if c.pricing != nil {
		dst = append(dst, `,"cost_nanos":`...)
		dst = appendInt(dst, pricing.Cost(c.pricing, wire.Usage(u)))
	}
	return append(dst, '}')
}

// appendGenPart appends a whole output part.
func appendGenPart(dst []byte, p *canonical.Part) []byte {
	dst = append(dst, `{"type":`...)
	dst = wire.AppendString(dst, string(p.Type))
	switch p.Type {
	case canonical.PartToolCall:
		dst = append(dst, `,"id":`...)
		dst = wire.AppendString(dst, p.ToolCall.ID)
		dst = append(dst, `,"name":`...)
		dst = wire.AppendString(dst, p.ToolCall.Name)
		dst = append(dst, `,"arguments":`...)
		dst = wire.AppendString(dst, p.ToolCall.Arguments)
		if p.ToolCall.Signature != "" {
			dst = append(dst, `,"signature":`...)
			dst = wire.AppendString(dst, p.ToolCall.Signature)
		}
	case canonical.PartRedactedThinking:
		dst = append(dst, `,"data":`...)
		dst = wire.AppendString(dst, p.Signature)
		dst = appendOrigin(dst, p.Origin)
	case canonical.PartThinking:
		dst = append(dst, `,"text":`...)
		dst = wire.AppendString(dst, p.Text)
		if p.Signature != "" {
			dst = append(dst, `,"signature":`...)
			dst = wire.AppendString(dst, p.Signature)
		}
		dst = appendOrigin(dst, p.Origin)
	default:
		dst = append(dst, `,"text":`...)
		dst = wire.AppendString(dst, p.Text)
	}
	return append(dst, '}')
}

func appendOrigin(dst []byte, o canonical.Origin) []byte {
	if o == canonical.OriginNone {
		return dst
	}
	dst = append(dst, `,"origin":`...)
	return wire.AppendString(dst, string(o))
}

// shown reports whether an output part reaches a generate caller: every
// kind Relay maps does.
func genShown(t canonical.PartType) bool {
	switch t {
	case canonical.PartText, canonical.PartRefusal, canonical.PartThinking, canonical.PartRedactedThinking, canonical.PartToolCall:
		return true
	}
	return false
}

func (c *generateCaller) response(dst []byte, r *canonical.Response) []byte {
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, generateID(r.ID))
	dst = append(dst, `,"object":"generation","model":`...)
	dst = wire.AppendString(dst, r.Model)
	dst = append(dst, `,"created":`...)
	dst = appendInt(dst, r.Created)
	dst = append(dst, `,"content":[`...)
	tools, n := false, 0
	for i := range r.Parts {
		p := &r.Parts[i]
		if !genShown(p.Type) || p.Type == canonical.PartToolCall && p.ToolCall == nil {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		tools = tools || p.Type == canonical.PartToolCall
		dst = appendGenPart(dst, p)
	}
	dst = append(dst, `],"finish_reason":`...)
	dst = wire.AppendString(dst, generateFinish(r.Finish, tools))
	if r.StopSequence != "" {
		dst = append(dst, `,"stop_sequence":`...)
		dst = wire.AppendString(dst, r.StopSequence)
	}
	dst = append(dst, `,"usage":`...)
	dst = c.appendUsage(dst, r.Usage)
	return append(dst, "}\n"...)
}

func genEvent(dst []byte, name string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, name...)
	return append(dst, '"')
}

func (c *generateCaller) kind(i int) canonical.PartType {
	if i >= 0 && i < len(c.parts) {
		return c.parts[i]
	}
	return ""
}

func (c *generateCaller) event(dst []byte, ev *canonical.Event) []byte {
	switch ev.Kind {
	case canonical.EventStart:
		c.usage = ev.Usage
		dst = genEvent(dst, "start")
		dst = append(dst, `,"id":`...)
		dst = wire.AppendString(dst, generateID(ev.ID))
		dst = append(dst, `,"object":"generation","model":`...)
		dst = wire.AppendString(dst, ev.Model)
		dst = append(dst, `,"created":`...)
		dst = appendInt(dst, ev.Created)
		return append(dst, "}\n\n"...)
	case canonical.EventPartStart:
		for len(c.parts) <= ev.Index {
			c.parts = append(c.parts, "")
		}
		if !genShown(ev.Part) {
			return dst
		}
		c.parts[ev.Index] = ev.Part
		p := canonical.Part{Type: ev.Part, Origin: ev.Origin}
		switch ev.Part {
		case canonical.PartToolCall:
			c.tools = true
			p.ToolCall = &canonical.ToolCall{ID: ev.ID, Name: ev.Name, Signature: ev.Signature}
		case canonical.PartRedactedThinking:
			p.Signature = ev.Text
		}
		dst = genEvent(dst, "part_start")
		dst = append(dst, `,"index":`...)
		dst = appendInt(dst, int64(ev.Index))
		dst = append(dst, `,"part":`...)
		dst = appendGenPart(dst, &p)
		return append(dst, "}\n\n"...)
	case canonical.EventDelta:
		k := c.kind(ev.Index)
		if k == "" || ev.Text == "" && ev.Signature == "" {
			return dst
		}
		dst = genEvent(dst, "delta")
		dst = append(dst, `,"index":`...)
		dst = appendInt(dst, int64(ev.Index))
		if ev.Text != "" {
			if k == canonical.PartToolCall {
				dst = append(dst, `,"arguments":`...)
			} else {
				dst = append(dst, `,"text":`...)
			}
			dst = wire.AppendString(dst, ev.Text)
		}
		if ev.Signature != "" {
			dst = append(dst, `,"signature":`...)
			dst = wire.AppendString(dst, ev.Signature)
		}
		return append(dst, "}\n\n"...)
	case canonical.EventPartEnd:
		if c.kind(ev.Index) == "" {
			return dst
		}
		dst = genEvent(dst, "part_end")
		dst = append(dst, `,"index":`...)
		dst = appendInt(dst, int64(ev.Index))
		return append(dst, "}\n\n"...)
	case canonical.EventUsage:
		c.usage = ev.Usage
	case canonical.EventFinish:
		c.finish, c.stopSeq = ev.Finish, ev.StopSequence
	case canonical.EventDone:
		dst = genEvent(dst, "end")
		dst = append(dst, `,"finish_reason":`...)
		dst = wire.AppendString(dst, generateFinish(c.finish, c.tools))
		if c.stopSeq != "" {
			dst = append(dst, `,"stop_sequence":`...)
			dst = wire.AppendString(dst, c.stopSeq)
		}
		dst = append(dst, `,"usage":`...)
		dst = c.appendUsage(dst, c.usage)
		return append(dst, "}\n\n"...)
	case canonical.EventError:
		return c.streamError(dst, ev.Err)
	}
	return dst
}

func (c *generateCaller) errorBody(dst []byte, e *canonical.Error, _ string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendChatError(dst, e)
	return append(dst, "}\n"...)
}

func (c *generateCaller) streamError(dst []byte, e *canonical.Error) []byte {
	code := e.Code
	if code == "" {
		code = string(e.Kind)
	}
	return wire.AppendGenerateStreamError(dst, e.Message, wire.OpenAIType(canonical.StatusForKind(e.Kind)), e.Param, code)
}
