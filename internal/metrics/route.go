package metrics

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/usage"
)

// Routing and prompt-cache metrics: how much of each host key's prompt
// traffic the provider's cache served, what that saved, and how the
// router's prompt-cache affinity and fallbacks fared (docs/routing.md).

// routeMetrics are the routing metrics of a Registry.
type routeMetrics struct {
	promptTokens *prometheus.CounterVec
	cacheRead    *prometheus.CounterVec
	savings      *prometheus.CounterVec
	affinity     *prometheus.CounterVec
	fallbacks    *prometheus.CounterVec

	mu   sync.RWMutex // guards keys
	keys map[cacheKey]*cacheSeries
}

type cacheKey struct {
	model string
	key   snapshot.ID
}

// cacheSeries is one (model, host key)'s prompt-cache counters, kept also
// as totals for the hit-ratio gauge.
type cacheSeries struct {
	model, host, hostKey string
	prompt, read         prometheus.Counter
	promptN, readN       atomic.Int64
}

var cacheRatioDesc = prometheus.NewDesc("relay_prompt_cache_hit_ratio",
	"Share of prompt tokens read from the provider's prompt cache since this process started, by model, host and host key.",
	[]string{"model", "host", "host_key"}, nil)

func (r *Registry) initRoute(f factory) {
	m := &r.route
	m.keys = make(map[cacheKey]*cacheSeries)
	m.promptTokens = f.counter("relay_prompt_cache_prompt_tokens_total",
		"Prompt tokens sent upstream, cached parts included, by model, host and host key: the denominator of the prompt cache's hit ratio.",
		"model", "host", "host_key")
	m.cacheRead = f.counter("relay_prompt_cache_read_tokens_total",
		"Prompt tokens the provider read from its prompt cache, by model, host and host key.",
		"model", "host", "host_key")
	m.savings = f.counter("relay_prompt_cache_savings_total",
		"What cache reads saved against the binding's full input price, in units of the currency prices are set in.",
		"model", "host")
	m.affinity = f.counter("relay_route_affinity_total",
		"Routed requests by prompt-cache affinity outcome: hit (the session's key), miss (a failover took it elsewhere), off (no affinity: turned off, one key, no session).",
		"model", "outcome")
	m.fallbacks = f.counter("relay_route_fallbacks_total",
		"Requests served by another model than the one asked for, by the model asked for and why: fallback (its own bindings could not serve or failed), budget (a budget refused it), degraded (the policy degraded it rather than let it wait).",
		"model", "reason")
	r.reg.MustRegister(cacheRatioCollector{m})
}

// observeRoute counts one event's routing and prompt-cache figures.
func (r *Registry) observeRoute(ev *usage.Event, model, host string) {
	m := &r.route
	if ev.Route != "" {
		m.affinity.WithLabelValues(model, routeField(ev.Route, "affinity")).Inc()
		switch {
		case routeField(ev.Route, "degraded") != unknown:
			m.fallbacks.WithLabelValues(model, "degraded").Inc()
		case routeField(ev.Route, "budget_fallback") != unknown:
			m.fallbacks.WithLabelValues(model, "budget").Inc()
		case routeField(ev.Route, "fallback") != unknown:
			m.fallbacks.WithLabelValues(model, "fallback").Inc()
		}
	}
	u := ev.Usage
	if ev.HostKeyID == (snapshot.ID{}) || u.Input <= 0 {
		return
	}
	s := r.cacheSeriesFor(model, ev.HostKeyID)
	s.prompt.Add(float64(u.Input))
	s.promptN.Add(u.Input)
	if u.CacheRead <= 0 {
		return
	}
	s.read.Add(float64(u.CacheRead))
	s.readN.Add(u.CacheRead)
	if snap := r.snapshot(); snap != nil {
		if b := snap.Binding(ev.BindingID); b != nil {
			rates := pricing.RatesFor(&b.Pricing, u.Input)
			if d := rates.Input - rates.CacheRead; d > 0 {
				// price is micro-units per million tokens: tokens × price
				// × 1e-12 units.
				m.savings.WithLabelValues(model, host).Add(float64(u.CacheRead) * float64(d) / 1e12)
			}
		}
	}
}

func (r *Registry) cacheSeriesFor(model string, key snapshot.ID) *cacheSeries {
	m := &r.route
	k := cacheKey{model, key}
	m.mu.RLock()
	s := m.keys[k]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	host, slug := r.keyNames(key)
	s = &cacheSeries{model: model, host: host, hostKey: slug,
		prompt: m.promptTokens.WithLabelValues(model, host, slug),
		read:   m.cacheRead.WithLabelValues(model, host, slug)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.keys[k]; old != nil {
		return old
	}
	if len(m.keys) >= maxSeries {
		clear(m.keys)
	}
	m.keys[k] = s
	return s
}

// routeField is the value of name in an X-Relay-Route value, else unknown.
func routeField(route, name string) string {
	for part := range strings.SplitSeq(route, "; ") {
		if v, ok := strings.CutPrefix(part, name+"="); ok {
			return v
		}
	}
	return unknown
}

type cacheRatioCollector struct{ m *routeMetrics }

func (c cacheRatioCollector) Describe(ch chan<- *prometheus.Desc) { ch <- cacheRatioDesc }

func (c cacheRatioCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	for _, s := range c.m.keys {
		if p := s.promptN.Load(); p > 0 {
			ch <- prometheus.MustNewConstMetric(cacheRatioDesc, prometheus.GaugeValue,
				float64(s.readN.Load())/float64(p), s.model, s.host, s.hostKey)
		}
	}
}
