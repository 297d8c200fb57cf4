package translator

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Anthropic Messages, caller side: encode messages, their event stream
// and errors.

// messagesCaller writes answers for a Messages caller.
type messagesCaller struct {
	req *canonical.Request
	// showForeign: the caller turned thinking on, so reasoning from other
	// providers is shown as (unsigned) thinking blocks.
	showForeign bool

	// Stream state.
	started   bool
	id, model string
	blocks    []anthBlockState // by canonical part index
	next      int              // next block index
	usage     canonical.Usage
	finish    canonical.FinishReason
	stopSeq   string
	sawTools  bool
}

type anthBlockState struct {
	kind   canonical.PartType
	origin canonical.Origin
	block  int // the block index once opened; -1 before
	closed bool
	// tool calls open at once; text and thinking on their first delta,
	// so an empty block is never sent.
	id, name string
	sig      string
}

func newMessagesCaller(r *canonical.Request) caller {
	show := r.Reasoning != nil && r.Reasoning.Enabled != nil && *r.Reasoning.Enabled
	return &messagesCaller{req: r, showForeign: show}
}

func messageID(id string) string {
	if id == "" {
		return "msg_relay"
	}
	if strings.HasPrefix(id, "msg_") {
		return id
	}
	return "msg_" + id
}

func (c *messagesCaller) shows(p *canonical.Part) bool {
	switch p.Type {
	case canonical.PartThinking:
		return p.Origin == canonical.OriginAnthropic || c.showForeign && p.Text != ""
	case canonical.PartRedactedThinking:
		return p.Origin == canonical.OriginAnthropic
	}
	return true
}

func appendAnthUsage(dst []byte, u canonical.Usage, start bool) []byte {
	in := max(u.Input-u.CacheRead-u.CacheWrite, 0)
	dst = append(dst, `{"input_tokens":`...)
	dst = appendInt(dst, in)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = appendInt(dst, u.CacheWrite)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = appendInt(dst, u.CacheRead)
	dst = append(dst, `,"output_tokens":`...)
	if start {
		dst = appendInt(dst, 0)
	} else {
		dst = appendInt(dst, u.Output)
		if u.Reasoning > 0 {
			dst = append(dst, `,"output_tokens_details":{"thinking_tokens":`...)
			dst = appendInt(dst, u.Reasoning)
			dst = append(dst, '}')
		}
	}
	return append(dst, '}')
}

// appendToolInput appends a call's arguments as the object Anthropic
// callers expect; arguments that are not a JSON object become {}.
func appendToolInput(dst []byte, args string) []byte {
	if obj, ok := argsObject(args); ok {
		var b bytes.Buffer
		if json.Compact(&b, obj) == nil {
			return append(dst, b.Bytes()...)
		}
	}
	return append(dst, "{}"...)
}

