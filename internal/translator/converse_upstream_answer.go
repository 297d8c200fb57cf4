package translator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// AWS Bedrock Converse, upstream side: decode a whole answer, then the
// ConverseStream events. The proxy hands each event-stream message over
// as a wire.Event: Name is its :event-type (or, for an exception, its
// :exception-type), Data its JSON payload.

func (u *converseUpstream) decodeResponse(body []byte, r *canonical.Response) error {
	var c cvResponse
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("decode converse response: %w", err)
	}
	if c.Output.Message == nil {
		return fmt.Errorf("the response has no output message")
	}
	r.ID, r.Model, r.Created = u.id, u.model, u.now.Unix()
	if c.Usage != nil {
		r.Usage = c.Usage.canonical()
	}
	calls := false
	for i := range c.Output.Message.Content {
		b := &c.Output.Message.Content[i]
		switch {
		case b.Text != nil:
			if n := len(r.Parts); n > 0 && r.Parts[n-1].Type == canonical.PartText {
				r.Parts[n-1].Text += *b.Text
			} else {
				r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartText, Text: *b.Text})
			}
		case b.ToolUse != nil:
			calls = true
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Arguments: argsText(b.ToolUse.Input)}})
		case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
			rt := b.ReasoningContent.ReasoningText
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartThinking, Text: rt.Text, Signature: rt.Signature, Origin: originIf(rt.Signature, canonical.OriginAnthropic)})
		case b.ReasoningContent != nil && b.ReasoningContent.RedactedContent != "":
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartRedactedThinking, Signature: b.ReasoningContent.RedactedContent, Origin: canonical.OriginAnthropic})
		}
	}
	r.Finish = finishFromConverse(c.StopReason)
	if r.Finish == canonical.FinishStop && calls {
		r.Finish = canonical.FinishToolCalls
	}
	return nil
}

func (u *converseUpstream) decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	name := string(ev.Name)
	data := bytes.TrimSpace(ev.Data)
	if u.done || name == "" && len(data) == 0 {
		return evs, nil
	}
	var e cvStreamEvent
	if len(data) > 0 {
		if err := json.Unmarshal(data, &e); err != nil {
			return evs, fmt.Errorf("decode converse stream event %q: %w", name, err)
		}
	}
	if strings.HasSuffix(name, "Exception") {
		u.done = true
		return append(evs, canonical.Event{Kind: canonical.EventError, Err: converseStreamError(name, e.Message)}), nil
	}
	if !u.started {
		u.started = true
		u.blocks, u.kinds = map[int]int{}, map[int]canonical.PartType{}
		evs = append(evs, canonical.Event{Kind: canonical.EventStart, ID: u.id, Model: u.model, Created: u.now.Unix()})
	}
	switch name {
	case "messageStart":
	case "contentBlockStart":
		if e.ContentBlockIndex == nil || e.Start == nil || e.Start.ToolUse == nil {
			return evs, nil
		}
		at := u.open(*e.ContentBlockIndex, canonical.PartToolCall)
		u.calls = true
		evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: canonical.PartToolCall, ID: e.Start.ToolUse.ToolUseID, Name: e.Start.ToolUse.Name})
	case "contentBlockDelta":
		if e.ContentBlockIndex == nil || e.Delta == nil {
			return evs, nil
		}
		evs = u.delta(*e.ContentBlockIndex, e.Delta, evs)
	case "contentBlockStop":
		if e.ContentBlockIndex == nil {
			return evs, nil
		}
		if at, ok := u.blocks[*e.ContentBlockIndex]; ok {
			delete(u.blocks, *e.ContentBlockIndex)
			evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: at})
		}
	case "messageStop":
		evs = u.closeAll(evs)
		u.finished = true
		u.finish = finishFromConverse(e.StopReason)
		if u.finish == canonical.FinishStop && u.calls {
			u.finish = canonical.FinishToolCalls
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: u.finish})
	case "metadata":
		if e.Usage != nil {
			evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: e.Usage.canonical()})
		}
		if u.finished {
			u.done = true
			evs = append(evs, canonical.Event{Kind: canonical.EventDone})
		}
	}
	return evs, nil
}

// open starts a canonical part for a Converse content block.
func (u *converseUpstream) open(block int, kind canonical.PartType) int {
	at := u.next
	u.next++
	u.blocks[block], u.kinds[block] = at, kind
	return at
}

// delta turns one contentBlockDelta into events, starting the block's
// part when it is the block's first word (Converse starts only tool-use
// blocks explicitly).
func (u *converseUpstream) delta(block int, d *cvBlockDelta, evs []canonical.Event) []canonical.Event {
	at, ok := u.blocks[block]
	start := func(kind canonical.PartType) {
		if ok {
			return
		}
		at, ok = u.open(block, kind), true
		ev := canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: kind}
		if kind == canonical.PartThinking {
			ev.Origin = canonical.OriginAnthropic
		}
		evs = append(evs, ev)
	}
	switch {
	case d.Text != nil:
		start(canonical.PartText)
		evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: *d.Text})
	case d.ToolUse != nil:
		if ok {
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: d.ToolUse.Input})
		}
	case d.ReasoningContent != nil:
		rc := d.ReasoningContent
		if rc.RedactedContent != nil {
			if !ok {
				at, ok = u.open(block, canonical.PartRedactedThinking), true
				evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: canonical.PartRedactedThinking, Origin: canonical.OriginAnthropic, Text: *rc.RedactedContent})
			}
			return evs
		}
		start(canonical.PartThinking)
		ev := canonical.Event{Kind: canonical.EventDelta, Index: at}
		if rc.Text != nil {
			ev.Text = *rc.Text
		}
		if rc.Signature != nil {
			ev.Signature = *rc.Signature
		}
		evs = append(evs, ev)
	}
	return evs
}

// closeAll ends the parts whose blocks never got a contentBlockStop, in
// the order they started.
func (u *converseUpstream) closeAll(evs []canonical.Event) []canonical.Event {
	for len(u.blocks) > 0 {
		first, at := 0, -1
		for b, i := range u.blocks {
			if at < 0 || i < at {
				first, at = b, i
			}
		}
		delete(u.blocks, first)
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: at})
	}
	return evs
}

// atEOF: a ConverseStream ends with messageStop then metadata; a stream
// that ended after messageStop without the usage is still whole.
func (u *converseUpstream) atEOF(evs []canonical.Event) ([]canonical.Event, bool) {
	if !u.finished {
		return evs, false
	}
	u.done = true
	return append(evs, canonical.Event{Kind: canonical.EventDone}), true
}

// converseStreamError is an exception ConverseStream sent in the stream
// (throttlingException, validationException, modelStreamErrorException
// …), as the error the caller sees.
func converseStreamError(typ, msg string) *canonical.Error {
	k := canonical.ErrServer
	switch strings.ToLower(typ) {
	case "throttlingexception":
		k = canonical.ErrRateLimit
	case "validationexception":
		k = canonical.ErrInvalidRequest
	case "serviceunavailableexception", "modelnotreadyexception":
		k = canonical.ErrOverloaded
	case "modeltimeoutexception":
		k = canonical.ErrTimeout
	case "accessdeniedexception":
		k = canonical.ErrPermission
	}
	if msg == "" {
		msg = "Bedrock reported " + typ + " in the stream."
	}
	return &canonical.Error{Kind: k, Status: canonical.StatusForKind(k), Message: msg, Code: typ}
}
