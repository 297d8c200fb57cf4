package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/relay-llm/relay/internal/backoff"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/profile"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/upstream"
	"github.com/relay-llm/relay/internal/wire"
)

// Causes an attempt's context is canceled with.
var (
	errFirstByteTimeout = errors.New("first-byte timeout")
	errIdleTimeout      = errors.New("idle timeout")
	errTotalTimeout     = errors.New("total timeout")
	errCallerGone       = errors.New("caller went away")
)

// forward tries the plan's candidates in order, key by key, until one
// answers or the attempts run out. Only failures before any byte reached
// the caller are retried.
//
// The policy's max_attempts caps the attempts of a request, but every
// binding in the plan gets at least one: the keys of a binding may use
// what is left of the cap after one attempt is set aside for each binding
// after it, and a binding whose turn comes when the cap is spent still
// gets one attempt (docs/reliability.md).
func (rq *request) forward() {
	h := rq.h
	policy := rq.caller.Policy
	maxAttempts := DefaultMaxAttempts
	if policy.MaxAttempts > 0 {
		maxAttempts = min(policy.MaxAttempts, maxTried)
	}
	later := 0 // candidates after the current one
	for i := range rq.plan.Bindings {
		if rq.plan.Bindings[i].Skip == routing.Kept {
			later++
		}
	}
	rq.overhead = time.Since(rq.start)
	ctx := rq.r.Context()
	for i := range rq.plan.Bindings {
		c := &rq.plan.Bindings[i]
		if c.Skip != routing.Kept {
			continue
		}
		later--
		if !rq.translatable(c) {
			continue // the binding's shape cannot express this request
		}
		// This binding's share: the cap less one attempt for each later
		// binding, and never less than one.
		limit := min(max(maxAttempts-later, rq.attempts+1), maxTried)
		// The retry pause is for the host that just failed; another
		// binding is tried at once.
		pause := false
		for rq.attempts < limit {
			var key *snapshot.HostKey
			var ticket keypool.Ticket
			var ok bool
			if rq.plan.Panic {
				// Every key is held: try them anyway, least recently failed first.
				key, ticket, ok = h.pool.Panic(c.Keys, c.Binding.UpstreamModel, rq.tried)
			} else {
				key, ticket, ok = h.pool.Pick(policy.KeyStrategy, c.Keys, c.Binding.UpstreamModel, rq.tried, h.now())
			}
			if !ok {
				break
			}
			ticket.Thresholds = breakerThresholds(c.Host)
			if pause {
				if !rq.wait(ctx) {
					h.breakers.Report(ticket, keypool.Result{Outcome: keypool.OutcomeNeutral}, h.now())
					rq.canceled()
					return
				}
				pause = false
			}
			if rq.res != nil {
				// The limiter admits the attempt with its key (tier limit,
				// pacing); the first also carries the policy's limits.
				ls := rq.child(spanReserve)
				err := rq.res.Attempt(ctx, key, c.Binding)
				if ls != nil {
					rq.endReserve(ls, err)
				}
				if err != nil {
					h.breakers.Report(ticket, keypool.Result{Outcome: keypool.OutcomeNeutral}, h.now())
					if ctx.Err() != nil {
						rq.canceled()
					} else {
						rq.limiterFailed(err)
					}
					return
				}
				if rq.attempts == 0 {
					rq.overhead = time.Since(rq.start)
				}
			}
			rq.tried = append(rq.tried, key.ID)
			rq.attempts++
			rq.attempt.begin(c, key)
			rq.startAttempt(c, key)
			f, done := rq.try(ctx, c, key, ticket)
			rq.endAttempt(&f, done)
			if done {
				return
			}
			rq.fails = append(rq.fails, f)
			// Key-level refusals and 429s move on at once; the upstream's
			// own trouble earns a pause first.
			pause = f.status == 0 || f.status == http.StatusRequestTimeout || f.status >= 500
		}
	}
	rq.exhausted()
}

// wait sleeps the retry backoff: exponential in the failures so far, with
// equal jitter. It returns false if the caller went away meanwhile.
func (rq *request) wait(ctx context.Context) bool {
	p := backoff.Policy{Base: rq.h.backoff, Max: rq.h.backoffTo, Jitter: backoff.Equal}
	return p.Wait(ctx, len(rq.fails))
}

