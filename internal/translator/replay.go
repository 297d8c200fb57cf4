package translator

import (
	"fmt"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// What the response cache (package cache, through the proxy) needs from
// the translator: an upstream answer of any binding shape read into one
// canonical.Response (Collector), and a canonical.Response written in any
// caller's shape, whole or as that caller's stream (Replay). Both reuse the
// shapes' own decoders and encoders, so a cached answer reads exactly as a
// translated one would.

// Collector reads one upstream answer — a whole body, or its stream event
// by event — into a canonical.Response.
type Collector struct {
	up  upstream
	now time.Time
	acc canonical.Accumulator
	evs []canonical.Event
	err error
}

// NewCollector returns a Collector for an upstream of shape up, or an
// error wrapping ErrUnknownPair for a shape it cannot read.
func NewCollector(up wire.Shape, now time.Time) (*Collector, error) {
	var u upstream
	switch up {
	case wire.ShapeOpenAI:
		u = newOpenAIUpstream(now)
	case wire.ShapeAnthropic:
		u = newAnthropicUpstream(now)
	case wire.ShapeOpenAIResponses:
		u = newResponsesUpstream(now)
	case wire.ShapeGemini:
		u = newGeminiUpstream(now)
	default:
		return nil, fmt.Errorf("collect a %s answer: %w", up, ErrUnknownPair)
	}
	return &Collector{up: u, now: now}, nil
}

// Body reads a whole 2xx upstream body.
func (c *Collector) Body(body []byte) (*canonical.Response, error) {
	var r canonical.Response
	if err := c.up.decodeResponse(body, &r); err != nil {
		return nil, err
	}
	if r.Created == 0 {
		r.Created = c.now.Unix()
	}
	return &r, nil
}

// Event folds in one upstream SSE event. After an error it ignores the
// rest.
func (c *Collector) Event(ev wire.Event) {
	if c.err != nil || c.acc.Done {
		return
	}
	c.evs, c.err = c.up.decodeEvent(&ev, c.evs[:0])
	for i := range c.evs {
		c.acc.Add(&c.evs[i])
	}
}

// Text appends the text the last Event decoded — answer and thinking text
// and tool-call argument fragments — for the guardrails.
func (c *Collector) Text(dst []byte) []byte {
	for i := range c.evs {
		if c.evs[i].Kind == canonical.EventDelta {
			dst = append(dst, c.evs[i].Text...)
		}
	}
	return dst
}

// End is called when the upstream's byte stream ended cleanly; it returns
// the answer when the stream was complete and carried no error, else nil.
func (c *Collector) End() *canonical.Response {
	if c.err != nil {
		return nil
	}
	if !c.acc.Done {
		evs, ok := c.up.atEOF(c.evs[:0])
		for i := range evs {
			c.acc.Add(&evs[i])
		}
		if !ok {
			return nil
		}
	}
	if c.acc.Err != nil || !c.acc.Done {
		return nil
	}
	r := c.acc.Result()
	if r.Created == 0 {
		r.Created = c.now.Unix()
	}
	return r
}

// Replay appends resp in the caller's shape of r: one body, or — when r
// asks for a stream — the caller's whole stream of events, ended the way
// its SDK expects. An inbound shape without a generation answer (embeddings,
// token counts) is an error wrapping ErrUnknownPair.
func Replay(dst []byte, r *Request, resp *canonical.Response) ([]byte, error) {
	var out caller
	switch r.In {
	case wire.InboundChat:
		out = newChatCaller(&r.C)
	case wire.InboundMessages:
		out = newMessagesCaller(&r.C)
	case wire.InboundResponses:
		out = newResponsesCaller(&r.C)
	case wire.InboundGenerate:
		out = newGenerateCaller(&r.C)
	case wire.InboundGemini:
		out = newGeminiCaller(&r.C)
	default:
		return dst, fmt.Errorf("replay to %s: %w", r.In, ErrUnknownPair)
	}
	if !r.C.Stream {
		return out.response(dst, resp), nil
	}
	evs := resp.Events(nil)
	for i := range evs {
		dst = out.event(dst, &evs[i])
	}
	return dst, nil
}
