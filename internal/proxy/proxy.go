// Package proxy is the inference plane's request path: it authenticates a
// caller with the snapshot, routes its request (package routing), admits it
// through the Limiter, picks host keys (package keypool), forwards the
// request upstream with failover before the first byte, and streams the
// answer back byte for byte while reading usage as it goes by. A binding of
// another shape than the caller's is served through package translator,
// event by event (translate.go). It answers errors in the caller's wire
// shape and hands one Record per request to the Recorder.
//
// It must not reach Postgres, the store or the loader: everything it knows
// comes from the snapshot it is handed. Translation itself is package
// translator's job; the proxy only decides when to call it.
package proxy

import (
	"bytes"
	"cmp"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/cache"
	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/guardhook"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/profile"
	"github.com/relay-llm/relay/internal/respstore"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/translator"
	"github.com/relay-llm/relay/internal/upstream"
	"github.com/relay-llm/relay/internal/wire"
)

// Defaults for zero Config fields.
const (
	DefaultMaxBodyBytes     = 32 << 20
	DefaultKeepAlive        = 15 * time.Second
	DefaultRetryBackoff     = 50 * time.Millisecond
	DefaultRetryBackoffMax  = 500 * time.Millisecond
	DefaultMaxAttempts      = 3
	DefaultConnectTimeout   = 5 * time.Second
	DefaultFirstByteTimeout = 60 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	DefaultTotalTimeout     = 10 * time.Minute
	maxEventBytes           = 64 << 20
	maxErrorBodyBytes       = 1 << 20
)

// Config wires a Handler. Only Snapshot is required.
type Config struct {
	// Snapshot returns the current snapshot (an atomic pointer load).
	Snapshot func() *snapshot.Snapshot
	// Breakers hold host-key health; nil: in-process keypool.Memory.
	Breakers keypool.Breakers
	// Supports decides which (inbound, upstream) shape pairs can be
	// served; nil: translator.Supports (the caller's own shape, and every
	// pair a translator exists for).
	Supports routing.Supports
	// Limiter admits requests before a key is picked; nil admits all.
	// A KeyLimiter also admits every attempt with its host key.
	Limiter admission.Limiter
	// MaxInflight caps the inference requests this handler serves at
	// once; above it a request is answered 429 overloaded at once,
	// before authentication. 0: no cap.
	MaxInflight int
	// Recorder receives one Record per authenticated request; nil drops them.
	Recorder Recorder
	// Cache is the response cache for policies that turn it on
	// (cache.go); nil: no request is looked up, whatever its policy says.
	Cache *cache.Cache
	// Capturer receives the payloads of requests whose policy captures
	// them (capture.go); nil: nothing is captured.
	Capturer Capturer
	// Responses keeps the state of stored Responses for the bindings that
	// keep none (responses_state.go); nil: in process memory with
	// respstore's default bounds.
	Responses respstore.Store
	// Objects is the index of upstream objects (package objects): a
	// response an openai_responses upstream stored is found there, with
	// the host key that holds it; nil: in process memory.
	Objects objects.Index
	// Logger gets one line per request; nil discards.
	Logger *slog.Logger
	// TracerProvider traces each request (trace.go); nil: no spans, at no
	// cost on the request path.
	TracerProvider trace.TracerProvider
	// Now is the clock for decisions: credential expiry, breakers, record
	// timestamps. nil: time.Now. Latencies use the monotonic clock.
	Now func() time.Time
	// Live keeps each binding's time to first byte and requests in flight
	// for the latency and least_busy strategies; nil: a new one. The
	// control plane's route explain reads the same one (RouteStats).
	Live *routing.Live
	// Transport carries upstream requests; nil: upstream.NewGuardedTransport
	// over Egress. Per-host connect timeouts need an *upstream.Transport.
	Transport upstream.Client
	// Egress is the rule the default transport's dialer keeps (Relay's own
	// listeners, metadata addresses, RELAY_UPSTREAM_ALLOW); nil: none.
	Egress *egress.Guard
	// MaxBodyBytes caps a request body (413 above); 0: 32 MiB.
	MaxBodyBytes int64
	// MaxHeaders and MaxHeaderBytes bound a request's header fields
	// (RELAY_MAX_HEADERS, RELAY_MAX_HEADER_BYTES; 431 in the caller's
	// shape above them); 0: 100 fields, 64 KiB.
	MaxHeaders, MaxHeaderBytes int
	// KeepAlive is how long a stream may stay silent before Relay sends
	// ": keep-alive"; 0: 15s, negative: never.
	KeepAlive time.Duration
	// RetryBackoff is the base wait before retrying after an upstream
	// failure (doubling, with jitter, up to RetryBackoffMax); 0: 50ms and 500ms.
	RetryBackoff, RetryBackoffMax time.Duration
	// Timeouts for hosts that leave theirs at zero.
	DefaultTimeouts Timeouts
	// Authorizers set each upstream call's credential as the host's
	// profile says (package profile), minting and caching tokens per host
	// key; nil: a new one with its own token caches.
	Authorizers *profile.Authorizers
}