// exhausted answers when no attempt succeeded.
func (rq *request) exhausted() {
	model := rq.plan.Model.Name
	if rq.attempts == 0 && rq.xlErr != nil && !rq.xlServed {
		rq.fail(rq.xlErr) // every binding left needs a translation the request cannot have
		return
	}
	if rq.attempts == 0 {
		rq.fail(wire.Errorf(wire.ErrNoUsableHostKey, "No host key is available for the model %q right now.", model))
		return
	}
	all429, allTimeouts := true, true
	var retry time.Duration
	for _, f := range rq.fails {
		all429 = all429 && f.status == http.StatusTooManyRequests
		allTimeouts = allTimeouts && f.timeout
		if f.retryAfter > 0 && (retry == 0 || f.retryAfter < retry) {
			retry = f.retryAfter
		}
	}
	tried := rq.failText(false)
	switch {
	case all429:
		e := wire.Errorf(wire.ErrUpstreamRateLimited, "Every host key for the model %q is rate limited upstream (%s).", model, tried)
		e.RetryAfter = retry
		rq.fail(e)
	case allTimeouts:
		rq.fail(wire.Errorf(wire.ErrUpstreamTimeout, "The upstream did not answer in time for the model %q (%s).", model, tried))
	default:
		rq.fail(wire.Errorf(wire.ErrUpstream, "Every upstream attempt for the model %q failed (%s).", model, tried))
	}
}

// callerGone reports whether the caller has been seen to go away: a write
// to it failed, or its context is canceled. A stream's record says what
// came first: checked when the upstream's error or break is read, it tells
// a cancellation from a stream error the caller merely left after.
func callerGone(ctx context.Context, sw *streamWriter) bool {
	return ctx.Err() != nil || sw.failed()
}

// canceled notes that the caller went away.
func (rq *request) canceled() {
	rq.status = 499
	rq.errKind = event.KindClientCanceled
	rq.errMsg = "caller went away"
}

func (rq *request) timeouts(host *snapshot.Host) Timeouts {
	t := rq.h.timeouts
	if host.ConnectTimeout > 0 {
		t.Connect = host.ConnectTimeout
	}
	if host.FirstByteTimeout > 0 {
		t.FirstByte = host.FirstByteTimeout
	}
	if host.IdleTimeout > 0 {
		t.Idle = host.IdleTimeout
	}
	if host.TotalTimeout > 0 {
		t.Total = host.TotalTimeout
	}
	return t
}

// upstreamBody is the caller's body with the binding's upstream model
// spliced in, the caller's route hint cut out and, for a chat stream whose
// caller did not ask for usage, stream_options.include_usage turned on
// (unless the host's profile refuses stream_options).
func (rq *request) upstreamBody(b *snapshot.Binding, noStreamOptions bool) (body []byte, injectedUsage bool) {
	if rq.form.boundary != "" {
		return rq.formBody(b.UpstreamModel), false
	}
	rw := wire.Rewrite{
		Model:        b.UpstreamModel,
		IncludeUsage: (rq.in == wire.InboundChat || rq.in == wire.InboundCompletions) && rq.scan.Stream && !rq.scan.IncludeUsage && !noStreamOptions,
		Drop:         rq.hintCut,
	}
	if !rq.scan.NeedsRewrite(rw) {
		return rq.body.Bytes(), false
	}
	if rq.sending.Load() > 0 {
		rq.upBody = nil // an earlier attempt's body may still be on the wire
	}
	rq.upBody = wire.AppendRewritten(rq.upBody[:0], rq.body.Bytes(), &rq.scan, rw)
	return rq.upBody, rw.IncludeUsage
}

