package translator

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Anthropic Messages, upstream side: decode a whole message, then the
// event stream.

func (u *anthropicUpstream) decodeResponse(body []byte, r *canonical.Response) error {
	var m anthResponse
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("decode message: %w", err)
	}
	if m.Type != "message" {
		return fmt.Errorf("the body is not a message (type %q)", m.Type)
	}
	r.ID, r.Model, r.Created = m.ID, m.Model, u.now.Unix()
	for i := range m.Content {
		if p, ok := anthOutPart(&m.Content[i]); ok {
			r.Parts = append(r.Parts, p)
		}
	}
	if m.StopReason != nil {
		r.Finish = finishFromAnthropic(*m.StopReason)
	}
	if m.StopSequence != nil {
		r.StopSequence = *m.StopSequence
	}
	var c anthCounts
	c.merge(m.Usage)
	r.Usage = c.canonical()
	return nil
}

// anthOutPart reads an output block; ok is false for blocks Relay does not
// carry (server tool results and the like).
func anthOutPart(b *anthBlock) (canonical.Part, bool) {
	switch b.Type {
	case "text":
		if b.Text == nil {
			return canonical.Part{Type: canonical.PartText}, true
		}
		return canonical.Part{Type: canonical.PartText, Text: *b.Text}, true
	case "thinking":
		p := canonical.Part{Type: canonical.PartThinking, Origin: canonical.OriginAnthropic}
		if b.Thinking != nil {
			p.Text = *b.Thinking
		}
		if b.Signature != nil {
			p.Signature = *b.Signature
		}
		return p, true
	case "redacted_thinking":
		return canonical.Part{Type: canonical.PartRedactedThinking, Signature: b.Data, Origin: canonical.OriginAnthropic}, true
	case "tool_use":
		return canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: b.ID, Name: b.Name, Arguments: argsText(b.Input)}}, true
	}
	return canonical.Part{}, false
}

func (u *anthropicUpstream) decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || u.completed {
		return evs, nil
	}
	var e anthEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return evs, fmt.Errorf("decode %s event: %w", eventType(ev), err)
	}
	typ := e.Type
	if len(ev.Name) > 0 {
		typ = string(ev.Name)
	}
	switch typ {
	case "message_start":
		if e.Message == nil {
			return evs, fmt.Errorf("message_start without a message")
		}
		u.started = true
		u.counts.merge(e.Message.Usage)
		start := u.counts.canonical()
		// Output as reported so far (Anthropic sends a placeholder, usually 1): a caller that leaves now is charged what the upstream reported.
		evs = append(evs, canonical.Event{Kind: canonical.EventStart, ID: e.Message.ID, Model: e.Message.Model, Created: u.now.Unix(), Usage: start})
	case "content_block_start":
		if e.ContentBlock == nil {
			return evs, fmt.Errorf("content_block_start without a block")
		}
		p, ok := anthOutPart(e.ContentBlock)
		if !ok {
			return evs, nil
		}
		if u.parts == nil {
			u.parts = map[int]int{}
		}
		at := u.next
		u.next++
		u.parts[e.Index] = at
		start := canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: p.Type, Origin: p.Origin}
		switch p.Type {
		case canonical.PartToolCall:
			start.ID, start.Name = p.ToolCall.ID, p.ToolCall.Name
			evs = append(evs, start)
			if a := p.ToolCall.Arguments; a != "{}" && a != "" {
				evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: a})
			}
		case canonical.PartRedactedThinking:
			start.Text = p.Signature
			evs = append(evs, start)
		default:
			evs = append(evs, start)
			if p.Text != "" || p.Signature != "" {
				evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: p.Text, Signature: p.Signature})
			}
		}
	case "content_block_delta":
		at, ok := u.parts[e.Index]
		if !ok || e.Delta == nil {
			return evs, nil
		}
		d := e.Delta
		switch d.Type {
		case "text_delta":
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: d.Text})
		case "input_json_delta":
			if d.PartialJSON != "" {
				evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: d.PartialJSON})
			}
		case "thinking_delta":
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: d.Thinking})
		case "signature_delta":
			evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Signature: d.Signature})
		}
	case "content_block_stop":
		if at, ok := u.parts[e.Index]; ok {
			evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: at})
		}
	case "message_delta":
		u.counts.merge(e.Usage)
		evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: u.counts.canonical()})
		if e.Delta != nil && e.Delta.StopReason != nil {
			f := canonical.Event{Kind: canonical.EventFinish, Finish: finishFromAnthropic(*e.Delta.StopReason)}
			if e.Delta.StopSequence != nil {
				f.StopSequence = *e.Delta.StopSequence
			}
			evs = append(evs, f)
		}
	case "message_stop":
		u.completed = true
		evs = append(evs, canonical.Event{Kind: canonical.EventDone})
	case "error":
		u.completed = true
		var typ, msg string
		if e.Error != nil {
			typ, msg = e.Error.Type, e.Error.Message
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventError, Err: streamErrorOf(typ, 0, msg)})
	}
	return evs, nil
}

func (u *anthropicUpstream) atEOF(evs []canonical.Event) ([]canonical.Event, bool) {
	return evs, u.completed
}
