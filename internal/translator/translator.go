package translator

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// ErrUnknownPair is asking for a translator Relay does not have.
var ErrUnknownPair = errors.New("no translator for this pair of shapes")

// Supports is the translator registry's answer to routing.Supports: a
// binding of shape up can serve a request in shape in when the shapes match
// (bytes pass through) or a translator exists for the pair.
func Supports(in wire.Inbound, up wire.Shape) bool {
	return Native(in, up) || pairOf(in, up) != nil
}

// Native reports whether a binding of shape up speaks the caller's own
// shape, so the request passes through untranslated.
func Native(in wire.Inbound, up wire.Shape) bool {
	switch in {
	case wire.InboundChat, wire.InboundEmbeddings:
		return up == wire.ShapeOpenAI
	case wire.InboundCompletions, wire.InboundImages, wire.InboundImageEdits, wire.InboundImageVariations,
		wire.InboundSpeech, wire.InboundTranscriptions, wire.InboundTranslations, wire.InboundModerations, wire.InboundRerank:
		return up == wire.ShapeOpenAI
	case wire.InboundResponses:
		return up == wire.ShapeOpenAIResponses
	case wire.InboundMessages, wire.InboundCountTokens:
		return up == wire.ShapeAnthropic
	case wire.InboundGemini, wire.InboundGeminiCountTokens, wire.InboundGeminiEmbed, wire.InboundGeminiBatchEmbed:
		return up == wire.ShapeGemini
	}
	return false
}

// Target is the binding a translator serves.
type Target struct {
	Shape         wire.Shape
	Model         string // the catalog model the caller asked for
	UpstreamModel string // the model name the upstream knows
	Host          string // the host slug, for messages
	// MaxOutputTokens is the model's catalog maximum output, the default
	// for Anthropic's required max_tokens; 0 when the catalog has none.
	MaxOutputTokens int64
	// Pricing is the binding's, for callers that asked for the cost with
	// their usage (Request.FullUsage); nil leaves the cost out.
	Pricing *snapshot.Pricing
}

// DefaultMaxTokens is Anthropic's max_tokens when neither the caller nor
// the model's catalog entry gives one.
const DefaultMaxTokens = 4096

// Request is a caller's request decoded once and shared by every attempt.
type Request struct {
	In wire.Inbound
	C  canonical.Request
	// E is an embeddings request (In is wire.InboundEmbeddings); C is
	// then empty.
	E canonical.EmbedRequest
	// FullUsage asks for the cost in the usage the caller sees
	// (X-Relay-Usage: full on /v1/generate); Target.Pricing prices it.
	FullUsage bool
	// Strict refuses, instead of dropping, every advisory field the
	// binding cannot carry (X-Relay-Strict: true): a 400
	// unsupported_feature naming the first, where the caller sent it.
	Strict bool
}

// StrictHeader is the request header that asks for strict mode.
const StrictHeader = "X-Relay-Strict"

// StrictRequested reports whether a StrictHeader value asks for strict
// mode: true or 1, in any case; anything else (absent included) does not.
func StrictRequested(v string) bool {
	v = strings.TrimSpace(v)
	return strings.EqualFold(v, "true") || v == "1"
}

