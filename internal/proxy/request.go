package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/trace"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/translator"
	"github.com/relay-llm/relay/internal/wire"
)

// maxTried bounds the attempts one request makes (policies allow up to 10).
const maxTried = 16

// request is the state of one request. Handlers pool them.
type request struct {
	h      *Handler
	w      http.ResponseWriter
	r      *http.Request
	id     string    // Relay's own, minted per request: X-Relay-Request-ID
	client string    // the caller's X-Request-ID when sane, else "": an attribute only
	start  time.Time // monotonic, for latencies
	at     time.Time // Config.Now, for decisions
	in     wire.Inbound
	call   wire.Call // what the path and headers said (wire.ParseCall); in is its In

	snap     *snapshot.Snapshot
	caller   snapshot.Caller
	recorded bool // authenticated: a Record goes out
	body     bytes.Buffer
	scan     wire.Request
	form     formState // a multipart body's (endpoints_form.go)
	stream   bool
	plan     routing.Plan
	route    routing.Request // what the router was asked
	hintCut  wire.Cut        // the caller's route hint, cut from what goes upstream
	policy   snapshot.Policy // the caller's, copied when affinity fixes the key order
	adm      admission.Admission
	busy     snapshot.ID // the binding counted in flight
	routeBuf []byte      // X-Relay-Route
	// downgraded names the fallback a budget's refusal sent the request to.
	downgraded string
	// degradedFrom names the model the policy degraded the request from
	// rather than let it wait (it is served by rq.plan.Model).
	degradedFrom string
	settle       func(wire.Usage)
	res          admission.Reservation // a KeyLimiter's, admitting each attempt

	attempts int
	sending  *atomic.Int32 // request bodies the transport has not closed yet
	tried    []snapshot.ID
	fails    []failure
	upBody   []byte
	ioBuf    []byte
	out      []byte      // error bodies, log text
	hvals    []string    // header values set by setHeader; never kept by reset
	upHeader http.Header // the upstream request's header (upstreamHeader)

	bodyUsage wire.BodyUsage // reused: keeps its capture buffers

	// Translation, for bindings of another shape than the caller's (the
	// current binding's translator is the attempt's). xlErr and xlServed
	// gather over every binding tried, so they are the request's.
	xin      *translator.Request // the caller's body decoded, once
	xinErr   error               // why it could not be decoded
	xlErr    error               // why a binding was left out: the request cannot be translated for it
	xlServed bool                // some binding could take the request
	st       *respState          // Responses state (responses_state.go); nil when none

	// attempt is the current (at the end, the last) upstream attempt's
	// state (attempt.go): held by value, so the pooled request carries it
	// without an allocation.
	attempt attempt

	// Outcome.
	status  int
	errKind string
	errMsg  string
	usage   wire.Usage
	// audioMillis is the duration a transcription's usage reported (units.go).
	audioMillis int64
	ttfb        time.Duration
	overhead    time.Duration
	abort       bool

	cw *captureWriter // payload capture (capture.go); nil when off

	gd *guardState // guardrails (guardrail.go); nil when the policy has none

	// Response cache (cache.go): what it did ("" when off), a miss's
	// fill, and a hit's age, saved usage and producing binding.
	cache        string
	rc           *cacheFill
	cacheAge     time.Duration
	cacheSaved   wire.Usage
	cacheBinding snapshot.ID
	cacheCost    int64   // what the hit saved, nano-units
	semHit       *semHit // a semantic hit's domain, entry and similarity

	// Tracing (trace.go); nil when it is off.
	tctx context.Context // carries span
	span trace.Span      // relay.request (the attempt has relay.upstream_attempt)
}

// failure is one attempt that failed before any byte reached the caller.
type failure struct {
	host       string
	key        string // host key slug, for the log only
	status     int    // 0 for network errors and timeouts
	what       string // "500", "timeout", "connection error" …
	detail     string // upstream's error message, secret-free, for the log only
	timeout    bool
	retryAfter time.Duration
}

func (rq *request) init(h *Handler, w http.ResponseWriter, r *http.Request) {
	rq.h, rq.w, rq.r = h, w, r
	rq.start = time.Now()
	rq.at = h.now()
	rq.id = newRequestID()
	rq.client = clientRequestID(r.Header.Get("X-Request-ID"))
	if rq.tried == nil {
		rq.tried = make([]snapshot.ID, 0, maxTried)
		rq.fails = make([]failure, 0, maxTried)
		rq.sending = new(atomic.Int32)
	}
	rq.setHeader(w.Header(), "X-Relay-Request-ID", rq.id)
}

