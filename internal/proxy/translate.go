package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/profile"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/translator"
	"github.com/relay-llm/relay/internal/wire"
)

// Bindings whose shape is not the caller's are served through package
// translator: the request is decoded once, encoded per binding, and the
// answer translated back event by event. Everything else about an attempt
// (keys, breakers, timeouts, failover before the first byte, usage
// records) is the same as on the passthrough path.

// translatable readies candidate c. A binding of the caller's own shape
// needs nothing. For another shape it decodes the caller's body (once per
// request) and encodes it for c; a request the binding cannot express
// leaves c out, and the reason answers the caller if no binding is left.
func (rq *request) translatable(c *routing.Candidate) bool {
	rq.attempt.xl = nil
	rq.w.Header().Del(droppedFieldsHeader)
	if translator.Native(rq.in, c.Binding.Shape) {
		rq.xlServed = true
		return true
	}
	t := translator.Target{Shape: c.Binding.Shape, Model: rq.plan.Model.Name, UpstreamModel: c.Binding.UpstreamModel, MaxOutputTokens: int64(rq.plan.Model.MaxOutputTokens), Pricing: &c.Binding.Pricing}
	if c.Host != nil {
		t.Host = c.Host.Slug
	}
	if err := rq.decodeCaller(); err != nil {
		rq.untranslatable(translator.ForBinding(err, t))
		return false
	}
	tr, err := translator.New(rq.xin, t, rq.at)
	if err != nil {
		rq.untranslatable(wire.Errorf(wire.ErrShapeNotServed, "The model %q has no binding that serves %s requests.", t.Model, rq.in))
		return false
	}
	if rq.sending.Load() > 0 {
		rq.attempt.xlBody = nil // an earlier attempt's body may still be on the wire
	}
	body, err := tr.AppendRequest(rq.attempt.xlBody[:0])
	if err != nil {
		rq.untranslatable(err)
		return false
	}
	rq.attempt.xlBody, rq.attempt.xl, rq.xlServed = body, tr, true
	if d := tr.Dropped(); d != "" {
		rq.setHeader(rq.w.Header(), droppedFieldsHeader, d)
	}
	return true
}

// decodeCaller decodes the caller's body, once per request (rq.xin): for
// a binding of another shape, or for the response cache.
func (rq *request) decodeCaller() error {
	if rq.xin != nil || rq.xinErr != nil {
		return rq.xinErr
	}
	rq.xin, rq.xinErr = translator.Decode(rq.in, rq.decodable())
	if rq.xinErr != nil {
		return rq.xinErr
	}
	// X-Relay-Usage: full asks /v1/generate for the cost with the usage.
	rq.xin.FullUsage = rq.in == wire.InboundGenerate && strings.EqualFold(strings.TrimSpace(rq.r.Header.Get("X-Relay-Usage")), "full")
	// X-Relay-Strict: true refuses what a binding would drop.
	rq.xin.Strict = translator.StrictRequested(rq.r.Header.Get(translator.StrictHeader))
	if rq.scan.ModelInPath {
		rq.xin.FromPath(rq.scan.Model, rq.stream)
	}
	rq.stateDecoded()
	return nil
}

// droppedFieldsHeader names, on a translated answer, the caller's advisory
// fields (hints the binding's shape cannot carry) the upstream request
// left out: JSON paths, comma-separated.
const droppedFieldsHeader = "X-Relay-Dropped-Fields"

// untranslatable keeps the first reason a binding was left out.
func (rq *request) untranslatable(err error) {
	if rq.xlErr == nil {
		rq.xlErr = err
	}
}

// upstreamRequest is the body, whether usage was asked for on the caller's
// behalf, and the URL of an attempt through c.
func (rq *request) upstreamRequest(c *routing.Candidate) ([]byte, bool, string) {
	if c.Host.Profile != "" {
		return rq.profiledRequest(c)
	}
	if rq.attempt.xl != nil {
		return rq.attempt.xlBody, false, wire.JoinURL(c.Host.BaseURL, rq.attempt.xl.Path())
	}
	if rq.scan.ModelInPath {
		body, url := rq.geminiUpstream(c)
		return body, false, url
	}
	body, injected := rq.upstreamBody(c.Binding, false)
	url := wire.JoinURL(c.Host.BaseURL, wire.UpstreamPath(rq.in, c.Binding.Shape))
	if q := rq.r.URL.RawQuery; q != "" {
		url += "?" + q
	}
	return body, injected, url
}