// Decode reads a caller's body in shape in. Errors are *wire.Error: a
// malformed body is ErrMalformedRequest, a field Relay cannot translate
// whatever the binding ErrUnsupportedFeature; each names the field.
func Decode(in wire.Inbound, body []byte) (*Request, error) {
	r := &Request{In: in}
	var err error
	switch in {
	case wire.InboundChat:
		err = decodeChatRequest(body, &r.C)
	case wire.InboundMessages:
		err = decodeMessagesRequest(body, &r.C)
	case wire.InboundResponses:
		err = decodeResponsesRequest(body, &r.C)
	case wire.InboundGenerate:
		err = decodeGenerateRequest(body, &r.C)
	case wire.InboundEmbeddings:
		err = decodeEmbeddingsRequest(body, &r.E)
	case wire.InboundGemini:
		err = decodeGeminiRequest(body, &r.C)
	case wire.InboundGeminiEmbed, wire.InboundGeminiBatchEmbed:
		err = decodeGeminiEmbed(body, in == wire.InboundGeminiBatchEmbed, &r.E)
	default:
		return nil, fmt.Errorf("decode %s request: %w", in, ErrUnknownPair)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ForBinding adds the binding to a decoding error that refuses a field
// (Decode runs before any binding is known), so the caller learns which
// binding could not take it.
func ForBinding(err error, t Target) error {
	var we *wire.Error
	if !errors.As(err, &we) || !errors.Is(err, wire.ErrUnsupportedFeature) {
		return err
	}
	c := *we
	c.Msg = strings.TrimSuffix(c.Msg, ".") + fmt.Sprintf(" (the model %q on host %q is bound in shape %s).", t.Model, t.Host, t.Shape)
	return &c
}

// upstream is one binding shape's side of a pair. An instance serves one
// attempt and holds its stream state.
type upstream interface {
	// encode appends the upstream request body for x.r.
	encode(dst []byte, x *encoder) ([]byte, error)
	// path is the provider path (and query) to call.
	path(t *Target, stream bool) string
	// decodeResponse reads a whole 2xx body.
	decodeResponse(body []byte, r *canonical.Response) error
	// decodeEvent appends the canonical events one upstream SSE event
	// stands for.
	decodeEvent(ev *wire.Event, evs []canonical.Event) ([]canonical.Event, error)
	// atEOF appends what the end of the byte stream means and reports
	// whether the stream was complete (Gemini streams just end).
	atEOF(evs []canonical.Event) ([]canonical.Event, bool)
}

// caller is one inbound shape's side of a pair. An instance serves one
// attempt and holds its stream state.
type caller interface {
	response(dst []byte, r *canonical.Response) []byte
	event(dst []byte, ev *canonical.Event) []byte
	// errorBody appends an error body; the status is e.Status.
	errorBody(dst []byte, e *canonical.Error, requestID string) []byte
	// streamError appends an in-stream error event.
	streamError(dst []byte, e *canonical.Error) []byte
}

// Translator serves one attempt of one request through one binding.
type Translator struct {
	req    *Request
	target Target
	pair   *pairSpec
	up     upstream
	out    caller
	now    time.Time

	dropped []string // advisory fields the upstream request leaves out

	evs     []canonical.Event
	acc     *canonical.Accumulator // caller wants one body, upstream streams
	usage   canonical.Usage
	done    bool // the caller's stream is closed (end or error)
	errored bool // the stream ended with an error event
}

// New returns the translator for r through a binding t. now stamps
// responses whose upstream gives no time.
func New(r *Request, t Target, now time.Time) (*Translator, error) {
	p := pairOf(r.In, t.Shape)
	if p == nil {
		return nil, fmt.Errorf("translate %s to %s: %w", r.In, t.Shape, ErrUnknownPair)
	}
	tr := &Translator{req: r, target: t, pair: p, now: now}
	tr.up = p.newUpstream(now)
	inner := tr.up
	if s, ok := inner.(statelessUpstream); ok {
		inner = s.upstream
	}
	if m, ok := inner.(interface{ answersAs(string) }); ok {
		m.answersAs(t.UpstreamModel) // its answers do not name their model (Converse)
	}
	if c, ok := tr.up.(caller); ok {
		tr.out = c // embeddings: the vectors it decodes are what it writes
	} else {
		tr.out = p.newCaller(&r.C)
	}
	if pc, ok := tr.out.(interface{ price(*snapshot.Pricing) }); ok && r.FullUsage && t.Pricing != nil {
		pc.price(t.Pricing)
	}
	if !r.C.Stream {
		tr.acc = &canonical.Accumulator{}
	}
	return tr, nil
}

// Pair names the translator's pair, e.g. "chat→anthropic".
func (t *Translator) Pair() string { return t.pair.name }

// Path is the upstream path (with query) to call.
func (t *Translator) Path() string { return t.up.path(&t.target, t.req.C.Stream) }

// AppendRequest appends the upstream request body. A feature the binding
// cannot express is a *wire.Error of kind wire.ErrUnsupportedFeature.
func (t *Translator) AppendRequest(dst []byte) ([]byte, error) {
	x := &encoder{r: &t.req.C, e: &t.req.E, in: t.req.In, t: &t.target, pair: t.pair}
	x.dropped = append(x.dropped, t.req.C.Advisory...)
	dst, err := t.up.encode(dst, x)
	t.dropped = x.dropped
	if err == nil && t.req.Strict && len(x.dropped) > 0 {
		return dst, x.refuseDropped(x.dropped[0])
	}
	return dst, err
}

// Dropped names the caller's advisory fields the upstream request left out
// (AppendRequest decides), comma-separated, for X-Relay-Dropped-Fields; ""
// when none were.
func (t *Translator) Dropped() string { return strings.Join(t.dropped, ",") }

// AppendResponse translates a whole 2xx upstream body into the caller's
// shape: one body, or a stream when the caller asked for one. An
// untranslatable body is a *wire.Error of kind wire.ErrUpstream.
func (t *Translator) AppendResponse(dst, body []byte) ([]byte, error) {
	var r canonical.Response
	if err := t.up.decodeResponse(body, &r); err != nil {
		return dst, wire.Errorf(wire.ErrUpstream, "The upstream's answer could not be translated: %v.", err)
	}
	if r.Created == 0 {
		r.Created = t.now.Unix()
	}
	t.usage = r.Usage
	if !t.req.C.Stream {
		return t.out.response(dst, &r), nil
	}
	t.evs = r.Events(t.evs[:0])
	for i := range t.evs {
		dst = t.out.event(dst, &t.evs[i])
	}
	t.done = true
	return dst, nil
}

// AppendEvent translates one upstream SSE event, appending the caller's
// events it produces (none, when the caller wants one body: they are
// collected for AppendCollected). An event that cannot be translated ends
// the stream with an error event in the caller's shape and returns the
// decoding error.
func (t *Translator) AppendEvent(dst []byte, ev wire.Event) ([]byte, error) {
	if t.done {
		return dst, nil
	}
	evs, err := t.up.decodeEvent(&ev, t.evs[:0])
	t.evs = evs
	dst = t.emit(dst)
	if err != nil && !t.done {
		e := &canonical.Error{Kind: canonical.ErrServer, Status: http.StatusBadGateway,
			Message: "The upstream sent a stream event Relay could not translate: " + err.Error() + "."}
		dst = t.fail(dst, e)
	}
	return dst, err
}

// AppendEnd is called when the upstream's byte stream ended cleanly. It
// closes the caller's stream when the upstream's was complete and reports
// whether it was; otherwise the caller should get AppendBroken.
func (t *Translator) AppendEnd(dst []byte) ([]byte, bool) {
	if t.done {
		return dst, true
	}
	evs, ok := t.up.atEOF(t.evs[:0])
	t.evs = evs
	dst = t.emit(dst)
	return dst, ok && t.done
}

// AppendBroken ends the caller's stream with an error event saying msg:
// the upstream stream broke after it began.
func (t *Translator) AppendBroken(dst []byte, msg string) []byte {
	if t.done {
		return dst
	}
	return t.fail(dst, &canonical.Error{Kind: canonical.ErrServer, Status: http.StatusBadGateway, Code: wire.StreamErrorCode, Message: msg})
}

// AppendCollected appends the whole caller body for a streamed upstream
// answer collected by AppendEvent, with the status to send: 200, or an
// error status when the stream carried an error.
func (t *Translator) AppendCollected(dst []byte, requestID string) ([]byte, int) {
	if t.acc == nil {
		return dst, http.StatusOK
	}
	if e := t.acc.Err; e != nil {
		return t.out.errorBody(dst, e, requestID), e.Status
	}
	r := t.acc.Result()
	if r.Created == 0 {
		r.Created = t.now.Unix()
	}
	return t.out.response(dst, r), http.StatusOK
}

// AppendError translates an upstream error answer (status, body) into the
// caller's error shape; it returns the status to send.
func (t *Translator) AppendError(dst []byte, status int, body []byte, requestID string) ([]byte, int) {
	e := upstreamError(status, body)
	return t.out.errorBody(dst, e, requestID), e.Status
}

// Done reports that the caller's stream is closed.
func (t *Translator) Done() bool { return t.done }

// Errored reports that the stream ended with an error event (the
// upstream's own, or Relay's).
func (t *Translator) Errored() bool { return t.errored }

// Usage is the usage the upstream reported, mapped to wire.Usage.
func (t *Translator) Usage() wire.Usage { return wire.Usage(t.usage) }

// emit hands t.evs to the caller's encoder (or the accumulator).
func (t *Translator) emit(dst []byte) []byte {
	for i := range t.evs {
		ev := &t.evs[i]
		switch ev.Kind {
		case canonical.EventStart:
			t.usage = ev.Usage
		case canonical.EventUsage:
			t.usage = ev.Usage
		}
		if t.acc != nil {
			t.acc.Add(ev)
		} else {
			dst = t.out.event(dst, ev)
		}
		switch ev.Kind {
		case canonical.EventDone:
			t.done = true
		case canonical.EventError:
			t.done, t.errored = true, true
		}
		if t.done {
			break
		}
	}
	return dst
}

func (t *Translator) fail(dst []byte, e *canonical.Error) []byte {
	t.done, t.errored = true, true
	if t.acc != nil {
		t.acc.Err = e
		return dst
	}
	return t.out.streamError(dst, e)
}