// Timeouts of one upstream attempt.
type Timeouts struct {
	Connect   time.Duration // dialing (and TLS)
	FirstByte time.Duration // until the response headers
	Idle      time.Duration // between two reads of the response body
	Total     time.Duration // the whole attempt
}

// Handler serves the inference endpoints.
type Handler struct {
	snapshot  func() *snapshot.Snapshot
	breakers  keypool.Breakers
	pool      *keypool.Pool
	router    routing.Router
	live      *routing.Live
	limiter   admission.Limiter
	recorder  Recorder
	capturer  Capturer
	responses respstore.Store
	objects   objects.Index
	cache     *cache.Cache
	fills     sync.WaitGroup // cache fills under way
	guards    guardCounters  // the guardrails' actions (guardrail.go)
	hooks     *guardhook.Caller
	log       *slog.Logger
	tracer    trace.Tracer // nil: tracing off
	now       func() time.Time
	transport upstream.Client
	maxBody   int64
	keepAlive time.Duration
	backoff   time.Duration
	backoffTo time.Duration
	timeouts  Timeouts
	// authorizers present host keys to upstreams (package profile).
	authorizers *profile.Authorizers

	maxInflight int64
	// maxHeaders and maxHeaderBytes are Config's, defaults applied.
	maxHeaders, maxHeaderBytes int
	inflight                   atomic.Int64

	reqs sync.Pool // *request

	// streamBufs lends streams their read buffers (streambuf.go).
	streamBufs streamBufs
}

