// Package metrics is Relay's Prometheus registry and the /metrics handler of
// the control plane. It owns the metric names and their label sets, and
// learns what happened from seams the other packages already have: usage
// events (usage.Observer), breaker reports (a keypool.Breakers wrapper), the
// snapshot's version and age, the usage writer's counters, an in-flight
// middleware around the inference handler (WrapInference), and the Pacing methods a limiter
// may call. It holds no package-level state: every metric lives in the
// Registry that New returns.
//
// Labels stay bounded: models and hosts by catalog name or slug (a model
// name the catalog does not know is "unknown"), host keys by slug, statuses
// by HTTP code, error kinds from docs/errors.md. No request id, relay key,
// project or secret is ever a label; per-project and per-key figures come
// from the usage API instead.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/relay-llm/relay/internal/genai"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/usage"
)

// SnapshotStatus reports the published snapshot; *loader.Loader is one.
type SnapshotStatus interface {
	Version() uint64
	Age() time.Duration
}

// UsageStats reports the usage writer's counters; *usage.Writer is one.
type UsageStats interface {
	Stats() usage.Stats
}

// Pacing is what a limiter reports about its pacing queue; *Registry
// implements it. PacingStarted is called when a request starts waiting for
// budget, PacingEnded once when it stops, with how long it waited and why it
// stopped: "admitted", "refused" (the wait would exceed the policy's limit)
// or "canceled" (the caller went away).
type Pacing interface {
	PacingStarted()
	PacingEnded(wait time.Duration, outcome string)
}

// Options configure a Registry. All fields are optional.
type Options struct {
	// Snapshot returns the current snapshot: it names host keys and hosts in
	// breaker and attempt metrics.
	Snapshot func() *snapshot.Snapshot
	// Status gives the snapshot version and age gauges.
	Status SnapshotStatus
	// Now is the clock breaker states are read with; nil: time.Now.
	Now func() time.Time
}

// Label values for what is not known.
const (
	unknown = "unknown"
	none    = "none"
)

// Registry holds every Relay metric.
type Registry struct {
	reg      *prometheus.Registry
	snapshot func() *snapshot.Snapshot
	now      func() time.Time

	requests   *prometheus.CounterVec
	errors     *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	ttfb       *prometheus.HistogramVec
	overhead   *prometheus.HistogramVec
	tokens     *prometheus.CounterVec
	cost       *prometheus.CounterVec
	refusals   *prometheus.CounterVec
	failovers  *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	inFlight   prometheus.Gauge
	responses  *prometheus.CounterVec
	pacing     atomic.Int64 // PacingStarted − PacingEnded
	limiter    atomic.Pointer[func() LimiterStats]
	pacingWait *prometheus.HistogramVec

	// The OpenTelemetry GenAI client metrics (package genai), under their
	// Prometheus names.
	genaiTokens   *prometheus.HistogramVec
	genaiDuration *prometheus.HistogramVec

	route routeMetrics // route.go
	mcp   mcpMetrics   // mcp.go

	mu     sync.RWMutex // guards series
	series map[seriesKey]*requestSeries
}