// attempt makes one upstream call. It returns done when the request is
// over (answered, or the caller went away); otherwise the failure to list.
func (rq *request) try(ctx context.Context, c *routing.Candidate, key *snapshot.HostKey, t keypool.Ticket) (failure, bool) {
	h := rq.h
	f := failure{host: c.Host.Slug, key: key.Slug}
	to := rq.timeouts(c.Host)
	body, injected, url := rq.upstreamRequest(c)

	// One context and one timer per attempt: the timer stands for the
	// first-byte, idle and total timeouts in turn (attemptDeadline).
	actx, cancel := context.WithCancelCause(rq.attemptContext(ctx, to.Connect))
	defer cancel(nil)
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, nil)
	if err != nil {
		f.what = "invalid host base URL"
		h.breakers.Report(t, keypool.Result{Outcome: keypool.OutcomeFailure, Reason: f.what}, h.now())
		return f, false
	}
	req.Header = rq.upstreamHeader(c) // before setBody counts this attempt's body
	rq.setBody(req, body)
	if err := h.authorizers.Authorize(actx, req, body, profile.Lookup(c.Host.Profile), c.Binding.Shape, c.Host, key); err != nil {
		return rq.credentialFailed(f, t, err), false
	}
	rq.attempt.translatedHeaders(req.Header, rq.stream)
	rq.attempt.injectTrace(ctx, req.Header)

	rq.attempt.dl = newAttemptDeadline(cancel, to)
	dl := rq.attempt.dl
	defer dl.stop()
	resp, err := h.transport.RoundTrip(req)
	if !dl.t.Stop() && err == nil {
		resp.Body.Close() // the timer won the race: the attempt is canceled
		err = dl.cause()
	}
	if err != nil {
		if ctx.Err() != nil {
			h.breakers.Report(t, keypool.Result{Outcome: keypool.OutcomeNeutral}, h.now())
			rq.canceled()
			return f, true
		}
		f.what, f.timeout = describe(err, actx)
		_, res := keypool.Classify(keypool.Upstream{Err: err, Reason: f.what})
		h.breakers.Report(t, res, h.now())
		return f, false
	}

	if s := resp.StatusCode; s >= 200 && s < 300 {
		res := rq.commit(ctx, actx, cancel, resp, c.Binding.Shape, injected)
		if res.Outcome == keypool.OutcomeFailure {
			// The answer began: whatever broke it is the model's at most.
			_, res = keypool.Classify(keypool.Upstream{AfterFirstByte: true, Reason: res.Reason})
		}
		h.breakers.Report(t, res, h.now())
		return f, true
	}
	// An error status: its body says whose fault it is.
	errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	now := h.now()
	class, res := keypool.Classify(keypool.Upstream{
		Shape: c.Binding.Shape, Status: resp.StatusCode, Body: errBody, RetryAfter: retryAfter(resp.Header, now),
	})
	if class == keypool.ClassRequest {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(errBody), resp.Body), resp.Body}
		rq.passError(resp, key.Secret)
		h.breakers.Report(t, res, h.now())
		return f, true
	}
	resp.Body.Close()
	f.status, f.what = resp.StatusCode, res.Reason
	if skew := sigV4ClockSkew(errBody); skew != "" {
		f.what += " " + skew
	}
	f.retryAfter = res.RetryAfter
	f.timeout = resp.StatusCode == http.StatusRequestTimeout
	if res.Outcome != keypool.OutcomeAuth { // auth errors may echo the credential
		f.detail = upstreamMessage(errBody, key.Secret)
	}
	h.breakers.Report(t, res, now)
	return f, false
}

// credentialFailed lists an attempt whose key could not produce its
// credential (a token endpoint's refusal holds the key; its failure counts
// as the host's).
func (rq *request) credentialFailed(f failure, t keypool.Ticket, err error) failure {
	res := keypool.Result{Outcome: keypool.OutcomeFailure, Evidence: keypool.EvidenceNetwork, Reason: "credential unavailable"}
	var ce *profile.CredentialError
	if errors.As(err, &ce) {
		res.Reason = ce.Reason
		if ce.Refused {
			res = keypool.Result{Outcome: keypool.OutcomeAuth, Reason: ce.Reason}
		}
	}
	f.what = res.Reason
	rq.h.breakers.Report(t, res, rq.h.now())
	return f
}

// upstreamHeader is the caller's headers that may go upstream to c
// (appendOutboundHeaders) and the Content-Type of the JSON body Relay
// sends, in the request's own map when no transport may still
// hold it: the map of an earlier attempt (or request) is reused once every
// body handed to a transport has been written, since a transport writes
// the headers before the body.
func (rq *request) upstreamHeader(c *routing.Candidate) http.Header {
	if rq.upHeader == nil || rq.sending.Load() > 0 {
		rq.upHeader = make(http.Header, len(rq.r.Header)+2)
	} else {
		clear(rq.upHeader)
	}
	appendOutboundHeaders(rq.upHeader, rq.r.Header, c.Binding.Shape, c.Host)
	if rq.form.boundary != "" {
		rq.setHeader(rq.upHeader, "Content-Type", "multipart/form-data; boundary="+rq.form.boundary)
	} else {
		rq.setHeader(rq.upHeader, "Content-Type", "application/json")
	}
	return rq.upHeader
}