// New returns a Handler for cfg.
func New(cfg Config) *Handler {
	h := &Handler{
		snapshot:  cfg.Snapshot,
		breakers:  cfg.Breakers,
		limiter:   cfg.Limiter,
		recorder:  cfg.Recorder,
		capturer:  cfg.Capturer,
		responses: cfg.Responses,
		objects:   cfg.Objects,
		cache:     cfg.Cache,
		log:       cfg.Logger,
		now:       cfg.Now,
		transport: cfg.Transport,
		maxBody:   cfg.MaxBodyBytes,
		keepAlive: cfg.KeepAlive,
		backoff:   cfg.RetryBackoff,
		backoffTo: cfg.RetryBackoffMax,
		timeouts:  cfg.DefaultTimeouts,

		authorizers: cfg.Authorizers,

		maxInflight:    int64(max(cfg.MaxInflight, 0)),
		maxHeaders:     cmp.Or(max(cfg.MaxHeaders, 0), defaultMaxHeaders),
		maxHeaderBytes: cmp.Or(max(cfg.MaxHeaderBytes, 0), defaultMaxHeaderBytes),
	}
	if cfg.TracerProvider != nil {
		h.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	if h.snapshot == nil {
		empty := snapshot.Empty()
		h.snapshot = func() *snapshot.Snapshot { return empty }
	}
	if h.breakers == nil {
		h.breakers = keypool.NewMemory(keypool.BreakerConfig{})
	}
	if h.limiter == nil {
		h.limiter = nopLimiter{}
	}
	if h.recorder == nil {
		h.recorder = nopRecorder{}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.responses == nil {
		h.responses = respstore.NewMemory(respstore.Limits{}, h.now)
	}
	if h.objects == nil {
		h.objects = objects.NewMemory(objects.Options{Now: h.now})
	}
	if h.transport == nil {
		h.transport = upstream.NewGuardedTransport(cfg.Egress)
	}
	if h.authorizers == nil {
		// Token requests go through the upstream transport: the egress
		// guard checks a token endpoint's addresses at the dial as it
		// checks a host's.
		h.authorizers = profile.NewAuthorizers(profile.Config{Now: h.now, Logger: h.log, Egress: cfg.Egress, Transport: h.transport})
	}
	h.hooks = guardhook.New(h.transport) // webhook guardrails keep the egress guard
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.keepAlive == 0 {
		h.keepAlive = DefaultKeepAlive
	}
	if h.backoff <= 0 {
		h.backoff = DefaultRetryBackoff
	}
	if h.backoffTo <= 0 {
		h.backoffTo = max(DefaultRetryBackoffMax, h.backoff)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&h.timeouts.Connect, DefaultConnectTimeout)
	def(&h.timeouts.FirstByte, DefaultFirstByteTimeout)
	def(&h.timeouts.Idle, DefaultIdleTimeout)
	def(&h.timeouts.Total, DefaultTotalTimeout)
	h.pool = keypool.NewPool(h.breakers)
	supports := cfg.Supports
	if supports == nil {
		supports = translator.Supports
	}
	h.live = cfg.Live
	if h.live == nil {
		h.live = routing.NewLive(0)
	}
	h.router = routing.Router{Supports: supports, Breakers: h.breakers, Stats: h.live}
	h.reqs.New = func() any { return new(request) }
	return h
}

// Breakers returns the handler's breakers, for the control API's listing.
func (h *Handler) Breakers() keypool.Breakers { return h.breakers }

// RouteStats returns the live figures the router orders by, for the
// control API's route explain.
func (h *Handler) RouteStats() routing.Stats { return h.live }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := h.reqs.Get().(*request)
	rq.init(h, w, r)
	defer h.release(rq)
	if h.tracer != nil {
		rq.startTrace()
	}

	c := wire.ParseCall(r)
	rq.call, rq.in = c, c.In
	if c.GoogleKey {
		geminiKey(r)
	}
	switch {
	case c.Models:
		h.serveModelsAt(rq, c.Model)
		return
	case c.In != wire.InboundNone:
	case c.Path == "/":
		serveRoot(rq)
		return
	case h.serveObjectRoute(rq, c.Path): // files and batches (files.go)
		return
	default:
		if id, ok := strings.CutPrefix(c.Path, "/v1/responses/"); ok && id != "" {
			h.serveStoredResponse(rq, id)
			return
		}
		if rest, ok := strings.CutPrefix(c.Path, "/v1/conversations"); ok && (rest == "" || rest[0] == '/') {
			h.serveConversations(rq, rest)
			return
		}
		rq.fail(wire.Errorf(wire.ErrNotFound, "No such endpoint: %s %s.", r.Method, r.URL.Path))
		rq.finish()
		return
	}
	if r.Method != http.MethodPost {
		rq.fail(wire.Errorf(wire.ErrMethodNotAllowed, "Use POST for %s.", r.URL.Path))
		rq.finish()
		return
	}
	if c.Refused != nil {
		rq.fail(c.Refused)
		rq.finish()
		return
	}
	h.serveLimited(rq)
}

// serveLimited serves an inference request within MaxInflight, once its
// headers are within bounds (checkHeaderBounds).
func (h *Handler) serveLimited(rq *request) {
	if err := checkHeaderBounds(rq.r.Header, h.maxHeaders, h.maxHeaderBytes); err != nil {
		rq.fail(err)
		rq.finish()
		return
	}
	if h.maxInflight > 0 {
		n := h.inflight.Add(1)
		defer h.inflight.Add(-1)
		if n > h.maxInflight {
			rq.fail(&wire.Error{Kind: wire.ErrOverloaded, Msg: "Relay is serving as many requests as it may at once; retry shortly.", RetryAfter: time.Second})
			rq.finish()
			return
		}
	}
	h.serveInference(rq)
	rq.finish()
}

// serveModelsAt answers GET /v1/models (name "") and GET /v1/models/{name}.
func (h *Handler) serveModelsAt(rq *request, name string) {
	if rq.r.Method != http.MethodGet {
		rq.fail(wire.Errorf(wire.ErrMethodNotAllowed, "Use GET for %s.", rq.r.URL.Path))
	} else {
		h.serveModels(rq, name)
	}
	rq.finish()
}

func (h *Handler) release(rq *request) {
	abort := rq.abort
	rq.reset()
	h.reqs.Put(rq)
	if abort {
		// The response started and its body broke: cut the connection so the
		// caller sees a truncated response, not a complete one.
		panic(http.ErrAbortHandler)
	}
}

// serveInference runs one inference request end to end.
func (h *Handler) serveInference(rq *request) {
	as := rq.child(spanAuth)
	ok := rq.authenticate()
	if as != nil {
		rq.endAuth(as, ok)
	}
	if !ok {
		return
	}
	rq.recorded = true
	if rq.caller.Policy != nil && rq.caller.Policy.CapturePayloads {
		rq.startCapture()
	}
	if rq.in.Multipart() {
		if b := formBoundary(rq.r.Header.Get("Content-Type")); b != "" {
			h.serveForm(rq, b)
			return
		}
	}
	if !rq.readBody() {
		return
	}
	if !rq.guardsIn() {
		return // blocked by a guardrail
	}
	scan, err := rq.call.Scan(rq.body.Bytes())
	if we, ok := err.(*wire.Error); ok { // a refusal that names its member
		rq.fail(we)
		return
	}
	if err != nil {
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Msg: "Could not parse the request body: " + err.Error()})
		return
	}
	rq.scan = scan
	rq.stream = scan.Stream
	facts, err := rq.scan.Route(rq.body.Bytes())
	if err != nil {
		rq.fail(err) // a duplicate of a member routing decides on
		return
	}
	h.routeAndForward(rq, &facts)
}