// profiledRequest is upstreamRequest for a host with a profile: the body
// and public path the plain API would get, laid out and rewritten by the
// profile (package profile).
func (rq *request) profiledRequest(c *routing.Candidate) ([]byte, bool, string) {
	p := profile.Lookup(c.Host.Profile)
	call := profile.Call{Shape: c.Binding.Shape, Model: c.Binding.UpstreamModel, Stream: rq.stream}
	var body []byte
	var injected bool
	switch {
	case rq.attempt.xl != nil:
		body = rq.attempt.xlBody
		call.Path, call.Query, _ = strings.Cut(rq.attempt.xl.Path(), "?")
	case rq.scan.ModelInPath:
		var u string
		body, u = rq.geminiUpstream(c)
		// The public path again, without the base URL the plain API joins.
		call.Path, call.Query, _ = strings.Cut(strings.TrimPrefix(u, strings.TrimRight(c.Host.BaseURL, "/")), "?")
		if !strings.HasPrefix(call.Path, "/v1beta/") {
			call.Path = "/v1beta" + call.Path
		}
	default:
		call.Path, call.Query = wire.UpstreamPath(rq.in, c.Binding.Shape), rq.r.URL.RawQuery
		call.Header = rq.r.Header
		body, injected = rq.upstreamBody(c.Binding, p.Drops(call, "stream_options"))
	}
	if c.Binding.Shape == wire.ShapeGemini {
		call.Model = strings.TrimPrefix(call.Model, "models/")
	}
	if p.ChangesBody(call) {
		if d := p.DroppedHeaders(body, call); d != "" {
			rq.setHeader(rq.w.Header(), droppedFieldsHeader, d)
		}
		if out, err := p.Body(nil, body, call); err == nil {
			body = out // else the upstream says what is wrong with it
		}
	}
	return body, injected, p.URL(c.Host.BaseURL, c.Host.ProfileParams, call)
}

// passTranslatedError answers an upstream 4xx that is the caller's own
// fault in the caller's error shape, keeping the status.
func (rq *request) passTranslatedError(resp *http.Response, secret snapshot.Secret) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	resp.Body.Close()
	if s := secret.Reveal(); s != "" && bytes.Contains(body, []byte(s)) {
		body = bytes.ReplaceAll(body, []byte(s), []byte("[redacted]"))
	}
	var status int
	rq.out, status = rq.attempt.xl.AppendError(rq.out[:0], resp.StatusCode, body, rq.id)
	copyResponseHeaders(rq.w.Header(), resp.Header)
	rq.respond(status, "application/json", rq.out)
	rq.errKind = event.KindUpstreamClientError
	rq.errMsg = "upstream answered " + strconv.Itoa(resp.StatusCode)
}

// pipeTranslated sends a 2xx answer from a translated binding: a stream
// event by event, or a whole body, in whichever form the caller asked for.
func (rq *request) pipeTranslated(ctx, actx context.Context, cancel context.CancelCauseFunc, body io.Reader, resp *http.Response) keypool.Result {
	rq.w.Header().Del("Content-Length")
	if isEventStream(resp.Header.Get("Content-Type")) {
		if rq.stream {
			return rq.translateStream(ctx, actx, cancel, body)
		}
		return rq.collectStream(ctx, actx, body)
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxEventBytes))
	if err != nil {
		if ctx.Err() != nil {
			rq.canceled()
			return keypool.Result{Outcome: keypool.OutcomeNeutral}
		}
		what, _ := describe(err, actx)
		rq.fail(wire.Errorf(wire.ErrUpstream, "The upstream's answer broke off: %s.", what))
		return keypool.Result{Outcome: keypool.OutcomeFailure, Reason: what}
	}
	if rq.rc != nil {
		rq.rc.wholeBody(raw)
	}
	out, err := rq.attempt.xl.AppendResponse(rq.out[:0], raw)
	if err != nil {
		rq.fail(err)
		return keypool.Result{Outcome: keypool.OutcomeFailure, Reason: "untranslatable answer"}
	}
	if rq.gd.answers() {
		rq.gd.beginAnswer(rq.attempt.cand.Binding.Shape, false, rq.at)
		var ok bool
		if out, ok = rq.checkWhole(out, raw); !ok {
			rq.usage = rq.attempt.xl.Usage()
			return keypool.Result{Outcome: keypool.OutcomeSuccess}
		}
	}
	rq.out = out
	rq.usage = rq.attempt.xl.Usage()
	rq.keepAnswer(out, "")
	if !rq.stream {
		rq.respond(http.StatusOK, "application/json", out)
		return keypool.Result{Outcome: keypool.OutcomeSuccess}
	}
	// The caller wants a stream; the upstream answered in one piece.
	rq.streamHeaders()
	rq.w.WriteHeader(http.StatusOK)
	rq.status = http.StatusOK
	rq.ttfb = time.Since(rq.start)
	if _, err := rq.w.Write(out); err != nil {
		rq.canceled()
		return keypool.Result{Outcome: keypool.OutcomeNeutral}
	}
	_ = http.NewResponseController(rq.w).Flush()
	return keypool.Result{Outcome: keypool.OutcomeSuccess}
}

