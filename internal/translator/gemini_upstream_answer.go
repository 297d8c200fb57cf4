package translator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Google Gemini, upstream side: decode a whole answer, then the event
// stream, then an embeddings answer.

func (u *geminiUpstream) decodeResponse(body []byte, r *canonical.Response) error {
	var g gemResponse
	if err := json.Unmarshal(body, &g); err != nil {
		return fmt.Errorf("decode generateContent response: %w", err)
	}
	if g.Error != nil {
		return fmt.Errorf("the response is an error: %s", g.Error.Message)
	}
	r.ID, r.Model, r.Created = g.ResponseID, g.ModelVersion, u.now.Unix()
	if g.UsageMetadata != nil {
		r.Usage = g.UsageMetadata.canonical()
	}
	if len(g.Candidates) == 0 {
		if g.PromptFeedback != nil && g.PromptFeedback.BlockReason != "" {
			r.Finish = canonical.FinishContentFilter
			return nil
		}
		return fmt.Errorf("the response has no candidates")
	}
	c := g.Candidates[0]
	calls := 0
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				id := geminiCallID(g.ResponseID, calls, p.FunctionCall.ID, p.ThoughtSignature)
				calls++
				r.Parts = append(r.Parts, canonical.Part{Type: canonical.PartToolCall, ToolCall: &canonical.ToolCall{ID: id, Name: p.FunctionCall.Name, Arguments: argsText(p.FunctionCall.Args), Signature: p.ThoughtSignature}})
			case p.Text != "":
				kind := canonical.PartText
				if p.Thought {
					kind = canonical.PartThinking
				}
				if n := len(r.Parts); n > 0 && r.Parts[n-1].Type == kind {
					r.Parts[n-1].Text += p.Text
				} else {
					part := canonical.Part{Type: kind, Text: p.Text}
					if kind == canonical.PartThinking {
						part.Origin = canonical.OriginGemini
					}
					r.Parts = append(r.Parts, part)
				}
			}
		}
	}
	r.Finish = finishFromGemini(c.FinishReason, calls > 0)
	return nil
}

func (u *geminiUpstream) decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return evs, nil
	}
	var g gemResponse
	if err := json.Unmarshal(data, &g); err != nil {
		return evs, fmt.Errorf("decode generateContent chunk: %w", err)
	}
	if u.finished {
		// A trailing chunk may still bring the final usage.
		if g.UsageMetadata != nil {
			evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: g.UsageMetadata.canonical()})
		}
		return evs, nil
	}
	if g.Error != nil {
		u.finished = true
		e := streamErrorOf(g.Error.Status, g.Error.Code, g.Error.Message)
		return append(evs, canonical.Event{Kind: canonical.EventError, Err: e}), nil
	}
	if !u.started {
		u.started = true
		u.responseID = g.ResponseID
		ev := canonical.Event{Kind: canonical.EventStart, ID: g.ResponseID, Model: g.ModelVersion, Created: u.now.Unix()}
		if g.UsageMetadata != nil {
			ev.Usage = g.UsageMetadata.canonical()
			ev.Usage.Output, ev.Usage.Reasoning = 0, 0
		}
		evs = append(evs, ev)
	}
	finish := ""
	if len(g.Candidates) > 0 {
		c := g.Candidates[0]
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					evs = u.closeOpen(evs)
					at := u.next
					u.next++
					id := geminiCallID(u.responseID, u.calls, p.FunctionCall.ID, p.ThoughtSignature)
					u.calls++
					evs = append(evs,
						canonical.Event{Kind: canonical.EventPartStart, Index: at, Part: canonical.PartToolCall, ID: id, Name: p.FunctionCall.Name, Signature: p.ThoughtSignature},
						canonical.Event{Kind: canonical.EventDelta, Index: at, Text: argsText(p.FunctionCall.Args)},
						canonical.Event{Kind: canonical.EventPartEnd, Index: at})
				case p.Text != "":
					kind := canonical.PartText
					if p.Thought {
						kind = canonical.PartThinking
					}
					if u.open < 0 || u.openKind != kind {
						evs = u.closeOpen(evs)
						u.open, u.openKind = u.next, kind
						u.next++
						start := canonical.Event{Kind: canonical.EventPartStart, Index: u.open, Part: kind}
						if kind == canonical.PartThinking {
							start.Origin = canonical.OriginGemini
						}
						evs = append(evs, start)
					}
					evs = append(evs, canonical.Event{Kind: canonical.EventDelta, Index: u.open, Text: p.Text})
				}
			}
		}
		finish = c.FinishReason
	} else if g.PromptFeedback != nil && g.PromptFeedback.BlockReason != "" {
		u.blocked = true
	}
	if g.UsageMetadata != nil {
		evs = append(evs, canonical.Event{Kind: canonical.EventUsage, Usage: g.UsageMetadata.canonical()})
	}
	if finish != "" || u.blocked {
		u.finished = true
		evs = u.closeOpen(evs)
		f := canonical.FinishContentFilter
		if !u.blocked {
			f = finishFromGemini(finish, u.calls > 0)
		}
		evs = append(evs, canonical.Event{Kind: canonical.EventFinish, Finish: f})
	}
	return evs, nil
}

func (u *geminiUpstream) closeOpen(evs []canonical.Event) []canonical.Event {
	if u.open >= 0 {
		evs = append(evs, canonical.Event{Kind: canonical.EventPartEnd, Index: u.open})
		u.open = -1
	}
	return evs
}

// atEOF: Gemini streams just end; the stream was whole when its last chunk
// carried a finish reason (or the prompt was blocked).
func (u *geminiUpstream) atEOF(evs []canonical.Event) ([]canonical.Event, bool) {
	if !u.finished {
		return evs, false
	}
	return append(evs, canonical.Event{Kind: canonical.EventDone}), true
}

// --- embeddings (batchEmbedContents) ---

type gemBatchEmbedResponse struct {
	Embeddings []struct {
		Values []float32 `json:"values"`
	} `json:"embeddings"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// decodeGeminiEmbeddings reads a batchEmbedContents answer: one vector per
// request, in order. Every vector must have values.
func decodeGeminiEmbeddings(body []byte) ([][]float32, error) {
	var g gemBatchEmbedResponse
	if err := json.Unmarshal(body, &g); err != nil {
		return nil, fmt.Errorf("decode batchEmbedContents response: %w", err)
	}
	if g.Error != nil {
		return nil, fmt.Errorf("the response is an error: %s", g.Error.Message)
	}
	if g.Embeddings == nil {
		return nil, errors.New("the response holds no embeddings")
	}
	out := make([][]float32, len(g.Embeddings))
	for i := range g.Embeddings {
		if len(g.Embeddings[i].Values) == 0 {
			return nil, fmt.Errorf("embedding %d has no values", i)
		}
		out[i] = g.Embeddings[i].Values
	}
	return out, nil
}