// New returns a Registry with Relay's metrics and the Go runtime and
// process collectors.
func New(o Options) *Registry {
	r := &Registry{
		reg:      prometheus.NewRegistry(),
		snapshot: o.Snapshot,
		now:      o.Now,
		series:   make(map[seriesKey]*requestSeries),
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.snapshot == nil {
		r.snapshot = func() *snapshot.Snapshot { return nil }
	}
	f := factory{r.reg}
	r.requests = f.counter("relay_requests_total",
		"Authenticated inference requests by model, host, inbound and upstream shape and the HTTP status sent to the caller (499: the caller went away).",
		"model", "host", "inbound_shape", "upstream_shape", "status")
	r.errors = f.counter("relay_request_errors_total",
		"Requests that ended with an error, by kind (docs/errors.md: the codes, upstream_client_error, upstream_stream_error, client_canceled).",
		"model", "host", "kind")
	r.duration = f.histogram("relay_request_duration_seconds",
		"Time from a request's arrival to the end of its response.",
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		"model", "host", "stream")
	r.ttfb = f.histogram("relay_time_to_first_byte_seconds",
		"Time from a request's arrival to the first byte sent to the caller.",
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2, 5, 10, 30, 60},
		"model", "host", "stream")
	r.overhead = f.histogram("relay_overhead_seconds",
		"Relay's own time before the first upstream attempt (authentication, body, routing, rate-limit admission including any pacing wait), for requests that reached an upstream.",
		[]float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .1, 1, 10},
		"inbound_shape")
	r.tokens = f.counter("relay_tokens_total",
		"Tokens as upstreams reported them, by type: input (the whole prompt, cached parts included), output (reasoning included), cached_read, cache_write, reasoning.",
		"model", "host", "type")
	r.cost = f.counter("relay_cost_total",
		"Cost of requests in units of the currency prices are set in (the usage ledger keeps exact nano-units).",
		"model", "host")
	r.refusals = f.counter("relay_rate_limit_refusals_total",
		"Authenticated requests refused with 429, by source: relay (a rate limit of Relay's limiter), budget (a spend budget), upstream (every host key was rate limited upstream).",
		"model", "source")
	r.failovers = f.counter("relay_upstream_failovers_total",
		"Upstream attempts made after an earlier attempt of the same request failed (another host key or binding, or a retry).",
		"model")
	r.attempts = f.counter("relay_upstream_attempts_total",
		"Upstream attempts by host, host key and outcome: success (2xx, or a 4xx that was the caller's fault), failure (5xx, network error, timeout, a broken stream), rate_limited (429), auth_failed (401/403). Attempts the caller abandoned are not counted.",
		"host", "host_key", "outcome")
	r.inFlight = f.gauge("relay_requests_in_flight", "Inference requests being served.")
	r.responses = f.counter("relay_inference_responses_total",
		"Every response of the inference plane by HTTP status, including requests refused before the caller was known (401, unknown endpoints, the in-flight cap).",
		"status")
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "relay_pacing_queue_length",
		Help: "Requests waiting in the pacing queue for rate-limit budget.",
	}, func() float64 {
		n := r.pacing.Load()
		if f := r.limiter.Load(); f != nil {
			n += (*f)().Waiting
		}
		return float64(n)
	}))
	r.pacingWait = f.histogram("relay_pacing_wait_seconds",
		"Time requests waited in the pacing queue, by outcome: admitted, refused, canceled.",
		[]float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		"outcome")
	r.genaiTokens = f.histogram("gen_ai_client_token_usage",
		"OpenTelemetry GenAI gen_ai.client.token.usage (semantic conventions "+genai.SemconvVersion+"): tokens per upstream operation, by gen_ai.token.type input or output.",
		[]float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864},
		"gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "gen_ai_token_type")
	r.genaiDuration = f.histogram("gen_ai_client_operation_duration_seconds",
		"OpenTelemetry GenAI gen_ai.client.operation.duration (semantic conventions "+genai.SemconvVersion+"): duration of requests that reached an upstream; error_type is the HTTP status sent to the caller when it was an error.",
		[]float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92},
		"gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "error_type")
	r.initRoute(f)
	r.initMCP(f)
	if o.Status != nil {
		r.reg.MustRegister(snapshotCollector{o.Status})
	}
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return r
}

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it), for the control plane's
// GET /metrics.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Registerer lets other packages add their own collectors.
func (r *Registry) Registerer() prometheus.Registerer { return r.reg }

// Gatherer is the registry for tests and custom handlers.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// WatchUsage exports the usage writer's counters.
func (r *Registry) WatchUsage(s UsageStats) { r.reg.MustRegister(usageCollector{s}) }

// WrapInference wraps the inference handler to count the requests it is
// serving and the status of every response it sends, including those the
// usage ledger never sees (401s, unknown endpoints, the in-flight cap's
// 429s: refused before the caller is known).
func (r *Registry) WrapInference(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.inFlight.Inc()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			r.inFlight.Dec()
			r.responses.WithLabelValues(statusText(sw.status)).Inc()
		}()
		next.ServeHTTP(sw, req)
	})
}

// statusWriter remembers the status a handler sent. http.ResponseController
// reaches the connection's Flush through Unwrap.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Flush lets callers that type-assert http.Flusher flush through the wrapper.
func (s *statusWriter) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// statusText is the label of a status; 0 (a handler that wrote nothing, or
// panicked first) is "none".
func statusText(code int) string {
	if code == 0 {
		return none
	}
	return strconv.Itoa(code)
}