func (c *messagesCaller) response(dst []byte, r *canonical.Response) []byte {
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, messageID(r.ID))
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = wire.AppendString(dst, r.Model)
	dst = append(dst, `,"content":[`...)
	n := 0
	tools := false
	for i := range r.Parts {
		p := &r.Parts[i]
		if !c.shows(p) {
			continue
		}
		switch p.Type {
		case canonical.PartText, canonical.PartRefusal:
			if p.Text == "" {
				continue
			}
		case canonical.PartToolCall:
			tools = true
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		switch p.Type {
		case canonical.PartText, canonical.PartRefusal:
			dst = append(dst, `{"type":"text","text":`...)
			dst = wire.AppendString(dst, p.Text)
			dst = append(dst, '}')
		case canonical.PartThinking:
			dst = append(dst, `{"type":"thinking","thinking":`...)
			dst = wire.AppendString(dst, p.Text)
			dst = append(dst, `,"signature":`...)
			dst = wire.AppendString(dst, anthSignature(p))
			dst = append(dst, '}')
		case canonical.PartRedactedThinking:
			dst = append(dst, `{"type":"redacted_thinking","data":`...)
			dst = wire.AppendString(dst, p.Signature)
			dst = append(dst, '}')
		case canonical.PartToolCall:
			dst = append(dst, `{"type":"tool_use","id":`...)
			dst = wire.AppendString(dst, callerID(anthropicCallPrefix, p.ToolCall.ID))
			dst = append(dst, `,"name":`...)
			dst = wire.AppendString(dst, p.ToolCall.Name)
			dst = append(dst, `,"input":`...)
			dst = appendToolInput(dst, p.ToolCall.Arguments)
			dst = append(dst, '}')
		}
	}
	finish := r.Finish
	if finish == canonical.FinishStop && tools {
		finish = canonical.FinishToolCalls
	}
	dst = append(dst, `],"stop_reason":`...)
	dst = wire.AppendString(dst, anthropicStop(finish))
	dst = append(dst, `,"stop_sequence":`...)
	if finish == canonical.FinishStopSequence && r.StopSequence != "" {
		dst = wire.AppendString(dst, r.StopSequence)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"usage":`...)
	dst = appendAnthUsage(dst, r.Usage, false)
	return append(dst, "}\n"...)
}

// anthSignature is the signature a thinking block carries to an Anthropic
// caller: Anthropic's own, else empty (foreign reasoning is not signed).
func anthSignature(p *canonical.Part) string {
	if p.Origin == canonical.OriginAnthropic {
		return p.Signature
	}
	return ""
}

func (c *messagesCaller) block(i int) *anthBlockState {
	for len(c.blocks) <= i {
		c.blocks = append(c.blocks, anthBlockState{block: -1})
	}
	return &c.blocks[i]
}

func (c *messagesCaller) start(dst []byte, id, model string, u canonical.Usage) []byte {
	c.started = true
	c.id, c.model = messageID(id), model
	dst = append(dst, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	dst = wire.AppendString(dst, c.id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = wire.AppendString(dst, c.model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	dst = appendAnthUsage(dst, u, true)
	return append(dst, "}}\n\n"...)
}

// open sends content_block_start for b.
func (c *messagesCaller) open(dst []byte, b *anthBlockState) []byte {
	b.block = c.next
	c.next++
	dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	dst = appendInt(dst, int64(b.block))
	dst = append(dst, `,"content_block":`...)
	switch b.kind {
	case canonical.PartThinking:
		dst = append(dst, `{"type":"thinking","thinking":"","signature":""}`...)
	case canonical.PartRedactedThinking:
		dst = append(dst, `{"type":"redacted_thinking","data":`...)
		dst = wire.AppendString(dst, b.sig)
		dst = append(dst, '}')
	case canonical.PartToolCall:
		dst = append(dst, `{"type":"tool_use","id":`...)
		dst = wire.AppendString(dst, callerID(anthropicCallPrefix, b.id))
		dst = append(dst, `,"name":`...)
		dst = wire.AppendString(dst, b.name)
		dst = append(dst, `,"input":{}}`...)
	default:
		dst = append(dst, `{"type":"text","text":""}`...)
	}
	return append(dst, "}\n\n"...)
}

func (c *messagesCaller) delta(dst []byte, b *anthBlockState, typ, key, value string) []byte {
	dst = append(dst, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	dst = appendInt(dst, int64(b.block))
	dst = append(dst, `,"delta":{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","`...)
	dst = append(dst, key...)
	dst = append(dst, `":`...)
	dst = wire.AppendString(dst, value)
	return append(dst, "}}\n\n"...)
}

func (c *messagesCaller) stop(dst []byte, b *anthBlockState) []byte {
	if b.block < 0 || b.closed {
		return dst
	}
	b.closed = true
	dst = append(dst, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	dst = appendInt(dst, int64(b.block))
	return append(dst, "}\n\n"...)
}

func (c *messagesCaller) event(dst []byte, ev *canonical.Event) []byte {
	if !c.started && ev.Kind != canonical.EventError {
		dst = c.start(dst, ev.ID, ev.Model, ev.Usage)
		c.usage = ev.Usage
		if ev.Kind == canonical.EventStart {
			return dst
		}
	}
	switch ev.Kind {
	case canonical.EventPartStart:
		b := c.block(ev.Index)
		b.kind, b.origin, b.id, b.name = ev.Part, ev.Origin, ev.ID, ev.Name
		switch ev.Part {
		case canonical.PartToolCall:
			c.sawTools = true
			dst = c.open(dst, b)
		case canonical.PartRedactedThinking:
			if ev.Origin == canonical.OriginAnthropic {
				b.sig = ev.Text
				dst = c.open(dst, b)
			}
		}
	case canonical.EventDelta:
		b := c.block(ev.Index)
		switch b.kind {
		case canonical.PartText, canonical.PartRefusal:
			if ev.Text == "" {
				break
			}
			if b.block < 0 {
				dst = c.open(dst, b)
			}
			dst = c.delta(dst, b, "text_delta", "text", ev.Text)
		case canonical.PartThinking:
			if b.origin != canonical.OriginAnthropic && !c.showForeign {
				break
			}
			if ev.Text != "" {
				if b.block < 0 {
					dst = c.open(dst, b)
				}
				dst = c.delta(dst, b, "thinking_delta", "thinking", ev.Text)
			}
			if ev.Signature != "" && b.origin == canonical.OriginAnthropic {
				if b.block < 0 {
					dst = c.open(dst, b)
				}
				dst = c.delta(dst, b, "signature_delta", "signature", ev.Signature)
			}
		case canonical.PartToolCall:
			if ev.Text != "" && b.block >= 0 {
				dst = c.delta(dst, b, "input_json_delta", "partial_json", ev.Text)
			}
		}
	case canonical.EventPartEnd:
		dst = c.stop(dst, c.block(ev.Index))
	case canonical.EventUsage:
		c.usage = ev.Usage
	case canonical.EventFinish:
		c.finish, c.stopSeq = ev.Finish, ev.StopSequence
	case canonical.EventDone:
		for i := range c.blocks {
			dst = c.stop(dst, &c.blocks[i])
		}
		finish := c.finish
		if (finish == canonical.FinishStop || finish == canonical.FinishNone) && c.sawTools {
			finish = canonical.FinishToolCalls
		}
		dst = append(dst, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
		dst = wire.AppendString(dst, anthropicStop(finish))
		dst = append(dst, `,"stop_sequence":`...)
		if finish == canonical.FinishStopSequence && c.stopSeq != "" {
			dst = wire.AppendString(dst, c.stopSeq)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `},"usage":`...)
		dst = appendAnthUsage(dst, c.usage, false)
		dst = append(dst, "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	case canonical.EventError:
		dst = c.streamError(dst, ev.Err)
	}
	return dst
}

func anthErrorType(e *canonical.Error) string {
	if e.Kind == canonical.ErrOverloaded {
		return "overloaded_error"
	}
	return wire.AnthropicType(canonical.StatusForKind(e.Kind))
}

func (c *messagesCaller) errorBody(dst []byte, e *canonical.Error, requestID string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = wire.AppendString(dst, wire.AnthropicType(e.Status))
	dst = append(dst, `,"message":`...)
	dst = wire.AppendString(dst, e.Message)
	dst = append(dst, `},"request_id":`...)
	dst = wire.AppendString(dst, requestID)
	return append(dst, "}\n"...)
}

func (c *messagesCaller) streamError(dst []byte, e *canonical.Error) []byte {
	dst = append(dst, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"...)
	dst = wire.AppendString(dst, anthErrorType(e))
	dst = append(dst, `,"message":`...)
	dst = wire.AppendString(dst, e.Message)
	return append(dst, "}}\n\n"...)
}