func (rq *request) reset() {
	sending := rq.sending
	if sending.Load() > 0 {
		// The transport may still read the bodies it was given: leave
		// those buffers and their counter to it, and start afresh.
		rq.body, rq.upBody, rq.upHeader, sending = bytes.Buffer{}, nil, nil, new(atomic.Int32)
	}
	if len(rq.upHeader) > 32 {
		rq.upHeader = nil // a caller's unusual header count is not kept
	}
	clear(rq.upHeader) // its values held the host key's credential
	body, up, io, out, bu, rb := rq.body, rq.upBody, rq.ioBuf, rq.out, rq.bodyUsage, rq.routeBuf
	plan, tried, fails, upHeader := rq.plan, rq.tried, rq.fails, rq.upHeader
	keepBuffer(&body, 1<<20)
	plan.Reset()
	clear(fails)
	*rq = request{
		body:      body,
		upBody:    keep(up, 1<<20),
		ioBuf:     keep(io, 64<<10),
		out:       keep(out, 64<<10),
		plan:      plan,
		tried:     tried[:0],
		fails:     fails[:0],
		sending:   sending,
		bodyUsage: bu,
		routeBuf:  keep(rb, 4<<10),
		upHeader:  upHeader,
	}
}

// clientRequestID returns a caller's X-Request-ID when it is sane (at most
// 128 bytes of [A-Za-z0-9._:-]), else "". It is kept as an attribute of the
// request; Relay never keys anything by it, since callers choose it.
func clientRequestID(v string) string {
	n := len(v)
	if n == 0 || n > 128 {
		return ""
	}
	for i := range n {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-') {
			return ""
		}
	}
	return v
}

// newRequestID mints Relay's request id: "req_" and 128 random bits in hex.
func newRequestID() string {
	const hex = "0123456789abcdef"
	var b [4 + 32]byte
	copy(b[:], "req_")
	for i, x := 0, rand.Uint64(); i < 16; i, x = i+1, x>>4 {
		b[4+i] = hex[x&0xf]
	}
	for i, x := 0, rand.Uint64(); i < 16; i, x = i+1, x>>4 {
		b[20+i] = hex[x&0xf]
	}
	return string(b[:])
}

// hashKey hashes a presented credential without copying it.
func hashKey(key string) [32]byte {
	// sha256.Sum256 only reads its argument.
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(key), len(key)))
}

func (rq *request) authenticate() bool {
	key := wire.PresentedKey(rq.r.Header)
	if key == "" {
		rq.fail(wire.Errorf(wire.ErrMissingKey, "Missing relay key: send it as Authorization: Bearer <key>, x-api-key or X-Relay-Key."))
		return false
	}
	rq.snap = rq.h.snapshot()
	caller, res := rq.snap.Authenticate(hashKey(key), rq.at)
	if res != snapshot.AuthOK {
		rq.fail(wire.Errorf(wire.ErrInvalidKey, "Invalid relay key: %s.", res))
		return false
	}
	rq.caller = caller
	return true
}

// bodyHint is the most of a declared Content-Length readBody allocates
// before the bytes arrive.
const bodyHint = 64 << 10

func (rq *request) readBody() bool {
	max := rq.h.maxBody
	if rq.r.ContentLength > max {
		rq.fail(wire.Errorf(wire.ErrRequestTooLarge, "The request body is larger than %d bytes.", max))
		return false
	}
	// The declared length is a hint, not a promise: trust it only up to
	// bodyHint, and let the buffer grow (doubling) as bytes arrive, so a
	// caller that declares 32 MiB and sends one byte holds 64 KiB, not 32 MiB.
	if n := min(rq.r.ContentLength, bodyHint); n > 0 {
		rq.body.Grow(int(n) + bytes.MinRead)
	}
	_, err := rq.body.ReadFrom(http.MaxBytesReader(rq.w, rq.r.Body, max))
	return rq.bodyRead(err, max)
}

// bodyRead answers the caller when reading its body failed with err.
func (rq *request) bodyRead(err error, max int64) bool {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		rq.fail(wire.Errorf(wire.ErrRequestTooLarge, "The request body is larger than %d bytes.", max))
		return false
	case err != nil:
		rq.fail(wire.Errorf(wire.ErrMalformedRequest, "Could not read the request body."))
		return false
	}
	return true
}

