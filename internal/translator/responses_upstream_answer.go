package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Responses, upstream side: decode a whole response object, then
// the event stream.

func (u *responsesUpstream) decodeResponse(body []byte, r *canonical.Response) error {
	var rs respResponse
	if err := json.Unmarshal(body, &rs); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	if rs.Status == "failed" {
		msg := "the response failed"
		if rs.Error != nil {
			msg += ": " + rs.Error.Message
		}
		return fmt.Errorf("%s", msg)
	}
	r.ID, r.Model, r.Created = rs.ID, rs.Model, rs.CreatedAt
	tools := false
	for i := range rs.Output {
		it := &rs.Output[i]
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartText, Text: c.Text})
				case "refusal":
					r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartRefusal, Text: c.Refusal})
				}
			}
		case "function_call":
			tools = true
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: it.CallID, ItemID: it.ID, Name: it.Name, Arguments: it.Args}})
		case "reasoning":
			var text strings.Builder
			for j, s := range it.Summary {
				if j > 0 {
					text.WriteString("\n\n")
				}
				text.WriteString(s.Text)
			}
			for _, c := range it.Content {
				text.WriteString(c.Text)
			}
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartThinking, Text: text.String(), Signature: it.EncryptedContent, Origin: canonical.OriginOpenAI})
		}
	}
	r.Finish = finishFromResponse(&rs, tools)
	if rs.Usage != nil {
		r.Usage = rs.Usage.canonical()
	}
	return nil
}

func (u *responsesUpstream) item(id string) *respItemState {
	if u.items == nil {
		u.items = map[string]*respItemState{}
	}
	it := u.items[id]
	if it == nil {
		it = &respItemState{part: -1}
		u.items[id] = it
	}
	return it
}

func (u *responsesUpstream) decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || u.completed {
		return evs, nil
	}
	var e respEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return evs, fmt.Errorf("decode %s event: %w", eventType(ev), err)
	}
	typ := e.Type
	if len(ev.Name) > 0 {
		typ = string(ev.Name)
	}
	if !u.started && typ != "error" {
		u.started = true
		start := canonical.Event{Kind: canonical.EventStart, Created: u.now.Unix()}
		if e.Response != nil {
			start.ID, start.Model = e.Response.ID, e.Response.Model
			if e.Response.CreatedAt > 0 {
				start.Created = e.Response.CreatedAt
			}
		}
		evs = append(evs, start)
	}
	switch typ {
	case "response.output_item.added":
		return u.itemAdded(&e, typ, evs)
	case "response.content_part.added":
		evs = u.contentPartAdded(&e, evs)
	case "response.output_text.delta", "response.refusal.delta":
		if at, ok := u.parts[e.ItemID+"/"+strconv.Itoa(e.ContentIndex)]; ok && e.Delta != "" {
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: e.Delta})
		}
	case "response.content_part.done":
		key := e.ItemID + "/" + strconv.Itoa(e.ContentIndex)
		if at, ok := u.parts[key]; ok {
			delete(u.parts, key)
			evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: at})
		}
	case "response.function_call_arguments.delta":
		// Keyed by item_id (fc_…), never by call_id.
		it := u.items[e.ItemID]
		if it != nil && it.kind == canonical.PartToolCall && e.Delta != "" {
			it.args = true
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: e.Delta})
		}
	case "response.function_call_arguments.done":
		it := u.items[e.ItemID]
		if it != nil && it.kind == canonical.PartToolCall && !it.args && e.Arguments != nil && *e.Arguments != "" {
			it.args = true
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: *e.Arguments})
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		evs = u.reasoningDelta(&e, evs)
	case "response.output_item.done":
		evs = u.itemDone(&e, evs)
	case "response.completed", "response.incomplete":
		evs = u.complete(&e, evs)
	case "response.failed":
		evs = u.failed(&e, evs)
	case "error":
		u.completed = true
		evs = append(evs, canonical.Event{Kind: canonical.EventError, Err: streamErrorOf(e.Code, 0, e.Message)})
	}
	return evs, nil
}

