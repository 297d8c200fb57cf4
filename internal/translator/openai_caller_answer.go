package translator

import (
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Chat Completions, caller side: encode a completion, its chunks
// and errors.

// chatCaller writes answers for a Chat Completions caller.
type chatCaller struct {
	req          *canonical.Request
	includeUsage bool

	// Stream state.
	prefix   []byte // "data: {…,"choices":[" — the part every chunk repeats
	started  bool
	finished bool
	parts    []chatPartState // by canonical part index
	nextTool int
	usage    canonical.Usage
}

type chatPartState struct {
	kind     canonical.PartType
	tool     int // the per-response tool-call index
	argsSent bool
	origin   canonical.Origin
	thinking []byte // thinking text, for the signed block
	sig      []byte
}

func newChatCaller(r *canonical.Request) caller {
	return &chatCaller{req: r, includeUsage: r.IncludeUsage}
}

func chatID(id string) string {
	if id == "" {
		return "chatcmpl-relay"
	}
	if strings.HasPrefix(id, "chatcmpl-") {
		return id
	}
	return "chatcmpl-" + id
}

func appendChatUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = appendInt(dst, u.Input)
	dst = append(dst, `,"completion_tokens":`...)
	dst = appendInt(dst, u.Output)
	dst = append(dst, `,"total_tokens":`...)
	dst = appendInt(dst, u.Total())
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = appendInt(dst, u.CacheRead)
	if u.CacheWrite > 0 {
		dst = append(dst, `,"cache_write_tokens":`...)
		dst = appendInt(dst, u.CacheWrite)
	}
	dst = append(dst, `},"completion_tokens_details":{"reasoning_tokens":`...)
	dst = appendInt(dst, u.Reasoning)
	return append(dst, "}}"...)
}