// PacingStarted implements Pacing.
func (r *Registry) PacingStarted() { r.pacing.Add(1) }

// PacingEnded implements Pacing.
func (r *Registry) PacingEnded(wait time.Duration, outcome string) {
	r.pacing.Add(-1)
	switch outcome {
	case "admitted", "refused", "canceled":
	default:
		outcome = unknown
	}
	r.pacingWait.WithLabelValues(outcome).Observe(wait.Seconds())
}

var _ Pacing = (*Registry)(nil)

// seriesKey picks the per-request series of one label combination.
type seriesKey struct {
	model, host       string
	inbound, upstream string
	status            int
	stream            bool
}

// requestSeries are the children a request updates, looked up once per
// label combination so that recording a request costs map reads, not label
// hashing.
type requestSeries struct {
	requests           prometheus.Counter
	duration, ttfb     prometheus.Observer
	overhead           prometheus.Observer
	input, output      prometheus.Counter
	cacheRead          prometheus.Counter
	cacheWrite         prometheus.Counter
	reasoning          prometheus.Counter
	cost               prometheus.Counter
	failovers          prometheus.Counter
	modelName, hostTag string
	// GenAI client metrics; nil unless the request reached a host and is a
	// model operation.
	genaiIn, genaiOut, genaiDuration prometheus.Observer
}

// ObserveUsage implements usage.Observer: it updates the request, latency,
// token, cost, refusal and failover metrics from one event.
func (r *Registry) ObserveUsage(ev usage.Event) {
	s := r.seriesFor(&ev)
	s.requests.Inc()
	if ev.ErrorKind != "" {
		r.errors.WithLabelValues(s.modelName, s.hostTag, ev.ErrorKind).Inc()
	}
	if source := refusalSource(ev.ErrorKind); source != "" {
		r.refusals.WithLabelValues(s.modelName, source).Inc()
	}
	s.duration.Observe(ev.Total.Seconds())
	if ev.TimeToFirstByte > 0 {
		s.ttfb.Observe(ev.TimeToFirstByte.Seconds())
	}
	if ev.Attempts > 0 {
		s.overhead.Observe(ev.Overhead.Seconds())
	}
	if ev.Attempts > 1 {
		s.failovers.Add(float64(ev.Attempts - 1))
	}
	u := ev.Usage
	add := func(c prometheus.Counter, n int64) {
		if n > 0 {
			c.Add(float64(n))
		}
	}
	add(s.input, u.Input)
	add(s.output, u.Output)
	add(s.cacheRead, u.CacheRead)
	add(s.cacheWrite, u.CacheWrite)
	add(s.reasoning, u.Reasoning)
	if ev.Cost > 0 {
		s.cost.Add(float64(ev.Cost) / 1e9)
	}
	r.observeRoute(&ev, s.modelName, s.hostTag)
	if s.genaiDuration != nil && ev.Attempts > 0 {
		s.genaiDuration.Observe(ev.Total.Seconds())
		if !u.IsZero() {
			s.genaiIn.Observe(float64(u.Input))
			s.genaiOut.Observe(float64(u.Output))
		}
	}
}

var _ usage.Observer = (*Registry)(nil)

// refusalSource names who refused a request with 429, "" if none did.
func refusalSource(kind string) string {
	switch kind {
	case "rate_limited":
		return "relay" // a policy's rate limit or a host key's tier limit
	case "budget_exceeded":
		return "budget"
	case "overloaded":
		return "overloaded" // the pod's in-flight cap, should it ever come after authentication
	case "upstream_rate_limited":
		return "upstream"
	}
	return ""
}

func (r *Registry) seriesFor(ev *usage.Event) *requestSeries {
	k := seriesKey{model: ev.Model, host: ev.HostSlug, inbound: ev.Inbound, upstream: string(ev.Upstream), status: ev.Status, stream: ev.Stream}
	if ev.ModelID == uuid.Nil {
		k.model = unknown // the caller's own text: unbounded
	}
	if ev.HostID == uuid.Nil {
		k.host = none
	}
	r.mu.RLock()
	s := r.series[k]
	r.mu.RUnlock()
	if s != nil {
		return s
	}
	return r.newSeries(k)
}