// itemAdded starts a function call or reasoning part; message items start
// their parts with their content parts.
func (u *responsesUpstream) itemAdded(e *respEvent, typ string, evs []canonical.Event) ([]canonical.Event, error) {
	if e.Item == nil {
		return evs, fmt.Errorf("%s without an item", typ)
	}
	it := u.item(e.Item.ID)
	switch e.Item.Type {
	case "function_call":
		u.sawTools = true
		it.part, it.kind = u.next, canonical.PartToolCall
		u.next++
		evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: it.part, Part: canonical.PartToolCall, ID: e.Item.CallID, Name: e.Item.Name})
		if e.Item.Args != "" {
			it.args = true
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: e.Item.Args})
		}
	case "reasoning":
		it.part, it.kind = u.next, canonical.PartThinking
		u.next++
		evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: it.part, Part: canonical.PartThinking, Origin: canonical.OriginOpenAI})
	}
	return evs, nil
}

// contentPartAdded starts a text or refusal part, keyed by its item and
// content index.
func (u *responsesUpstream) contentPartAdded(e *respEvent, evs []canonical.Event) []canonical.Event {
	if e.Part == nil {
		return evs
	}
	kind := canonical.PartText
	switch e.Part.Type {
	case "output_text":
	case "refusal":
		kind = canonical.PartRefusal
	default:
		return evs
	}
	if u.parts == nil {
		u.parts = map[string]int{}
	}
	at := u.next
	u.next++
	u.parts[e.ItemID+"/"+strconv.Itoa(e.ContentIndex)] = at
	return append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: kind})
}

// reasoningDelta is reasoning text; summaries are separated by a blank
// line.
func (u *responsesUpstream) reasoningDelta(e *respEvent, evs []canonical.Event) []canonical.Event {
	it := u.items[e.ItemID]
	if it == nil || it.kind != canonical.PartThinking || e.Delta == "" {
		return evs
	}
	text := e.Delta
	if it.anyDelta && e.SummaryIndex != it.summary {
		text = "\n\n" + text
	}
	it.anyDelta, it.summary = true, e.SummaryIndex
	return append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: text})
}

// itemDone ends a function call or reasoning part, with the arguments no
// delta carried and the reasoning's encrypted content as its signature.
func (u *responsesUpstream) itemDone(e *respEvent, evs []canonical.Event) []canonical.Event {
	if e.Item == nil {
		return evs
	}
	it := u.items[e.Item.ID]
	if it == nil || it.part < 0 || it.ended {
		return evs
	}
	it.ended = true
	if it.kind == canonical.PartToolCall && !it.args && e.Item.Args != "" {
		it.args = true
		evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Text: e.Item.Args})
	}
	if it.kind == canonical.PartThinking && e.Item.EncryptedContent != "" {
		evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: it.part, Signature: e.Item.EncryptedContent})
	}
	return append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: it.part})
}

// complete ends the stream: open parts, usage, finish, done.
func (u *responsesUpstream) complete(e *respEvent, evs []canonical.Event) []canonical.Event {
	u.completed = true
	evs = u.closeAll(evs)
	if e.Response != nil {
		if e.Response.Usage != nil {
			evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: e.Response.Usage.canonical()})
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: finishFromResponse(e.Response, u.sawTools)})
	} else {
		evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: canonical.FinishStop})
	}
	return append(evs, canonical.Event{Kind: canonical.EventDone})
}

// failed ends the stream with the response's error, after its usage.
func (u *responsesUpstream) failed(e *respEvent, evs []canonical.Event) []canonical.Event {
	u.completed = true
	code, msg := "server_error", "The upstream response failed."
	if e.Response != nil {
		if e.Response.Usage != nil {
			evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: e.Response.Usage.canonical()})
		}
		if er := e.Response.Error; er != nil {
			code, msg = er.Code, er.Message
		}
	}
	return append(evs, canonical.Event{Kind: canonical.EventError, Err: streamErrorOf(code, 0, msg)})
}

// closeAll ends the parts still open when the response completes.
func (u *responsesUpstream) closeAll(evs []canonical.Event) []canonical.Event {
	var open []int
	for _, at := range u.parts {
		open = append(open, at)
	}
	clear(u.parts)
	for _, it := range u.items {
		if it.part >= 0 && !it.ended {
			it.ended = true
			open = append(open, it.part)
		}
	}
	slices.Sort(open)
	for _, at := range open {
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: at})
	}
	return evs
}

func (u *responsesUpstream) atEOF(evs []canonical.Event) ([]canonical.Event, bool) {
	return evs, u.completed
}