func (c *chatCaller) response(dst []byte, r *canonical.Response) []byte {
	dst = append(dst, `{"id":`...)
	dst = wire.AppendString(dst, chatID(r.ID))
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = appendInt(dst, r.Created)
	dst = append(dst, `,"model":`...)
	dst = wire.AppendString(dst, r.Model)
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	var text, refusal, reasoning strings.Builder
	hasText, hasRefusal := false, false
	var calls, blocks []*canonical.Part
	for i := range r.Parts {
		p := &r.Parts[i]
		switch p.Type {
		case canonical.PartText:
			hasText = true
			text.WriteString(p.Text)
		case canonical.PartRefusal:
			hasRefusal = true
			refusal.WriteString(p.Text)
		case canonical.PartThinking:
			reasoning.WriteString(p.Text)
			if p.Origin == canonical.OriginAnthropic && p.Signature != "" {
				blocks = append(blocks, p)
			}
		case canonical.PartRedactedThinking:
			blocks = append(blocks, p)
		case canonical.PartToolCall:
			calls = append(calls, p)
		}
	}
	if hasText || len(calls) == 0 && !hasRefusal {
		dst = wire.AppendString(dst, text.String())
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"refusal":`...)
	if hasRefusal {
		dst = wire.AppendString(dst, refusal.String())
	} else {
		dst = append(dst, "null"...)
	}
	if len(calls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i, p := range calls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = wire.AppendString(dst, callerID(chatCallPrefix, p.ToolCall.ID))
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = wire.AppendString(dst, p.ToolCall.Name)
			dst = append(dst, `,"arguments":`...)
			args := p.ToolCall.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			dst = wire.AppendString(dst, args)
			dst = append(dst, "}}"...)
		}
		dst = append(dst, ']')
	}
	if reasoning.Len() > 0 {
		dst = append(dst, `,"reasoning_content":`...)
		dst = wire.AppendString(dst, reasoning.String())
	}
	if len(blocks) > 0 {
		dst = append(dst, `,"thinking_blocks":[`...)
		for i, p := range blocks {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendThinkingBlock(dst, p.Type, p.Text, p.Signature)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"annotations":[]},"logprobs":null,"finish_reason":`...)
	finish := r.Finish
	if finish == canonical.FinishStop && len(calls) > 0 {
		finish = canonical.FinishToolCalls
	}
	dst = wire.AppendString(dst, chatFinish(finish))
	dst = append(dst, `}],"usage":`...)
	dst = appendChatUsage(dst, r.Usage)
	return append(dst, "}\n"...)
}

func appendThinkingBlock(dst []byte, typ canonical.PartType, text, sig string) []byte {
	if typ == canonical.PartRedactedThinking {
		dst = append(dst, `{"type":"redacted_thinking","data":`...)
		dst = wire.AppendString(dst, sig)
		return append(dst, '}')
	}
	dst = append(dst, `{"type":"thinking","thinking":`...)
	dst = wire.AppendString(dst, text)
	dst = append(dst, `,"signature":`...)
	dst = wire.AppendString(dst, sig)
	return append(dst, '}')
}

func (c *chatCaller) part(i int) *chatPartState {
	for len(c.parts) <= i {
		c.parts = append(c.parts, chatPartState{tool: -1})
	}
	return &c.parts[i]
}

// openChunk starts a chunk with one choice and opens its delta.
func (c *chatCaller) openChunk(dst []byte) []byte {
	dst = append(dst, c.prefix...)
	return append(dst, `{"index":0,"delta":{`...)
}

func closeChunk(dst []byte) []byte {
	return append(dst, "},\"finish_reason\":null}]}\n\n"...)
}

func (c *chatCaller) start(dst []byte, id, model string, created int64) []byte {
	c.started = true
	c.prefix = append(c.prefix[:0], `data: {"id":`...)
	c.prefix = wire.AppendString(c.prefix, chatID(id))
	c.prefix = append(c.prefix, `,"object":"chat.completion.chunk","created":`...)
	c.prefix = appendInt(c.prefix, created)
	c.prefix = append(c.prefix, `,"model":`...)
	c.prefix = wire.AppendString(c.prefix, model)
	c.prefix = append(c.prefix, `,"choices":[`...)
	dst = c.openChunk(dst)
	dst = append(dst, `"role":"assistant","content":""`...)
	return closeChunk(dst)
}

func (c *chatCaller) event(dst []byte, ev *canonical.Event) []byte {
	if !c.started && ev.Kind != canonical.EventError {
		dst = c.start(dst, ev.ID, ev.Model, ev.Created)
		if ev.Kind == canonical.EventStart {
			c.usage = ev.Usage
			return dst
		}
	}
	switch ev.Kind {
	case canonical.EventPartStart:
		dst = c.partStart(dst, ev)
	case canonical.EventDelta:
		dst = c.delta(dst, ev)
	case canonical.EventPartEnd:
		dst = c.partEnd(dst, ev)
	case canonical.EventUsage:
		c.usage = ev.Usage
	case canonical.EventFinish:
		dst = c.finish(dst, ev.Finish)
	case canonical.EventDone:
		dst = c.done(dst)
	case canonical.EventError:
		dst = c.streamError(dst, ev.Err)
	}
	return dst
}

// partStart opens a tool call's chunk with its id and name; a redacted
// thinking block is sent whole. Text parts say nothing until their text.
func (c *chatCaller) partStart(dst []byte, ev *canonical.Event) []byte {
	p := c.part(ev.Index)
	p.kind, p.origin = ev.Part, ev.Origin
	switch ev.Part {
	case canonical.PartToolCall:
		p.tool = c.nextTool
		c.nextTool++
		dst = c.openChunk(dst)
		dst = append(dst, `"tool_calls":[{"index":`...)
		dst = appendInt(dst, int64(p.tool))
		dst = append(dst, `,"id":`...)
		dst = wire.AppendString(dst, callerID(chatCallPrefix, ev.ID))
		dst = append(dst, `,"type":"function","function":{"name":`...)
		dst = wire.AppendString(dst, ev.Name)
		dst = append(dst, `,"arguments":""}}]`...)
		dst = closeChunk(dst)
	case canonical.PartRedactedThinking:
		dst = c.openChunk(dst)
		dst = append(dst, `"thinking_blocks":[`...)
		dst = appendThinkingBlock(dst, ev.Part, "", ev.Text)
		dst = append(dst, ']')
		dst = closeChunk(dst)
	}
	return dst
}

// delta sends a part's text in the delta field for its kind; Anthropic's
// thinking is also kept, to send whole with its signature at the end.
func (c *chatCaller) delta(dst []byte, ev *canonical.Event) []byte {
	p := c.part(ev.Index)
	switch p.kind {
	case canonical.PartText:
		dst = c.textDelta(dst, `"content":`, ev.Text)
	case canonical.PartRefusal:
		dst = c.textDelta(dst, `"refusal":`, ev.Text)
	case canonical.PartThinking:
		dst = c.textDelta(dst, `"reasoning_content":`, ev.Text)
		if ev.Text != "" && p.origin == canonical.OriginAnthropic {
			p.thinking = append(p.thinking, ev.Text...)
		}
		p.sig = append(p.sig, ev.Signature...)
	case canonical.PartToolCall:
		if ev.Text != "" && p.tool >= 0 {
			p.argsSent = true
			dst = c.toolArgs(dst, p.tool, ev.Text)
		}
	}
	return dst
}

// textDelta is a chunk with text in field (`"content":` …); empty text
// sends nothing.
func (c *chatCaller) textDelta(dst []byte, field, text string) []byte {
	if text == "" {
		return dst
	}
	dst = c.openChunk(dst)
	dst = append(dst, field...)
	dst = wire.AppendString(dst, text)
	return closeChunk(dst)
}

// partEnd gives a call without arguments valid JSON, and sends
// Anthropic's signed thinking whole.
func (c *chatCaller) partEnd(dst []byte, ev *canonical.Event) []byte {
	p := c.part(ev.Index)
	switch p.kind {
	case canonical.PartToolCall:
		if !p.argsSent && p.tool >= 0 {
			// A call without arguments still gets valid JSON.
			p.argsSent = true
			dst = c.toolArgs(dst, p.tool, "{}")
		}
	case canonical.PartThinking:
		if p.origin == canonical.OriginAnthropic && len(p.sig) > 0 {
			dst = c.openChunk(dst)
			dst = append(dst, `"thinking_blocks":[`...)
			dst = appendThinkingBlock(dst, canonical.PartThinking, string(p.thinking), string(p.sig))
			dst = append(dst, ']')
			dst = closeChunk(dst)
		}
	}
	return dst
}

// done finishes the stream if the upstream did not, sends the usage chunk
// when the caller asked for it, then [DONE].
func (c *chatCaller) done(dst []byte) []byte {
	if !c.finished {
		dst = c.finish(dst, canonical.FinishStop)
	}
	if c.includeUsage {
		dst = append(dst, c.prefix...)
		dst = append(dst, `],"usage":`...)
		dst = appendChatUsage(dst, c.usage)
		dst = append(dst, "}\n\n"...)
	}
	return append(dst, "data: [DONE]\n\n"...)
}

func (c *chatCaller) toolArgs(dst []byte, tool int, args string) []byte {
	dst = c.openChunk(dst)
	dst = append(dst, `"tool_calls":[{"index":`...)
	dst = appendInt(dst, int64(tool))
	dst = append(dst, `,"function":{"arguments":`...)
	dst = wire.AppendString(dst, args)
	dst = append(dst, "}}]"...)
	return closeChunk(dst)
}

func (c *chatCaller) finish(dst []byte, f canonical.FinishReason) []byte {
	if c.finished {
		return dst
	}
	c.finished = true
	for i := range c.parts {
		if p := &c.parts[i]; p.kind == canonical.PartToolCall && !p.argsSent && p.tool >= 0 {
			p.argsSent = true
			dst = c.toolArgs(dst, p.tool, "{}")
		}
	}
	if f == canonical.FinishStop && c.nextTool > 0 {
		f = canonical.FinishToolCalls
	}
	dst = c.openChunk(dst)
	dst = append(dst, `},"finish_reason":`...)
	dst = wire.AppendString(dst, chatFinish(f))
	return append(dst, "}]}\n\n"...)
}

func (c *chatCaller) errorBody(dst []byte, e *canonical.Error, _ string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendChatError(dst, e)
	return append(dst, "}\n"...)
}

func (c *chatCaller) streamError(dst []byte, e *canonical.Error) []byte {
	dst = append(dst, `data: {"error":`...)
	dst = appendChatError(dst, e)
	return append(dst, "}\n\n"...)
}

func appendChatError(dst []byte, e *canonical.Error) []byte {
	dst = append(dst, `{"message":`...)
	dst = wire.AppendString(dst, e.Message)
	dst = append(dst, `,"type":`...)
	dst = wire.AppendString(dst, wire.OpenAIType(canonical.StatusForKind(e.Kind)))
	dst = append(dst, `,"param":`...)
	if e.Param != "" {
		dst = wire.AppendString(dst, e.Param)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"code":`...)
	code := e.Code
	if code == "" {
		code = string(e.Kind)
	}
	dst = wire.AppendString(dst, code)
	return append(dst, '}')
}
