package canonical

// EventKind says what a stream Event carries.
type EventKind uint8

// Stream event kinds. A well-formed stream is: one EventStart; then parts,
// each EventPartStart, any EventDelta, EventPartEnd (parts may overlap, as
// Anthropic's blocks may); EventUsage whenever usage is known (each replaces
// the last); one EventFinish; EventDone. EventError may come at any point
// and ends the stream.
const (
	EventStart     EventKind = iota + 1 // ID, Model, Created; Usage holds what is known up front
	EventPartStart                      // Index, Part; ID, Name (tool calls); Text (redacted thinking data)
	EventDelta                          // Index; Text: text, thinking text or an argument JSON fragment; Signature: a thinking signature fragment
	EventPartEnd                        // Index
	EventUsage                          // Usage, cumulative
	EventFinish                         // Finish, StopSequence
	EventError                          // Err
	EventDone                           // the upstream's stream ended as it should
)

// String names the kind, for tests and logs.
func (k EventKind) String() string {
	switch k {
	case EventStart:
		return "start"
	case EventPartStart:
		return "part_start"
	case EventDelta:
		return "delta"
	case EventPartEnd:
		return "part_end"
	case EventUsage:
		return "usage"
	case EventFinish:
		return "finish"
	case EventError:
		return "error"
	case EventDone:
		return "done"
	}
	return "unknown"
}

// Event is one step of a streamed response. Index numbers the response's
// parts in the order the upstream started them, from 0 and without gaps;
// caller encoders derive their own numbering (block indices, per-response
// tool-call indices) from it.
type Event struct {
	Kind      EventKind
	Index     int
	Part      PartType // EventPartStart
	ID        string   // EventStart: response id; EventPartStart: tool call id
	Name      string   // EventStart: model; EventPartStart: tool name
	Model     string   // EventStart
	Created   int64    // EventStart
	Text      string
	Signature string // EventDelta: signature fragment; EventPartStart: tool-call signature
	Origin    Origin // EventPartStart of thinking: whose signature follows
	Usage     Usage
	Finish    FinishReason
	// StopSequence is set on EventFinish when known.
	StopSequence string
	Err          *Error
}

// Events appends the stream that delivers r whole: start, each part in one
// delta, usage, finish, done. Translators use it when a caller wants a
// stream but the upstream answered with one body.
func (r *Response) Events(dst []Event) []Event {
	start := Usage{Input: r.Usage.Input, CacheRead: r.Usage.CacheRead, CacheWrite: r.Usage.CacheWrite}
	dst = append(dst, Event{Kind: EventStart, ID: r.ID, Model: r.Model, Created: r.Created, Usage: start})
	for i := range r.Parts {
		p := &r.Parts[i]
		ev := Event{Kind: EventPartStart, Index: i, Part: p.Type, Origin: p.Origin}
		switch p.Type {
		case PartToolCall:
			if p.ToolCall == nil {
				continue
			}
			ev.ID, ev.Name, ev.Signature = p.ToolCall.ID, p.ToolCall.Name, p.ToolCall.Signature
			dst = append(dst, ev)
			if p.ToolCall.Arguments != "" {
				dst = append(dst, Event{Kind: EventDelta, Index: i, Text: p.ToolCall.Arguments})
			}
		case PartRedactedThinking:
			ev.Text = p.Signature
			dst = append(dst, ev)
		default:
			dst = append(dst, ev)
			if p.Text != "" {
				dst = append(dst, Event{Kind: EventDelta, Index: i, Text: p.Text})
			}
			if p.Signature != "" {
				dst = append(dst, Event{Kind: EventDelta, Index: i, Signature: p.Signature})
			}
		}
		dst = append(dst, Event{Kind: EventPartEnd, Index: i})
	}
	return append(dst,
		Event{Kind: EventUsage, Usage: r.Usage},
		Event{Kind: EventFinish, Finish: r.Finish, StopSequence: r.StopSequence},
		Event{Kind: EventDone})
}

// Accumulator builds a Response from stream events: the caller wanted one
// body but the upstream streamed, or a test wants to compare.
type Accumulator struct {
	Response Response
	// Err is the stream's error event, if it had one.
	Err *Error
	// Done reports that EventDone arrived.
	Done bool

	slots []int    // part index → position in Response.Parts
	text  [][]byte // by position: text, thinking or arguments
	sig   [][]byte // by position: signature
}

// Add folds one event in.
func (a *Accumulator) Add(ev *Event) {
	r := &a.Response
	switch ev.Kind {
	case EventStart:
		r.ID, r.Model, r.Created = ev.ID, ev.Model, ev.Created
		r.Usage = ev.Usage
	case EventPartStart:
		for len(a.slots) <= ev.Index {
			a.slots = append(a.slots, -1)
		}
		a.slots[ev.Index] = len(r.Parts)
		p := Part{Type: ev.Part, Origin: ev.Origin}
		switch ev.Part {
		case PartToolCall:
			p.ToolCall = &ToolCall{ID: ev.ID, Name: ev.Name, Signature: ev.Signature}
		case PartRedactedThinking:
			p.Signature = ev.Text
		}
		r.Parts = append(r.Parts, p)
		a.text = append(a.text, nil)
		a.sig = append(a.sig, nil)
	case EventDelta:
		if ev.Index < len(a.slots) && a.slots[ev.Index] >= 0 {
			at := a.slots[ev.Index]
			a.text[at] = append(a.text[at], ev.Text...)
			a.sig[at] = append(a.sig[at], ev.Signature...)
		}
	case EventUsage:
		r.Usage = ev.Usage
	case EventFinish:
		r.Finish, r.StopSequence = ev.Finish, ev.StopSequence
	case EventError:
		a.Err = ev.Err
	case EventDone:
		a.Done = true
	}
}

// Result returns the accumulated response.
func (a *Accumulator) Result() *Response {
	r := &a.Response
	for i := range r.Parts {
		p := &r.Parts[i]
		text, sig := string(a.text[i]), string(a.sig[i])
		switch p.Type {
		case PartToolCall:
			p.ToolCall.Arguments = text
		case PartRedactedThinking:
		default:
			p.Text = text
			if sig != "" {
				p.Signature = sig
			}
		}
	}
	return r
}
