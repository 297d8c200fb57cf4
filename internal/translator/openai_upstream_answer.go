package translator

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// OpenAI Chat Completions, upstream side: decode a whole completion, then
// the chunk stream.

func (u *openaiUpstream) decodeResponse(body []byte, r *canonical.Response) error {
	var c chatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("decode chat completion: %w", err)
	}
	if c.Error != nil {
		return fmt.Errorf("the completion is an error: %s", c.Error.Message)
	}
	r.ID, r.Model, r.Created = c.ID, c.Model, c.Created
	if c.Usage != nil {
		r.Usage = c.Usage.canonical()
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 || ch.Message == nil {
			continue
		}
		m := ch.Message
		if t := m.reasoning(); t != "" {
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartThinking, Text: t})
		}
		if m.Content != nil && *m.Content != "" {
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartText, Text: *m.Content})
		}
		if m.Refusal != nil && *m.Refusal != "" {
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartRefusal, Text: *m.Refusal})
		}
		for _, tc := range m.ToolCalls {
			r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		}
		if ch.FinishReason != nil {
			r.Finish = finishFromChat(*ch.FinishReason)
		}
		if m.Refusal != nil && *m.Refusal != "" && r.Finish == canonical.FinishStop {
			r.Finish = canonical.FinishRefusal
		}
	}
	if len(c.Choices) == 0 {
		return fmt.Errorf("the completion has no choices")
	}
	return nil
}

func (u *openaiUpstream) decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || u.completed {
		return evs, nil
	}
	if string(data) == "[DONE]" {
		u.completed = true
		evs = u.closeAll(evs)
		if !u.finished {
			u.finished = true
			evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: canonical.FinishStop})
		}
		return append(evs, canonical.Event{Kind: canonical.EventDone}), nil
	}
	var c chatCompletion
	if err := json.Unmarshal(data, &c); err != nil {
		return evs, fmt.Errorf("decode chat chunk: %w", err)
	}
	if c.Error != nil {
		u.completed = true
		var code string
		_ = json.Unmarshal(c.Error.Code, &code)
		typ := c.Error.Type
		if code != "" {
			typ = code
		}
		e := streamErrorOf(typ, 0, c.Error.Message)
		return append(evs, canonical.Event{Kind: canonical.EventError, Err: e}), nil
	}
	if !u.started && len(c.Choices) == 0 && c.Usage == nil {
		// Azure rates the prompt in a chunk of its own before the answer
		// (prompt_filter_results, no id, model or choices): the answer's
		// id and model come in the next.
		return evs, nil
	}
	if !u.started {
		u.started = true
		created := c.Created
		if created == 0 {
			created = u.now.Unix()
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventStart, ID: c.ID, Model: c.Model, Created: created})
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if d := ch.Delta; d != nil {
			if t := d.reasoning(); t != "" {
				evs = u.textDelta(evs, canonical.PartThinking, t)
			}
			if d.Content != nil && *d.Content != "" {
				evs = u.textDelta(evs, canonical.PartText, *d.Content)
			}
			if d.Refusal != nil && *d.Refusal != "" {
				evs = u.textDelta(evs, canonical.PartRefusal, *d.Refusal)
			}
			for _, tc := range d.ToolCalls {
				idx := 0
				if tc.Index != nil {
					idx = *tc.Index
				}
				at, ok := u.tools[idx]
				if !ok {
					evs = u.closeOpen(evs)
					if u.lastTool >= 0 {
						evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: u.lastTool})
					}
					if u.tools == nil {
						u.tools = map[int]int{}
					}
					at = u.next
					u.next++
					u.tools[idx] = at
					u.lastTool = at
					u.sawTools = true
					evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: canonical.PartToolCall, ID: tc.ID, Name: tc.Function.Name})
				}
				if tc.Function.Arguments != "" {
					evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: at, Text: tc.Function.Arguments})
				}
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" && !u.finished {
			u.finished = true
			evs = u.closeAll(evs)
			f := finishFromChat(*ch.FinishReason)
			if f == canonical.FinishStop && u.sawTools {
				f = canonical.FinishToolCalls
			}
			evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: f})
		}
	}
	if c.Usage != nil {
		evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: c.Usage.canonical()})
	}
	return evs, nil
}

// textDelta appends text to the open part of that kind, opening one.
func (u *openaiUpstream) textDelta(evs []canonical.Event, kind canonical.PartType, text string) []canonical.Event {
	if u.open < 0 || u.openKind != kind {
		evs = u.closeOpen(evs)
		u.open, u.openKind = u.next, kind
		u.next++
		evs = append(evs, canonical.Event{Kind: canonical.EventPartStart, Index: u.open, Part: kind})
	}
	return append(evs, canonical.Event{Kind: canonical.EventDelta, Index: u.open, Text: text})
}

func (u *openaiUpstream) closeOpen(evs []canonical.Event) []canonical.Event {
	if u.open >= 0 {
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: u.open})
		u.open = -1
	}
	return evs
}

func (u *openaiUpstream) closeAll(evs []canonical.Event) []canonical.Event {
	evs = u.closeOpen(evs)
	if u.lastTool >= 0 {
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: u.lastTool})
		u.lastTool = -1
	}
	return evs
}

func (u *openaiUpstream) atEOF(evs []canonical.Event) ([]canonical.Event, bool) {
	return evs, u.completed
}