func (r *Registry) newSeries(k seriesKey) *requestSeries {
	model, host := k.model, k.host
	inbound, upstream := k.inbound, k.upstream
	if inbound == "" {
		inbound = none
	}
	if upstream == "" {
		upstream = none
	}
	stream := strconv.FormatBool(k.stream)
	s := &requestSeries{
		requests:   r.requests.WithLabelValues(model, host, inbound, upstream, strconv.Itoa(k.status)),
		duration:   r.duration.WithLabelValues(model, host, stream),
		ttfb:       r.ttfb.WithLabelValues(model, host, stream),
		overhead:   r.overhead.WithLabelValues(inbound),
		input:      r.tokens.WithLabelValues(model, host, "input"),
		output:     r.tokens.WithLabelValues(model, host, "output"),
		cacheRead:  r.tokens.WithLabelValues(model, host, "cached_read"),
		cacheWrite: r.tokens.WithLabelValues(model, host, "cache_write"),
		reasoning:  r.tokens.WithLabelValues(model, host, "reasoning"),
		cost:       r.cost.WithLabelValues(model, host),
		failovers:  r.failovers.WithLabelValues(model),
		modelName:  model,
		hostTag:    host,
	}
	if op := genai.Operation(k.inbound); op != "" && k.host != none {
		provider := genai.ProviderUnrecognised
		if snap := r.snapshot(); snap != nil {
			if h := snap.HostBySlug(k.host); h != nil {
				provider = genai.Provider(h.Provider)
			}
		}
		errType := ""
		if k.status >= 400 {
			errType = strconv.Itoa(k.status)
		}
		s.genaiIn = r.genaiTokens.WithLabelValues(op, provider, model, genai.TokenTypeInput)
		s.genaiOut = r.genaiTokens.WithLabelValues(op, provider, model, genai.TokenTypeOutput)
		s.genaiDuration = r.genaiDuration.WithLabelValues(op, provider, model, errType)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.series[k]; old != nil {
		return old
	}
	if len(r.series) >= maxSeries {
		// A catalog churning through names: stop caching, keep counting.
		clear(r.series)
	}
	r.series[k] = s
	return s
}

// maxSeries bounds the cache of per-request series.
const maxSeries = 10000

// factory registers metrics on one registry.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

// Breakers ----------------------------------------------------------------------

// Breakers wraps b so that every attempt it is told about counts in
// relay_upstream_attempts_total, and exports the state of every host key's
// breaker as relay_host_key_breaker_state. Hand the wrapper to proxy.Config
// (and to whatever lists breakers); it behaves as b.
func (r *Registry) Breakers(b keypool.Breakers) keypool.Breakers {
	r.reg.MustRegister(breakerCollector{b: b, snapshot: r.snapshot, now: r.now})
	return observedBreakers{Breakers: b, r: r}
}

type observedBreakers struct {
	keypool.Breakers
	r *Registry
}

// Report implements keypool.Breakers.
func (o observedBreakers) Report(t keypool.Ticket, res keypool.Result, now time.Time) {
	o.Breakers.Report(t, res, now)
	if res.Outcome == keypool.OutcomeNeutral {
		// No verdict: the caller went away, or the key was claimed and
		// released unused (a limiter refusal, a canceled backoff). Not
		// counted: most of these never reached the upstream.
		return
	}
	host, key := o.r.keyNames(t.Ref.ID)
	o.r.attempts.WithLabelValues(host, key, outcomeName(res.Outcome)).Inc()
}

// keyNames returns the slugs of a host key and its host.
func (r *Registry) keyNames(id snapshot.ID) (host, key string) {
	host, key = unknown, unknown
	snap := r.snapshot()
	if snap == nil {
		return
	}
	k := snap.HostKey(id)
	if k == nil {
		return
	}
	key = k.Slug
	if h := snap.Host(k.HostID); h != nil {
		host = h.Slug
	}
	return
}

func outcomeName(o keypool.Outcome) string {
	switch o {
	case keypool.OutcomeSuccess:
		return "success"
	case keypool.OutcomeFailure:
		return "failure"
	case keypool.OutcomeRateLimited:
		return "rate_limited"
	case keypool.OutcomeAuth:
		return "auth_failed"
	case keypool.OutcomeQuota:
		return "quota_exhausted"
	}
	return unknown
}

// breakerStates are the values relay_host_key_breaker_state takes.
var breakerStates = []keypool.State{
	keypool.StateClosed, keypool.StateOpen, keypool.StateHalfOpen, keypool.StateCooling, keypool.StateAuthFailed, keypool.StateQuotaExhausted,
}

var breakerDesc = prometheus.NewDesc("relay_host_key_breaker_state",
	"1 for the state each host key's own circuit breaker is in (closed, open, half_open, cooling, auth_failed, quota_exhausted), 0 for the others.",
	[]string{"host", "host_key", "state"}, nil)

// breakerCollector reads the breakers at scrape time, for every enabled host
// key of the current snapshot.
type breakerCollector struct {
	b        keypool.Breakers
	snapshot func() *snapshot.Snapshot
	now      func() time.Time
}

func (c breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerDesc }

func (c breakerCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.snapshot()
	if snap == nil {
		return
	}
	states := make(map[keypool.KeyRef]keypool.State)
	for _, s := range c.b.States(c.now()) {
		if s.Model == "" { // the key's own hold; holds of one model are listed by /api/breakers
			states[s.Ref] = s.State
		}
	}
	for _, k := range snap.AllHostKeys() {
		if !k.Enabled {
			continue
		}
		host := unknown
		if h := snap.Host(k.HostID); h != nil {
			host = h.Slug
		}
		cur, ok := states[keypool.Ref(k)]
		if !ok {
			cur = keypool.StateClosed
		}
		for _, st := range breakerStates {
			v := 0.0
			if st == cur {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, v, host, k.Slug, string(st))
		}
	}
}

// Limiter -----------------------------------------------------------------------

// LimiterStats are a rate limiter's counters since it started; map your
// limiter's own stats onto them for WatchLimiter.
type LimiterStats struct {
	Waiting        int64  // requests in pacing queues now
	Admitted       uint64 // reservations granted
	Paced          uint64 // reservations that waited in a pacing queue
	Refused        uint64 // 429 rate_limited
	BudgetRefused  uint64 // 429 budget_exceeded
	FailOpen       uint64 // reservations made against a local share while the limiter's store was down
	FailClosed     uint64 // 503 limiter_unavailable
	StoreErrors    uint64 // failed or timed-out calls to the limiter's store
	SettleDropped  uint64 // settlements dropped, whole or their token adjustments, on a full queue
	LeasesDropped  uint64 // concurrency lease releases lost (the leases expire by their TTL instead)
	StoreAvailable bool   // whether the limiter's store (Redis) is in use
	// PacedAdmitted counts reservations granted after waiting in a queue.
	PacedAdmitted uint64
	// Refusals by why the request could not wait (longer): its estimate
	// can never fit, its wait would pass its deadline, its queue was full.
	RefusedNeverFits, RefusedWaitTooLong, RefusedQueueFull uint64
	// Degraded counts requests sent to a cheaper fallback instead of
	// waiting (the policy's degrade option).
	Degraded uint64
}

var limiterDescs = struct {
	admitted, paced, refused, failOpen, failClosed, storeErrors, settleDropped, leasesDropped, available *prometheus.Desc
	admittedAfterWait, pacingRefusals, degraded                                                          *prometheus.Desc
}{
	degraded: prometheus.NewDesc("relay_pacing_degraded_total",
		"Requests the limiter sent to their model's cheaper fallback instead of letting them wait (the policy's degrade_after_ms or degrade_below_priority).", nil, nil),
	admittedAfterWait: prometheus.NewDesc("relay_rate_limiter_admitted_after_wait_total", "Reservations the rate limiter granted after they waited in a pacing queue.", nil, nil),
	pacingRefusals: prometheus.NewDesc("relay_pacing_refusals_total",
		"Requests the limiter refused, by why they could not wait (longer): never_fits (the estimate is larger than the rule or budget), wait_too_long (past max_wait_ms or the caller's deadline), queue_full, fail_closed (Redis down, the policy fails closed).",
		[]string{"reason"}, nil),
	admitted:      prometheus.NewDesc("relay_rate_limiter_admitted_total", "Reservations the rate limiter granted.", nil, nil),
	paced:         prometheus.NewDesc("relay_rate_limiter_paced_total", "Reservations that waited in a pacing queue before they were granted or refused.", nil, nil),
	refused:       prometheus.NewDesc("relay_rate_limiter_refused_total", "Reservations the rate limiter refused, by reason: rate_limited, budget_exceeded.", []string{"reason"}, nil),
	failOpen:      prometheus.NewDesc("relay_rate_limiter_fail_open_total", "Reservations made against a local share of the limits while the limiter's store was down.", nil, nil),
	failClosed:    prometheus.NewDesc("relay_rate_limiter_fail_closed_total", "Requests refused with 503 because the limiter's store was down.", nil, nil),
	storeErrors:   prometheus.NewDesc("relay_rate_limiter_store_errors_total", "Failed or timed-out calls to the limiter's store.", nil, nil),
	settleDropped: prometheus.NewDesc("relay_rate_limiter_settlements_dropped_total", "Settlements of actual usage dropped on a full queue, whole or their token adjustments (the estimates stand).", nil, nil),
	leasesDropped: prometheus.NewDesc("relay_rate_limiter_lease_releases_dropped_total", "Concurrency lease releases lost on an overfull settle queue; those leases expire by their TTL instead.", nil, nil),
	available:     prometheus.NewDesc("relay_rate_limiter_store_up", "1 while the limiter's shared store (Redis) is in use, 0 while calls to it are skipped after a failure.", nil, nil),
}

// WatchLimiter exports a rate limiter's counters, read at scrape time, and
// adds its Waiting to relay_pacing_queue_length. Call it once; a limiter that
// reports through Pacing instead must leave Waiting at 0.
func (r *Registry) WatchLimiter(stats func() LimiterStats) {
	r.limiter.Store(&stats)
	r.reg.MustRegister(limiterCollector{stats})
}

type limiterCollector struct{ stats func() LimiterStats }

func (c limiterCollector) Describe(ch chan<- *prometheus.Desc) {
	d := limiterDescs
	for _, x := range []*prometheus.Desc{d.admitted, d.paced, d.refused, d.failOpen, d.failClosed, d.storeErrors, d.settleDropped, d.leasesDropped, d.available, d.admittedAfterWait, d.pacingRefusals, d.degraded} {
		ch <- x
	}
}

func (c limiterCollector) Collect(ch chan<- prometheus.Metric) {
	s, d := c.stats(), limiterDescs
	counter := func(desc *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	counter(d.admitted, s.Admitted)
	counter(d.paced, s.Paced)
	counter(d.refused, s.Refused, "rate_limited")
	counter(d.refused, s.BudgetRefused, "budget_exceeded")
	counter(d.failOpen, s.FailOpen)
	counter(d.failClosed, s.FailClosed)
	counter(d.storeErrors, s.StoreErrors)
	counter(d.settleDropped, s.SettleDropped)
	counter(d.leasesDropped, s.LeasesDropped)
	counter(d.admittedAfterWait, s.PacedAdmitted)
	counter(d.pacingRefusals, s.RefusedNeverFits, "never_fits")
	counter(d.pacingRefusals, s.RefusedWaitTooLong, "wait_too_long")
	counter(d.pacingRefusals, s.RefusedQueueFull, "queue_full")
	counter(d.pacingRefusals, s.FailClosed, "fail_closed")
	counter(d.degraded, s.Degraded)
	up := 0.0
	if s.StoreAvailable {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(d.available, prometheus.GaugeValue, up)
}

// Snapshot and usage writer ------------------------------------------------------

var (
	snapshotVersionDesc = prometheus.NewDesc("relay_snapshot_version", "Version of the catalog snapshot this process serves.", nil, nil)
	snapshotAgeDesc     = prometheus.NewDesc("relay_snapshot_age_seconds", "Seconds since the served snapshot was last synchronised with Postgres.", nil, nil)
)

type snapshotCollector struct{ s SnapshotStatus }

func (c snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- snapshotVersionDesc
	ch <- snapshotAgeDesc
}

func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(snapshotVersionDesc, prometheus.GaugeValue, float64(c.s.Version()))
	ch <- prometheus.MustNewConstMetric(snapshotAgeDesc, prometheus.GaugeValue, c.s.Age().Seconds())
}

var (
	usageQueuedDesc     = prometheus.NewDesc("relay_usage_queue_length", "Usage events waiting for the writer.", nil, nil)
	usageCapacityDesc   = prometheus.NewDesc("relay_usage_queue_capacity", "Size of the usage event queue; beyond it events are dropped.", nil, nil)
	usageDroppedDesc    = prometheus.NewDesc("relay_usage_events_dropped_total", "Usage events dropped because the queue was full (or the writer was closing).", nil, nil)
	usageWrittenDesc    = prometheus.NewDesc("relay_usage_events_written_total", "Usage events in the ledger, including those a retried batch found already stored.", nil, nil)
	usageDuplicateDesc  = prometheus.NewDesc("relay_usage_events_duplicate_total", "Usage events a retried batch found already stored.", nil, nil)
	usageLostDesc       = prometheus.NewDesc("relay_usage_events_lost_total", "Usage events given up: every write attempt failed (no spool), the spool was full, or Postgres rejected the batch.", nil, nil)
	usageLostBatchDesc  = prometheus.NewDesc("relay_usage_batches_lost_total", "Usage batches that failed every write attempt.", nil, nil)
	usageRetriesDesc    = prometheus.NewDesc("relay_usage_write_retries_total", "Failed usage batch writes that were retried.", nil, nil)
	usageUnpricedDesc   = prometheus.NewDesc("relay_usage_events_unpriced_total", "Usage events whose binding was gone from the snapshot, stored with cost 0.", nil, nil)
	usageSpilledDesc    = prometheus.NewDesc("relay_usage_events_spilled_total", "Usage events written to the on-disk spool because Postgres could not take them.", nil, nil)
	usageReplayedDesc   = prometheus.NewDesc("relay_usage_events_replayed_total", "Usage events replayed from the spool into the ledger.", nil, nil)
	usageSpoolDesc      = prometheus.NewDesc("relay_usage_spool_bytes", "Size of the usage spool: batches waiting for Postgres.", nil, nil)
	usageCollectorDescs = []*prometheus.Desc{
		usageQueuedDesc, usageCapacityDesc, usageDroppedDesc, usageWrittenDesc, usageDuplicateDesc,
		usageLostDesc, usageLostBatchDesc, usageRetriesDesc, usageUnpricedDesc,
		usageSpilledDesc, usageReplayedDesc, usageSpoolDesc,
	}
)

type usageCollector struct{ s UsageStats }

func (c usageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range usageCollectorDescs {
		ch <- d
	}
}

func (c usageCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(usageQueuedDesc, float64(st.Queued))
	gauge(usageCapacityDesc, float64(st.Capacity))
	counter(usageDroppedDesc, st.Dropped)
	counter(usageWrittenDesc, st.Written)
	counter(usageDuplicateDesc, st.Duplicates)
	counter(usageLostDesc, st.Lost)
	counter(usageLostBatchDesc, st.LostBatch)
	counter(usageRetriesDesc, st.Retries)
	counter(usageUnpricedDesc, st.Unpriced)
	counter(usageSpilledDesc, st.Spilled)
	counter(usageReplayedDesc, st.Replayed)
	gauge(usageSpoolDesc, float64(st.SpoolBytes))
}

// CaptureStats are the payload capture writer's counters.
type CaptureStats struct {
	Dropped uint64 // refused: the queue was full
	Written uint64
	Lost    uint64 // in batches that failed every write attempt
}

// WatchCaptures exports the payload capture writer's counters:
// relay_payload_captures_dropped_total, _written_total and _lost_total.
func (r *Registry) WatchCaptures(stats func() CaptureStats) {
	r.reg.MustRegister(captureCollector{stats})
}

var captureDescs = struct{ dropped, written, lost *prometheus.Desc }{
	dropped: prometheus.NewDesc("relay_payload_captures_dropped_total", "Payload captures dropped because the capture queue was full.", nil, nil),
	written: prometheus.NewDesc("relay_payload_captures_written_total", "Payload captures written to payload_captures.", nil, nil),
	lost:    prometheus.NewDesc("relay_payload_captures_lost_total", "Payload captures in batches that failed every write attempt.", nil, nil),
}

type captureCollector struct{ stats func() CaptureStats }

func (c captureCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- captureDescs.dropped
	ch <- captureDescs.written
	ch <- captureDescs.lost
}

func (c captureCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(captureDescs.dropped, prometheus.CounterValue, float64(s.Dropped))
	ch <- prometheus.MustNewConstMetric(captureDescs.written, prometheus.CounterValue, float64(s.Written))
	ch <- prometheus.MustNewConstMetric(captureDescs.lost, prometheus.CounterValue, float64(s.Lost))
}
