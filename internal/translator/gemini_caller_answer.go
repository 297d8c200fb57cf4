package translator

import (
	"encoding/json"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// The Gemini caller's answers: GenerateContentResponse bodies and SSE
// chunks, and Gemini's error objects.

// geminiCaller writes GenerateContentResponse objects. Thoughts are shown
// only when the caller asked with includeThoughts, as Gemini does; a
// function call streams as one part once its arguments are whole, since
// Gemini callers expect whole calls.
type geminiCaller struct {
	req *canonical.Request

	// Stream state.
	id, model string
	usage     canonical.Usage
	finish    canonical.FinishReason
	parts     []canonical.PartType // by index; "" for a part not shown
	calls     map[int]*canonical.ToolCall
	args      map[int][]byte
	sigs      map[int][]byte // thinking signatures, by index
	origins   map[int]canonical.Origin
	tools     bool
}

func newGeminiCaller(r *canonical.Request) caller { return &geminiCaller{req: r} }

func (c *geminiCaller) showThoughts() bool {
	return c.req != nil && c.req.Reasoning != nil && c.req.Reasoning.Summary != ""
}

// geminiFinish is the finishReason a Gemini caller sees.
func geminiFinish(f canonical.FinishReason) string {
	switch f {
	case canonical.FinishStop, canonical.FinishStopSequence, canonical.FinishToolCalls:
		return "STOP"
	case canonical.FinishLength, canonical.FinishContextWindow:
		return "MAX_TOKENS"
	case canonical.FinishContentFilter, canonical.FinishRefusal:
		return "SAFETY"
	}
	return "OTHER"
}

func appendGeminiUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"promptTokenCount":`...)
	dst = appendInt(dst, u.Input)
	dst = append(dst, `,"candidatesTokenCount":`...)
	dst = appendInt(dst, u.Output-u.Reasoning)
	dst = append(dst, `,"totalTokenCount":`...)
	dst = appendInt(dst, u.Total())
	if u.CacheRead > 0 {
		dst = append(dst, `,"cachedContentTokenCount":`...)
		dst = appendInt(dst, u.CacheRead)
	}
	if u.Reasoning > 0 {
		dst = append(dst, `,"thoughtsTokenCount":`...)
		dst = appendInt(dst, u.Reasoning)
	}
	return append(dst, '}')
}

// appendGeminiPart appends one output part; ok is false for a part a
// Gemini caller does not see.
func (c *geminiCaller) appendPart(dst []byte, p *canonical.Part) ([]byte, bool) {
	switch p.Type {
	case canonical.PartText, canonical.PartRefusal:
		if p.Text == "" {
			return dst, false
		}
		dst = append(dst, `{"text":`...)
		dst = wire.AppendString(dst, p.Text)
	case canonical.PartThinking, canonical.PartRedactedThinking:
		sig := thoughtSignatureOf(p)
		if !c.showThoughts() && sig == "" || p.Text == "" && sig == "" {
			return dst, false
		}
		dst = append(dst, `{`...)
		if c.showThoughts() && p.Text != "" {
			dst = append(dst, `"text":`...)
			dst = wire.AppendString(dst, p.Text)
			dst = append(dst, ',')
		}
		dst = append(dst, `"thought":true`...)
		if sig != "" {
			dst = append(dst, `,"thoughtSignature":`...)
			dst = wire.AppendString(dst, sig)
		}
	case canonical.PartToolCall:
		if p.ToolCall == nil {
			return dst, false
		}
		args, ok := argsObject(p.ToolCall.Arguments)
		if !ok {
			// Gemini's args are an object; keep what the model wrote.
			b, _ := json.Marshal(map[string]string{"arguments": p.ToolCall.Arguments})
			args = b
		}
		dst = append(dst, `{"functionCall":{"id":`...)
		dst = wire.AppendString(dst, p.ToolCall.ID)
		dst = append(dst, `,"name":`...)
		dst = wire.AppendString(dst, p.ToolCall.Name)
		dst = append(dst, `,"args":`...)
		dst = append(dst, args...)
		dst = append(dst, '}')
		if p.ToolCall.Signature != "" {
			dst = append(dst, `,"thoughtSignature":`...)
			dst = wire.AppendString(dst, p.ToolCall.Signature)
		}
	default:
		return dst, false
	}
	return append(dst, '}'), true
}

// appendChunk appends one GenerateContentResponse: parts (already
// written, may be empty), then the finish reason and usage when final.
func (c *geminiCaller) appendResponse(dst []byte, parts []byte, finish string, usage *canonical.Usage, id, model string) []byte {
	dst = append(dst, `{"candidates":[{`...)
	if len(parts) > 0 {
		dst = append(dst, `"content":{"parts":[`...)
		dst = append(dst, parts...)
		dst = append(dst, `],"role":"model"},`...)
	}
	if finish != "" {
		dst = append(dst, `"finishReason":`...)
		dst = wire.AppendString(dst, finish)
		dst = append(dst, ',')
	}
	dst = append(dst, `"index":0}]`...)
	if usage != nil {
		dst = append(dst, `,"usageMetadata":`...)
		dst = appendGeminiUsage(dst, *usage)
	}
	dst = append(dst, `,"modelVersion":`...)
	dst = wire.AppendString(dst, model)
	dst = append(dst, `,"responseId":`...)
	dst = wire.AppendString(dst, id)
	return append(dst, '}')
}

func (c *geminiCaller) modelOf(m string) string {
	if m == "" && c.req != nil {
		return c.req.Model
	}
	return m
}

func (c *geminiCaller) response(dst []byte, r *canonical.Response) []byte {
	var parts []byte
	n := 0
	for i := range r.Parts {
		mark := len(parts)
		if n > 0 {
			parts = append(parts, ',')
		}
		var ok bool
		if parts, ok = c.appendPart(parts, &r.Parts[i]); ok {
			n++
		} else {
			parts = parts[:mark]
		}
	}
	if n == 0 {
		// Gemini always answers a content; an empty answer is one empty text.
		parts = append(parts, emptyTextPart...)
	}
	dst = c.appendResponse(dst, parts, geminiFinish(r.Finish), &r.Usage, r.ID, c.modelOf(r.Model))
	return append(dst, '\n')
}

// emptyTextPart is the part of a content that says nothing.
const emptyTextPart = `{"text":""}`

func (c *geminiCaller) chunk(dst []byte, part []byte) []byte {
	dst = append(dst, "data: "...)
	dst = c.appendResponse(dst, part, "", nil, c.id, c.model)
	return append(dst, "\n\n"...)
}

func (c *geminiCaller) kind(i int) canonical.PartType {
	if i >= 0 && i < len(c.parts) {
		return c.parts[i]
	}
	return ""
}

func (c *geminiCaller) event(dst []byte, ev *canonical.Event) []byte {
	switch ev.Kind {
	case canonical.EventStart:
		c.id, c.model, c.usage = ev.ID, c.modelOf(ev.Model), ev.Usage
	case canonical.EventPartStart:
		for len(c.parts) <= ev.Index {
			c.parts = append(c.parts, "")
		}
		switch ev.Part {
		case canonical.PartText, canonical.PartRefusal, canonical.PartThinking:
			c.parts[ev.Index] = ev.Part
			if ev.Part == canonical.PartThinking {
				if c.origins == nil {
					c.origins = map[int]canonical.Origin{}
				}
				c.origins[ev.Index] = ev.Origin
			}
		case canonical.PartRedactedThinking:
			p := canonical.Part{Type: canonical.PartRedactedThinking, Signature: ev.Text, Origin: ev.Origin}
			part, ok := c.appendPart(nil, &p)
			if ok {
				return c.chunk(dst, part)
			}
		case canonical.PartToolCall:
			c.parts[ev.Index] = ev.Part
			if c.calls == nil {
				c.calls, c.args = map[int]*canonical.ToolCall{}, map[int][]byte{}
			}
			c.calls[ev.Index] = &canonical.ToolCall{ID: ev.ID, Name: ev.Name, Signature: ev.Signature}
			c.tools = true
		}
	case canonical.EventDelta:
		switch k := c.kind(ev.Index); k {
		case canonical.PartText, canonical.PartRefusal:
			if ev.Text != "" {
				p := canonical.Part{Type: canonical.PartText, Text: ev.Text}
				part, _ := c.appendPart(nil, &p)
				return c.chunk(dst, part)
			}
		case canonical.PartThinking:
			if ev.Signature != "" {
				if c.sigs == nil {
					c.sigs = map[int][]byte{}
				}
				c.sigs[ev.Index] = append(c.sigs[ev.Index], ev.Signature...)
			}
			if ev.Text != "" && c.showThoughts() {
				p := canonical.Part{Type: canonical.PartThinking, Text: ev.Text}
				part, _ := c.appendPart(nil, &p)
				return c.chunk(dst, part)
			}
		case canonical.PartToolCall:
			c.args[ev.Index] = append(c.args[ev.Index], ev.Text...)
		}
	case canonical.EventPartEnd:
		switch c.kind(ev.Index) {
		case canonical.PartThinking:
			if sig := c.sigs[ev.Index]; len(sig) > 0 {
				p := canonical.Part{Type: canonical.PartThinking, Signature: string(sig), Origin: c.origins[ev.Index]}
				part, _ := c.appendPart(nil, &p)
				delete(c.sigs, ev.Index)
				return c.chunk(dst, part)
			}
		case canonical.PartToolCall:
			tc := c.calls[ev.Index]
			tc.Arguments = string(c.args[ev.Index])
			p := canonical.Part{Type: canonical.PartToolCall, ToolCall: tc}
			part, _ := c.appendPart(nil, &p)
			delete(c.calls, ev.Index)
			delete(c.args, ev.Index)
			return c.chunk(dst, part)
		}
	case canonical.EventUsage:
		c.usage = ev.Usage
	case canonical.EventFinish:
		c.finish = ev.Finish
	case canonical.EventDone:
		// The last chunk carries a content too, as Gemini's does: the
		// @google/genai chat keeps a streamed turn in its history only when
		// every chunk has one.
		dst = append(dst, "data: "...)
		dst = c.appendResponse(dst, []byte(emptyTextPart), geminiFinish(c.finish), &c.usage, c.id, c.model)
		return append(dst, "\n\n"...)
	case canonical.EventError:
		return c.streamError(dst, ev.Err)
	}
	return dst
}

func (c *geminiCaller) errorBody(dst []byte, e *canonical.Error, _ string) []byte {
	dst = wire.AppendGeminiError(dst, e.Status, e.Message, e.Code, e.Param)
	return append(dst, '\n')
}

func (c *geminiCaller) streamError(dst []byte, e *canonical.Error) []byte {
	status := e.Status
	if status == 0 {
		status = canonical.StatusForKind(e.Kind)
	}
	dst = append(dst, "data: "...)
	dst = wire.AppendGeminiError(dst, status, e.Message, e.Code, e.Param)
	return append(dst, "\n\n"...)
}