// fail answers with err in the caller's shape.
func (rq *request) fail(err error) {
	var we *wire.Error
	if errors.As(err, &we) && we.RetryAfter > 0 {
		rq.setHeader(rq.w.Header(), "Retry-After", strconv.Itoa(int((we.RetryAfter+time.Second-1)/time.Second)))
	}
	var status int
	rq.out, status = wire.AppendErrorBody(rq.out[:0], rq.call.Dialect, err, rq.id)
	_, rq.errKind = wire.Classify(err)
	rq.errMsg = err.Error()
	rq.respond(status, "application/json", rq.out)
}

// respond writes a whole response Relay made itself.
func (rq *request) respond(status int, contentType string, body []byte) {
	hd := rq.w.Header()
	rq.setHeader(hd, "Content-Type", contentType)
	rq.setHeader(hd, "Content-Length", strconv.Itoa(len(body)))
	rq.setRelayHeaders()
	rq.w.WriteHeader(status)
	rq.status = status
	rq.ttfb = time.Since(rq.start)
	_, _ = rq.w.Write(body)
}

func (rq *request) setRelayHeaders() {
	hd := rq.w.Header()
	if rq.attempts > 0 {
		rq.setHeader(hd, "X-Relay-Attempts", strconv.Itoa(rq.attempts))
	}
	if rq.attempt.cand != nil && rq.attempt.cand.Host != nil {
		rq.setHeader(hd, "X-Relay-Host", rq.attempt.cand.Host.Slug)
	}
	rq.setRouteHeader(hd)
	rq.setRateHeaders(hd)
	rq.setHeader(hd, cacheHeader, rq.cacheState())
}

// finish logs the request, settles the limiter and emits its Record.
func (rq *request) finish() {
	total := time.Since(rq.start)
	if us, ok := rq.res.(admission.UnitSettler); ok && rq.settle != nil {
		us.DoneUnits(rq.usage, rq.units()) // the units priced into its budgets
	} else if rq.settle != nil {
		rq.settle(rq.usage)
	}
	rq.observe()
	rq.logLine(total)
	if rq.span != nil {
		rq.endTrace()
	}
	if rq.rc != nil {
		rq.fillCache()
	}
	if !rq.recorded {
		return
	}
	rec := event.Record{
		RequestID:        rq.id,
		ClientRequestID:  rq.client,
		At:               rq.at,
		CredentialKind:   rq.caller.Kind,
		CredentialID:     rq.caller.CredentialID,
		ProjectID:        rq.caller.ProjectID,
		TeamID:           rq.caller.TeamID,
		ServiceAccountID: rq.caller.ServiceAccountID,
		UserID:           rq.caller.UserID,
		Model:            rq.scan.Model,
		Inbound:          rq.in.String(),
		Stream:           rq.stream,
		Status:           rq.status,
		ErrorKind:        rq.errKind,
		Attempts:         rq.attempts,
		Usage:            rq.usage,
		Units:            rq.units(),
		TimeToFirstByte:  rq.ttfb,
		Total:            total,
		Overhead:         rq.overhead,
		Route:            rq.routeSummary(),
		RouteDetail:      rq.routeDetail(),
		Cache:            rq.cache,
		CacheAge:         rq.cacheAge,
		CacheSaved:       rq.cacheSaved,
		CacheBindingID:   rq.cacheBinding,
		CacheSavedCost:   rq.cacheCost,
	}
	if sh := rq.semHit; sh != nil {
		rec.CacheDomain, rec.CacheEntry, rec.CacheSimilarity = sh.domain, sh.entry, sh.similarity
	}
	if rq.gd != nil {
		rec.Guardrails = rq.gd.rec
	}
	if p := rq.caller.Policy; p != nil {
		rec.PolicyID = p.ID
	}
	if m := rq.plan.Model; m != nil {
		rec.Model, rec.ModelID = m.Name, m.ID
	}
	if c := rq.attempt.cand; c != nil {
		// A fallback that served is the model the request was billed on.
		rec.Model, rec.ModelID = c.Model.Name, c.Model.ID
		rec.BindingID, rec.Upstream = c.Binding.ID, c.Binding.Shape
		if c.Host != nil {
			rec.HostID, rec.HostSlug = c.Host.ID, c.Host.Slug
		}
	}
	if rq.attempt.key != nil {
		rec.HostKeyID = rq.attempt.key.ID
	}
	if rq.cw != nil {
		rq.capture()
	}
	rq.h.recorder.Record(rec)
}

