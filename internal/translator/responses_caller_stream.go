package translator

import (
	"slices"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Responses, caller side: encode the event stream, then errors.

// ev opens an event: the event line and the data's type and sequence
// number; the caller appends its fields and closes it with end.
func (c *responsesCaller) ev(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = appendInt(dst, c.seq)
	c.seq++
	return dst
}

func end(dst []byte) []byte { return append(dst, "}\n\n"...) }

// itemRef appends ,"item_id":…,"output_index":….
func itemRef(dst []byte, it *respOut) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = wire.AppendString(dst, it.id)
	dst = append(dst, `,"output_index":`...)
	return appendInt(dst, int64(it.out))
}

func (c *responsesCaller) item(i int) *respOut {
	for len(c.items) <= i {
		c.items = append(c.items, respOut{out: -1})
	}
	return &c.items[i]
}

func (c *responsesCaller) start(dst []byte, id, model string, created int64) []byte {
	c.started = true
	c.responseIDs(id)
	c.model, c.created = model, created
	if c.model == "" {
		c.model = c.req.Model
	}
	dst = c.ev(dst, "response.created")
	dst = append(dst, `,"response":`...)
	dst = c.appendResponse(dst, "in_progress", "", nil, nil, nil)
	dst = end(dst)
	dst = c.ev(dst, "response.in_progress")
	dst = append(dst, `,"response":`...)
	dst = c.appendResponse(dst, "in_progress", "", nil, nil, nil)
	return end(dst)
}

func (c *responsesCaller) event(dst []byte, ev *canonical.Event) []byte {
	if c.failed {
		return dst
	}
	if c.held > 0 && ev.Kind != canonical.EventFinish && ev.Kind != canonical.EventUsage && ev.Kind != canonical.EventDone {
		dst = c.closeHeld(dst, false)
	}
	if !c.started && ev.Kind != canonical.EventError {
		dst = c.start(dst, ev.ID, ev.Model, ev.Created)
		if ev.Kind == canonical.EventStart {
			c.usage = ev.Usage
			return dst
		}
	}
	switch ev.Kind {
	case canonical.EventPartStart:
		if respShows(ev.Part, ev.Origin) {
			dst = c.partStart(dst, ev)
		}
	case canonical.EventDelta:
		dst = c.delta(dst, ev)
	case canonical.EventPartEnd:
		if ev.Index < len(c.items) {
			if it := &c.items[ev.Index]; (it.kind == canonical.PartText || it.kind == canonical.PartRefusal) && it.out >= 0 && !it.done {
				c.held = ev.Index + 1
			} else {
				dst = c.close(dst, it)
			}
		}
	case canonical.EventUsage:
		c.usage = ev.Usage
	case canonical.EventFinish:
		c.finish = ev.Finish
		if c.held > 0 {
			dst = c.closeHeld(dst, true)
		}
	case canonical.EventDone:
		dst = c.done(dst)
	case canonical.EventError:
		dst = c.streamError(dst, ev.Err)
	}
	return dst
}

// partStart adds the part's output item, and for a message its content
// part.
func (c *responsesCaller) partStart(dst []byte, ev *canonical.Event) []byte {
	it := c.item(ev.Index)
	it.kind, it.origin, it.out = ev.Part, ev.Origin, c.next
	c.next++
	it.id = c.itemID(respItemPrefix(ev.Part), it.out)
	switch ev.Part {
	case canonical.PartToolCall:
		it.callID, it.name = callerID(chatCallPrefix, ev.ID), ev.Name
		it.ns = c.namespace(it.name)
	case canonical.PartRedactedThinking:
		it.sig = append(it.sig, ev.Text...)
	}
	dst = c.ev(dst, "response.output_item.added")
	dst = append(dst, `,"output_index":`...)
	dst = appendInt(dst, int64(it.out))
	dst = append(dst, `,"item":`...)
	dst = appendItem(dst, it, true)
	dst = end(dst)
	if ev.Part == canonical.PartText || ev.Part == canonical.PartRefusal {
		dst = c.ev(dst, "response.content_part.added")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"part":`...)
		dst = appendContentPart(dst, ev.Part, "")
		dst = end(dst)
	}
	return dst
}

// delta sends a shown item's text as the delta event for its kind, and
// keeps it for the .done events; a reasoning item's first delta adds its
// summary part.
func (c *responsesCaller) delta(dst []byte, ev *canonical.Event) []byte {
	if ev.Index >= len(c.items) {
		return dst
	}
	it := &c.items[ev.Index]
	if it.out < 0 || it.done {
		return dst
	}
	it.sig = append(it.sig, ev.Signature...)
	if ev.Text == "" {
		return dst
	}
	it.text = append(it.text, ev.Text...)
	switch it.kind {
	case canonical.PartText:
		dst = c.ev(dst, "response.output_text.delta")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"delta":`...)
		dst = wire.AppendString(dst, ev.Text)
		dst = append(dst, `,"logprobs":[]`...)
		dst = end(dst)
	case canonical.PartRefusal:
		dst = c.ev(dst, "response.refusal.delta")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"delta":`...)
		dst = wire.AppendString(dst, ev.Text)
		dst = end(dst)
	case canonical.PartToolCall:
		it.hasDelta = true
		dst = c.ev(dst, "response.function_call_arguments.delta")
		dst = itemRef(dst, it)
		dst = append(dst, `,"delta":`...)
		dst = wire.AppendString(dst, ev.Text)
		dst = end(dst)
	case canonical.PartThinking:
		if !it.summary {
			it.summary = true
			dst = c.ev(dst, "response.reasoning_summary_part.added")
			dst = itemRef(dst, it)
			dst = append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":""}`...)
			dst = end(dst)
		}
		dst = c.ev(dst, "response.reasoning_summary_text.delta")
		dst = itemRef(dst, it)
		dst = append(dst, `,"summary_index":0,"delta":`...)
		dst = wire.AppendString(dst, ev.Text)
		dst = end(dst)
	}
	return dst
}