// setBody gives req a body over p that net/http can see is in memory, so
// it writes the headers and the body together in one system call. The body
// counts itself in rq.sending until the transport has written it (the
// WroteRequest hook of attemptContext), which may be after RoundTrip
// returned; a body the transport never got to write stays counted, and the
// request's buffers are then left to it (request.reset).
func (rq *request) setBody(req *http.Request, p []byte) {
	if rq.form.spilled != nil {
		rq.setSpilledBody(req)
		return
	}
	req.ContentLength = int64(len(p))
	req.Body = rq.sentBody(p)
	req.GetBody = func() (io.ReadCloser, error) { return rq.sentBody(p), nil }
}

func (rq *request) sentBody(p []byte) io.ReadCloser {
	rq.sending.Add(1)
	return io.NopCloser(bytes.NewReader(p))
}

// attemptContext is ctx with the host's connect timeout for the dialer and
// the hook that tells rq.sending a request body has been written.
func (rq *request) attemptContext(ctx context.Context, connect time.Duration) context.Context {
	sending := rq.sending
	return upstream.Attempt(ctx, connect, func() { sending.Add(-1) })
}

// passError gives an upstream 4xx that is the caller's own fault back
// unchanged: status, the useful headers and the body.
func (rq *request) passError(resp *http.Response, secret snapshot.Secret) {
	if rq.attempt.xl != nil {
		rq.passTranslatedError(resp, secret)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	resp.Body.Close()
	if s := secret.Reveal(); s != "" && bytes.Contains(body, []byte(s)) {
		body = bytes.ReplaceAll(body, []byte(s), []byte("[redacted]"))
	}
	hd := rq.w.Header()
	copyResponseHeaders(hd, resp.Header)
	rq.setHeader(hd, "Content-Length", strconv.Itoa(len(body)))
	rq.setRelayHeaders()
	rq.w.WriteHeader(resp.StatusCode)
	rq.status = resp.StatusCode
	rq.ttfb = time.Since(rq.start)
	rq.errKind = event.KindUpstreamClientError
	rq.errMsg = "upstream answered " + strconv.Itoa(resp.StatusCode)
	_, _ = rq.w.Write(body)
}

// commit sends a 2xx upstream response to the caller. From here on no
// other key is tried. It returns what the attempt says about its key.
func (rq *request) commit(ctx, actx context.Context, cancel context.CancelCauseFunc, resp *http.Response, shape wire.Shape, injected bool) keypool.Result {
	defer resp.Body.Close()
	if ss := rq.startStream(); ss != nil {
		defer rq.endStream(ss)
	}
	dl := rq.attempt.dl
	dl.begin()
	unframeEventStream(resp, shape)
	body := &idleReader{r: resp.Body, dl: dl, ctx: actx}

	hd := rq.w.Header()
	copyResponseHeaders(hd, resp.Header)
	rq.setRelayHeaders()
	rq.status = resp.StatusCode
	if rq.rc != nil {
		rq.rc.begin(shape, rq.attempt.cand.Binding.ID, rq.at)
	}
	if isEventStream(resp.Header.Get("Content-Type")) && rq.attempt.xl == nil {
		rq.ioBuf = nil // a stream borrows its buffer (streambuf.go)
		return rq.pipeStream(ctx, actx, cancel, body, shape, resp.StatusCode, injected)
	}
	if rq.ioBuf == nil {
		rq.ioBuf = make([]byte, 0, 32<<10)
	}
	if rq.attempt.xl != nil {
		return rq.pipeTranslated(ctx, actx, cancel, body, resp)
	}
	if resp.ContentLength >= 0 {
		rq.setHeader(hd, "Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	return rq.pipeBody(ctx, actx, cancel, body, shape, resp.StatusCode)
}

// pipeBody copies a whole (non-stream) body through, picking the top-level
// usage out of it on the way.
func (rq *request) pipeBody(ctx, actx context.Context, cancel context.CancelCauseFunc, body io.Reader, shape wire.Shape, status int) keypool.Result {
	if rq.gd.answers() {
		return rq.pipeGuardedBody(ctx, actx, body, shape, status)
	}
	rq.w.WriteHeader(status)
	rq.ttfb = time.Since(rq.start)
	buf := rq.ioBuf[:cap(rq.ioBuf)]
	usage := &rq.bodyUsage
	usage.Reset(64 << 10)
	kept := rq.keptBody() // a copy, for the response store
	// With state to keep, the last read goes out only once the state is
	// kept: a caller that has the whole answer may send the next turn at
	// once (previous_response_id, conversation), and it must find this one.
	var held []byte
	for {
		n, err := body.Read(buf)
		if n > 0 {
			_, _ = usage.Write(buf[:n])
			kept.add(buf[:n])
			if rq.rc != nil {
				rq.rc.bytes(buf[:n])
			}
			out := buf[:n]
			if kept != nil {
				out = held // the read held before goes out now
			}
			if _, werr := rq.w.Write(out); werr != nil {
				cancel(errCallerGone)
				rq.canceled()
				return keypool.Result{Outcome: keypool.OutcomeNeutral}
			}
			if kept != nil {
				// Only now, with the held read written, hold this one
				// (copied: buf is read into again).
				held = append(held[:0], buf[:n]...)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			_, _ = rq.w.Write(held)
			if ctx.Err() != nil {
				rq.canceled()
				return keypool.Result{Outcome: keypool.OutcomeNeutral}
			}
			what, _ := describe(err, actx)
			rq.errKind, rq.errMsg = event.KindStreamError, "upstream body broke: "+what
			// Send what came, then cut the connection (see release): the
			// caller sees a truncated body, never one that looks whole.
			_ = http.NewResponseController(rq.w).Flush()
			rq.abort = true
			return keypool.Result{Outcome: keypool.OutcomeFailure, Reason: what}
		}
	}
	if u, ok := usage.Value(); ok && u[0] == '{' {
		rq.usage = wire.ParseUsage(shape, u)
		rq.audioMillis = audioMillis(u)
	}
	kept.keep(rq)
	if _, werr := rq.w.Write(held); werr != nil {
		rq.canceled()
		return keypool.Result{Outcome: keypool.OutcomeNeutral}
	}
	return keypool.Result{Outcome: keypool.OutcomeSuccess}
}

// pipeStream forwards an SSE stream event by event, verbatim, flushing
// whenever the upstream has no further event at hand, reading usage as it goes by. A chat stream whose usage Relay asked
// for on the caller's behalf loses its usage-only chunk. A stream that
// breaks gets an error event in the caller's shape.
func (rq *request) pipeStream(ctx, actx context.Context, cancel context.CancelCauseFunc, body io.Reader, shape wire.Shape, status int, injected bool) keypool.Result {
	hd := rq.w.Header()
	hd.Del("Content-Length")
	rq.setHeader(hd, "Cache-Control", "no-cache")
	rq.setHeader(hd, "X-Accel-Buffering", "no")
	rq.w.WriteHeader(status)
	sw := newStreamWriter(rq.w, rq.h.keepAlive)
	defer sw.close()
	if sw.flush() != nil {
		cancel(errCallerGone)
		rq.canceled()
		return keypool.Result{Outcome: keypool.OutcomeNeutral}
	}
	rq.ttfb = time.Since(rq.start)

	var er eventSource
	er.init(&rq.h.streamBufs, body, upstreamBody(body))
	defer er.close()
	tr := wire.NewStreamTracker(shape)
	suppress := injected && (rq.in == wire.InboundChat || rq.in == wire.InboundCompletions)
	guarded := rq.gd.answers()
	if guarded {
		rq.gd.beginAnswer(shape, true, rq.at)
	}
	var err error
	// The record says what came first: the upstream's end (its terminal
	// event, an error event, a read that broke) or the caller's going
	// away. Whether the caller was gone is taken when the end is read,
	// before it is written.
	var ended, callerFirst bool
	for {
		var ev wire.Event
		if ev, err = er.Next(); err != nil {
			break
		}
		wasTerminal := tr.Terminal() // a Gemini stream is always: its end is the body's
		skip := tr.Observe(ev) && suppress
		if rq.rc != nil {
			rq.rc.event(ev)
		}
		if !ended && (tr.Errored() || !wasTerminal && tr.Terminal()) {
			ended, callerFirst = true, callerGone(ctx, sw)
			if !tr.Errored() {
				rq.keepPassthrough(ev.Raw) // before the terminal event leaves
			}
		}
		flush := !er.More() // the next event needs a read: let these go
		out := ev.Raw
		if skip {
			out = nil
		}
		if guarded {
			var blocked bool
			if out, blocked = rq.guardEvent(sw, &ev, out, tr.NextSeq()); blocked {
				cancel(errGuardrailBlocked)
				rq.usage, _ = tr.Usage()
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
	if guarded && rq.guardEnd(sw, tr.NextSeq()) {
		rq.usage, _ = tr.Usage()
		return keypool.Result{Outcome: keypool.OutcomeSuccess}
	}
	_ = sw.flush() // what came with the end of the stream
	rq.usage, _ = tr.Usage()
	// An upstream that failed while the caller was there is a stream error
	// even if the caller leaves once it has read the error (SDKs close the
	// stream on it), and a whole answer is a success once its end reached
	// the caller, whatever the caller does next (SDKs close on [DONE]).
	var what string
	switch {
	case callerFirst:
		rq.canceled()
		return keypool.Result{Outcome: keypool.OutcomeNeutral}
	case tr.Errored():
		// Surfaced to the caller as the upstream sent it.
		rq.errKind, rq.errMsg = event.KindStreamError, "upstream sent an error in the stream"
		return keypool.Result{Outcome: keypool.OutcomeSuccess}
	case tr.Terminal() && (err == io.EOF || ended):
		// Read to its end, or the end was read and the caller then left.
		if sw.failed() {
			rq.canceled() // the end did not reach the caller
			return keypool.Result{Outcome: keypool.OutcomeNeutral}
		}
		return keypool.Result{Outcome: keypool.OutcomeSuccess}
	case err == io.EOF:
		what = "stream ended early"
	case errors.Is(err, wire.ErrEventTooLarge):
		what = "event too large"
	default:
		what, _ = describe(err, actx)
	}
	rq.errKind, rq.errMsg = event.KindStreamError, "upstream stream broke: "+what
	rq.out = wire.AppendStreamError(rq.out[:0], rq.in, "The upstream stream broke: "+what+".", tr.NextSeq())
	_ = sw.write(rq.out)
	return keypool.Result{Outcome: keypool.OutcomeFailure, Reason: what}
}

func isEventStream(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// idleReader re-arms the attempt's idle timeout after every read that
// brought bytes.
type idleReader struct {
	r   io.Reader
	dl  *attemptDeadline
	ctx context.Context // the attempt's
}

func (i *idleReader) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if n > 0 {
		i.dl.rearm()
	}
	if err == io.EOF && i.ctx.Err() != nil {
		// net/http's HTTP/1.1-over-TLS body ends a read cut by the
		// attempt's cancel with io.EOF: a cut body is not a whole one.
		err = context.Cause(i.ctx)
	}
	return n, err
}

// describe names an attempt's failure for the caller and the log, and says
// whether it was a timeout.
func describe(err error, actx context.Context) (string, bool) {
	switch cause := context.Cause(actx); {
	case errors.Is(cause, errFirstByteTimeout) || errors.Is(err, errFirstByteTimeout):
		return "first-byte timeout", true
	case errors.Is(cause, errIdleTimeout) || errors.Is(err, errIdleTimeout):
		return "idle timeout", true
	case errors.Is(cause, errTotalTimeout) || errors.Is(err, errTotalTimeout):
		return "total timeout", true
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "connect timeout", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", false
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset", false
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed", false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "host not found", false
	}
	return "connection error", false
}

// retryAfter reads an upstream's retry hint: Retry-After-Ms, else
// Retry-After in seconds or as an HTTP date. 0 when there is none.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return time.Duration(s * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil && t.After(now) {
			return t.Sub(now)
		}
	}
	return 0
}

// upstreamMessage is the upstream error's message, short and with the host
// key scrubbed, for the log.
func upstreamMessage(body []byte, secret snapshot.Secret) string {
	v, ok := wire.Get(body, "error", "message")
	if !ok {
		v, _ = wire.Get(body, "message")
	}
	s, ok := wire.Str(v)
	if !ok {
		return ""
	}
	// Redact before cutting: a key straddling the cut would otherwise leave
	// its prefix in the log line.
	msg := string(s)
	if sec := secret.Reveal(); sec != "" {
		msg = strings.ReplaceAll(msg, sec, "[redacted]")
	}
	return cutRunes(msg, maxUpstreamMessage)
}

// maxUpstreamMessage bounds the upstream error text a log line keeps.
const maxUpstreamMessage = 200

// cutRunes returns s cut to at most n bytes, never inside a UTF-8 sequence.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// breakerThresholds are the host's own breaker thresholds; zero fields (and
// a host gone from the snapshot) take the process settings.
func breakerThresholds(host *snapshot.Host) keypool.Thresholds {
	if host == nil {
		return keypool.Thresholds{}
	}
	return keypool.Thresholds{ServerFailures: host.BreakerServerFailures, NetworkFailures: host.BreakerNetworkFailures}
}