// logLine writes the request's one log line: what was asked, how it was
// routed (each binding considered and why it was skipped), every attempt
// and the outcome. It never holds a credential.
func (rq *request) logLine(total time.Duration) {
	level := slog.LevelInfo
	if rq.status >= 500 {
		level = slog.LevelWarn
	}
	ctx := rq.r.Context()
	if !rq.h.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("request_id", rq.id),
		slog.String("method", rq.r.Method),
		slog.String("path", rq.r.URL.Path),
		slog.Int("status", rq.status),
		slog.Duration("duration", total),
	)
	if rq.client != "" {
		attrs = append(attrs, slog.String("client_request_id", rq.client))
	}
	if rq.scan.Model != "" {
		attrs = append(attrs, slog.String("model", rq.scan.Model), slog.Bool("stream", rq.stream))
	}
	if rq.attempt.cand != nil && rq.attempt.cand.Host != nil {
		attrs = append(attrs, slog.String("host", rq.attempt.cand.Host.Slug))
	}
	if rq.attempt.key != nil {
		attrs = append(attrs, slog.String("host_key", rq.attempt.key.Slug))
	}
	if rq.attempts > 0 {
		attrs = append(attrs, slog.Int("attempts", rq.attempts), slog.Duration("ttfb", rq.ttfb))
	}
	if len(rq.plan.Bindings) > 0 {
		attrs = append(attrs, slog.String("route", rq.routeText()))
	}
	if p := &rq.plan; p.Model != nil {
		attrs = append(attrs, slog.String("strategy", string(p.Strategy)+" ("+p.StrategyFrom+")"),
			slog.String("affinity", string(p.Affinity)+" "+p.SessionFrom))
	}
	if v := rq.routeSummary(); v != "" {
		attrs = append(attrs, slog.String("routed", v))
	}
	if rq.attempt.xl != nil {
		attrs = append(attrs, slog.String("translated", rq.attempt.xl.Pair()))
	}
	if rq.xlErr != nil {
		attrs = append(attrs, slog.String("untranslatable", rq.xlErr.Error()))
	}
	if len(rq.fails) > 0 {
		attrs = append(attrs, slog.String("failed_attempts", rq.failText(true)))
	}
	if !rq.usage.IsZero() {
		attrs = append(attrs, slog.Int64("input_tokens", rq.usage.Input), slog.Int64("output_tokens", rq.usage.Output))
	}
	if rq.errKind != "" {
		attrs = append(attrs, slog.String("error_kind", rq.errKind), slog.String("error", rq.errMsg))
	}
	rq.h.log.LogAttrs(ctx, level, "request", attrs...)
}

// routeText describes each binding routing considered (the scores are in
// the usage event's route detail).
func (rq *request) routeText() string {
	var b strings.Builder
	for i := range rq.plan.Bindings {
		c := &rq.plan.Bindings[i]
		if i > 0 {
			b.WriteString("; ")
		}
		if c.Fallback > 0 {
			b.WriteString("fallback ")
			b.WriteString(c.Model.Name)
			b.WriteString(" ")
		}
		if c.Host != nil {
			b.WriteString(c.Host.Slug)
		} else {
			b.WriteString("?")
		}
		b.WriteString("/")
		b.WriteString(string(c.Binding.Shape))
		b.WriteString(": ")
		if c.Skip != routing.Kept {
			b.WriteString("skipped (")
			b.WriteString(c.Skip.String())
			b.WriteString(")")
		} else {
			b.WriteString("kept, ")
			b.WriteString(strconv.Itoa(len(c.Keys)))
			b.WriteString(" keys")
		}
		if n := c.KeysDisabled + c.KeysUnusable + c.KeysNotGranted + c.KeysHeld; n > 0 {
			count := func(n int, what string) {
				if n > 0 {
					b.WriteString(" ")
					b.WriteString(strconv.Itoa(n))
					b.WriteString(" ")
					b.WriteString(what)
				}
			}
			b.WriteString(" [keys left out:")
			count(c.KeysDisabled, "disabled")
			count(c.KeysUnusable, "unusable")
			count(c.KeysNotGranted, "not granted")
			count(c.KeysHeld, "held by breaker")
			b.WriteString("]")
		}
	}
	return b.String()
}

// failText lists failed attempts: host and status for the caller, plus the
// host key slug and upstream detail for the log.
func (rq *request) failText(forLog bool) string {
	var b strings.Builder
	for i, f := range rq.fails {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.host)
		if forLog {
			b.WriteString("/")
			b.WriteString(f.key)
		}
		b.WriteString(": ")
		b.WriteString(f.what)
		if forLog && f.detail != "" {
			b.WriteString(" (")
			b.WriteString(f.detail)
			b.WriteString(")")
		}
	}
	return b.String()
}