func (rq *request) streamHeaders() {
	hd := rq.w.Header()
	hd.Del("Content-Length")
	rq.setHeader(hd, "Content-Type", "text/event-stream; charset=utf-8")
	rq.setHeader(hd, "Cache-Control", "no-cache")
	rq.setHeader(hd, "X-Accel-Buffering", "no")
}

// translateStream translates an upstream SSE stream event by event,
// flushing what the events produce whenever the upstream has no further
// event at hand, and ends the caller's stream
// the way its SDK expects — or with an error event when the upstream's
// broke.
func (rq *request) translateStream(ctx, actx context.Context, cancel context.CancelCauseFunc, body io.Reader) keypool.Result {
	tr := rq.attempt.xl
	rq.streamHeaders()
	rq.w.WriteHeader(http.StatusOK)
	rq.status = http.StatusOK
	sw := newStreamWriter(rq.w, rq.h.keepAlive)
	defer sw.close()
	if sw.flush() != nil {
		cancel(errCallerGone)
		rq.canceled()
		return keypool.Result{Outcome: keypool.OutcomeNeutral}
	}
	rq.ttfb = time.Since(rq.start)

	er := wire.NewEventReader(body, rq.ioBuf, maxEventBytes)
	defer func() { rq.ioBuf = er.Buffer() }()
	guarded := rq.gd.answers()
	if guarded {
		rq.gd.beginAnswer(rq.attempt.cand.Binding.Shape, true, rq.at)
	}
	var err, bad error
	// The record says what came first: the upstream's end (whole, in error,
	// untranslatable or broken) or the caller's going away. Whether the
	// caller was gone is taken when the end is read, before it is written.
	var ended, callerFirst bool
	for !tr.Done() {
		var ev wire.Event
		if ev, err = er.Next(); err != nil {
			break
		}
		if rq.rc != nil {
			rq.rc.event(ev)
		}
		var xerr error
		if rq.out, xerr = tr.AppendEvent(rq.out[:0], ev); xerr != nil {
			bad = xerr
		}
		if !ended && (bad != nil || tr.Done()) {
			ended, callerFirst = true, callerGone(ctx, sw)
			if bad == nil {
				rq.keepAnswer(rq.out, "") // before the terminal event leaves
			}
		}
		flush := !er.More() // the next event needs a read: let these go
		out := rq.out
		if guarded {
			var blocked bool
			if out, blocked = rq.guardEvent(sw, &ev, rq.out, 0); blocked {
				cancel(errGuardrailBlocked)
				rq.usage = tr.Usage()
				return keypool.Result{Outcome: keypool.OutcomeSuccess}
			}
		}
		if sw.send(out, flush) != nil {
			cancel(errCallerGone)
			break
		}
	}
	if !ended { // a read that broke or a write that failed ended the loop
		callerFirst = callerGone(ctx, sw)
	}
	_ = sw.flush() // what the last event made
	complete := tr.Done()
	if !complete && err == io.EOF {
		rq.out, complete = tr.AppendEnd(rq.out[:0])
		if complete && !tr.Errored() {
			rq.keepAnswer(rq.out, "") // before the terminal event leaves
		}
		out := rq.out
		if guarded {
			var blocked bool
			if out, blocked = rq.guardEvent(sw, nil, rq.out, 0); blocked {
				rq.usage = tr.Usage()
				return keypool.Result{Outcome: keypool.OutcomeSuccess}
			}
		}
		if len(out) > 0 && sw.write(out) != nil {
			cancel(errCallerGone)
		}
	}
	if guarded && rq.guardEnd(sw, 0) {
		rq.usage = tr.Usage()
		return keypool.Result{Outcome: keypool.OutcomeSuccess}
	}
	rq.usage = tr.Usage()
	// An upstream that failed while the caller was there is a stream error
	// even if the caller leaves once it has read the error (SDKs close the
	// stream on it), and a whole answer is a success once its end reached
	// the caller, whatever the caller does next.
	switch {
	case callerFirst, complete && !tr.Errored() && sw.failed():
		rq.canceled()
		return keypool.Result{Outcome: keypool.OutcomeNeutral}
	case bad != nil:
		rq.errKind, rq.errMsg = event.KindStreamError, "upstream sent an event that could not be translated: "+bad.Error()
		return keypool.Result{Outcome: keypool.OutcomeFailure, Reason: "untranslatable event"}
	case complete:
		if tr.Errored() {
			// Surfaced to the caller in its own idiom.
			rq.errKind, rq.errMsg = event.KindStreamError, "upstream sent an error in the stream"
		}
		return keypool.Result{Outcome: keypool.OutcomeSuccess}
	}
	what := streamBreak(err, actx)
	rq.errKind, rq.errMsg = event.KindStreamError, "upstream stream broke: "+what
	rq.out = tr.AppendBroken(rq.out[:0], "The upstream stream broke: "+what+".")
	_ = sw.write(rq.out)
	return keypool.Result{Outcome: keypool.OutcomeFailure, Reason: what}
}