// routeAndForward routes a scanned request, admits it and forwards it.
func (h *Handler) routeAndForward(rq *request, facts *wire.RouteFacts) {
	rq.routeRequest(facts)
	rs := rq.child(spanRoute)
	err := h.router.RouteRequest(rq.snap, rq.caller.Policy, &rq.route, rq.at, &rq.plan)
	if err != nil {
		rq.fail(err)
	}
	if rs != nil {
		rq.endRoute(rs, err)
	}
	if err != nil {
		return
	}
	if rq.in == wire.InboundResponses && !rq.prepareState() {
		return
	}
	if rq.rc == nil && rq.serveCached() {
		return // answered from the response cache
	}
	if kl, ok := h.limiter.(admission.KeyLimiter); ok {
		// Admitted attempt by attempt in forward, with each host key.
		res, err := kl.Reserve(rq.admission())
		if err != nil {
			rq.limiterFailed(err)
			return
		}
		rq.res, rq.settle = res, res.Done
		rq.routed()
		rq.forward()
		return
	}
	ls := rq.child(spanReserve)
	done, err := h.limiter.Admit(rq.r.Context(), rq.admission())
	if ls != nil {
		rq.endReserve(ls, err)
	}
	if err != nil {
		rq.limiterFailed(err) // a budget's refusal may go on to a fallback
		return
	}
	rq.settle = done
	rq.routed()
	rq.forward()
}

// keep empties b for reuse by the next request, unless it grew past limit.
func keep(b []byte, limit int) []byte {
	if cap(b) > limit {
		return nil
	}
	return b[:0]
}

// keepBuffer is keep for a bytes.Buffer.
func keepBuffer(b *bytes.Buffer, limit int) {
	if b.Cap() > limit {
		*b = bytes.Buffer{}
		return
	}
	b.Reset()
}