// done closes every item and ends the stream with the terminal response:
// completed, or incomplete when the output was cut off.
func (c *responsesCaller) done(dst []byte) []byte {
	if c.held > 0 {
		dst = c.closeHeld(dst, true)
	}
	status, reason := respStatus(c.finish)
	for i := range c.items {
		if it := &c.items[i]; it.kind == canonical.PartText || it.kind == canonical.PartRefusal {
			it.incomplete = it.incomplete || !it.done && status == "incomplete"
		}
		dst = c.close(dst, &c.items[i])
	}
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	dst = c.ev(dst, typ)
	dst = append(dst, `,"response":`...)
	dst = c.appendResponse(dst, status, reason, c.finished(), &c.usage, nil)
	return end(dst)
}

// closeHeld closes the held message; at the finish it takes the
// response's status.
func (c *responsesCaller) closeHeld(dst []byte, atFinish bool) []byte {
	it := &c.items[c.held-1]
	c.held = 0
	if atFinish {
		status, _ := respStatus(c.finish)
		it.incomplete = status == "incomplete"
	}
	return c.close(dst, it)
}

// close ends an item: the .done events, which repeat its whole content.
func (c *responsesCaller) close(dst []byte, it *respOut) []byte {
	if it.out < 0 || it.done {
		return dst
	}
	it.done = true
	switch it.kind {
	case canonical.PartText:
		dst = c.ev(dst, "response.output_text.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"text":`...)
		dst = wire.AppendString(dst, string(it.text))
		dst = append(dst, `,"logprobs":[]`...)
		dst = end(dst)
	case canonical.PartRefusal:
		dst = c.ev(dst, "response.refusal.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"refusal":`...)
		dst = wire.AppendString(dst, string(it.text))
		dst = end(dst)
	case canonical.PartToolCall:
		if !it.hasDelta {
			// A call without arguments still gets valid JSON.
			it.text = append(it.text[:0], "{}"...)
			dst = c.ev(dst, "response.function_call_arguments.delta")
			dst = itemRef(dst, it)
			dst = append(dst, `,"delta":"{}"`...)
			dst = end(dst)
		}
		dst = c.ev(dst, "response.function_call_arguments.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"name":`...)
		dst = wire.AppendString(dst, it.name)
		dst = append(dst, `,"arguments":`...)
		dst = wire.AppendString(dst, string(it.text))
		dst = end(dst)
	case canonical.PartThinking:
		if it.summary {
			dst = c.ev(dst, "response.reasoning_summary_text.done")
			dst = itemRef(dst, it)
			dst = append(dst, `,"summary_index":0,"text":`...)
			dst = wire.AppendString(dst, string(it.text))
			dst = end(dst)
			dst = c.ev(dst, "response.reasoning_summary_part.done")
			dst = itemRef(dst, it)
			dst = append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":`...)
			dst = wire.AppendString(dst, string(it.text))
			dst = append(dst, '}')
			dst = end(dst)
		}
	}
	if it.kind == canonical.PartText || it.kind == canonical.PartRefusal {
		dst = c.ev(dst, "response.content_part.done")
		dst = itemRef(dst, it)
		dst = append(dst, `,"content_index":0,"part":`...)
		dst = appendContentPart(dst, it.kind, string(it.text))
		dst = end(dst)
	}
	dst = c.ev(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":`...)
	dst = appendInt(dst, int64(it.out))
	dst = append(dst, `,"item":`...)
	mark := len(dst)
	dst = appendItem(dst, it, false)
	start := len(c.output)
	c.output = append(c.output, dst[mark:]...)
	c.spans = append(c.spans, respSpan{out: it.out, start: start, end: len(c.output)})
	dst = end(dst)
	// The item's text lives on in c.output; drop the copy.
	it.text, it.sig = nil, nil
	return dst
}

func (c *responsesCaller) errorBody(dst []byte, e *canonical.Error, _ string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendChatError(dst, e)
	return append(dst, "}\n"...)
}

// streamError ends the stream the way OpenAI does: an error event, then —
// once the response began — response.failed carrying the items finished
// so far and the usage known.
func (c *responsesCaller) streamError(dst []byte, e *canonical.Error) []byte {
	if c.failed {
		return dst
	}
	c.failed = true
	dst = c.ev(dst, "error")
	dst = append(dst, `,"code":`...)
	code := e.Code
	if code == "" {
		code = respErrorCode(e)
	}
	dst = wire.AppendString(dst, code)
	dst = append(dst, `,"message":`...)
	dst = wire.AppendString(dst, e.Message)
	dst = append(dst, `,"param":`...)
	if e.Param != "" {
		dst = wire.AppendString(dst, e.Param)
	} else {
		dst = append(dst, "null"...)
	}
	dst = end(dst)
	if !c.started {
		return dst
	}
	dst = c.ev(dst, "response.failed")
	dst = append(dst, `,"response":`...)
	u := c.usage
	dst = c.appendResponse(dst, "failed", "", c.finished(), &u, e)
	return end(dst)
}

// finished is the output array's contents: the finished items in output
// order (items may finish out of order when the upstream's parts overlap).
func (c *responsesCaller) finished() []byte {
	slices.SortStableFunc(c.spans, func(a, b respSpan) int { return a.out - b.out })
	out := make([]byte, 0, len(c.output)+len(c.spans))
	for i, sp := range c.spans {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, c.output[sp.start:sp.end]...)
	}
	return out
}