func streamBreak(err error, actx context.Context) string {
	switch {
	case err == io.EOF:
		return "stream ended early"
	case errors.Is(err, wire.ErrEventTooLarge):
		return "event too large"
	}
	what, _ := describe(err, actx)
	return what
}

// collectStream serves a caller that wants one body from an upstream that
// streamed: the events are folded into one answer, sent when whole.
func (rq *request) collectStream(ctx, actx context.Context, body io.Reader) keypool.Result {
	tr := rq.attempt.xl
	er := wire.NewEventReader(body, rq.ioBuf, maxEventBytes)
	defer func() { rq.ioBuf = er.Buffer() }()
	guarded := rq.gd.answers()
	if guarded {
		rq.gd.beginAnswer(rq.attempt.cand.Binding.Shape, false, rq.at)
	}
	var err, bad error
	for !tr.Done() {
		var ev wire.Event
		if ev, err = er.Next(); err != nil {
			break
		}
		if rq.rc != nil {
			rq.rc.event(ev)
		}
		if guarded && rq.gd.col != nil {
			rq.gd.col.Event(ev)
			rq.gd.text = rq.gd.col.Text(rq.gd.text)
		}
		if _, xerr := tr.AppendEvent(nil, ev); xerr != nil {
			bad = xerr
		}
	}
	complete := tr.Done()
	if !complete && err == io.EOF {
		_, complete = tr.AppendEnd(nil)
	}
	rq.usage = tr.Usage()
	switch {
	case ctx.Err() != nil:
		rq.canceled()
		return keypool.Result{Outcome: keypool.OutcomeNeutral}
	case bad != nil:
		rq.fail(wire.Errorf(wire.ErrUpstream, "The upstream's answer could not be translated: %v.", bad))
		return keypool.Result{Outcome: keypool.OutcomeFailure, Reason: "untranslatable event"}
	case !complete:
		what := streamBreak(err, actx)
		rq.fail(wire.Errorf(wire.ErrUpstream, "The upstream's answer broke off: %s.", what))
		return keypool.Result{Outcome: keypool.OutcomeFailure, Reason: what}
	}
	var status int
	rq.out, status = tr.AppendCollected(rq.out[:0], rq.id)
	if guarded && status == http.StatusOK {
		if rq.gd.col == nil {
			rq.guardFail(&guardrail.Finding{Rule: "unreadable_answer", Kind: guardrail.Deny}, "answer")
			return keypool.Result{Outcome: keypool.OutcomeSuccess}
		}
		out, ok := rq.checkText(rq.out, string(rq.gd.text))
		if !ok {
			return keypool.Result{Outcome: keypool.OutcomeSuccess}
		}
		rq.out = out
	}
	if status == http.StatusOK {
		rq.keepAnswer(rq.out, "")
	}
	rq.respond(status, "application/json", rq.out)
	if status != http.StatusOK {
		rq.errKind, rq.errMsg = event.KindStreamError, "upstream sent an error in the stream"
	}
	return keypool.Result{Outcome: keypool.OutcomeSuccess}
}
