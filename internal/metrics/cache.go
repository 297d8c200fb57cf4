package metrics

import "github.com/prometheus/client_golang/prometheus"

// CacheStats are the response cache's counters (cache.Stats).
type CacheStats struct {
	Hits, Misses, Bypasses, Fills, FillBytes, TooLarge, Errors int64
	// Saved is what hits saved, in nano-units of currency.
	Saved int64
	// The semantic cache's lookups that answered and that did not, its
	// fills and its index failures (cache.SemanticStats).
	SemanticHits, SemanticMisses, SemanticFills, SemanticErrors int64
}

// WatchCache exports the response cache's counters:
// relay_response_cache_{hits,misses,bypasses,fills,fill_bytes,too_large,errors,savings}_total
// and relay_response_cache_semantic_{hits,misses,fills,errors}_total.
func (r *Registry) WatchCache(stats func() CacheStats) {
	r.reg.MustRegister(cacheCollector{stats})
}

var cacheDescs = [...]*prometheus.Desc{
	prometheus.NewDesc("relay_response_cache_hits_total", "Requests answered from the response cache.", nil, nil),
	prometheus.NewDesc("relay_response_cache_misses_total", "Cached requests that went upstream (no entry, or refresh).", nil, nil),
	prometheus.NewDesc("relay_response_cache_bypasses_total", "Requests whose caller asked not to use the response cache.", nil, nil),
	prometheus.NewDesc("relay_response_cache_fills_total", "Answers kept in the response cache.", nil, nil),
	prometheus.NewDesc("relay_response_cache_fill_bytes_total", "Bytes of the entries kept in the response cache.", nil, nil),
	prometheus.NewDesc("relay_response_cache_too_large_total", "Answers not kept: larger than their policy's maximum entry size.", nil, nil),
	prometheus.NewDesc("relay_response_cache_errors_total", "Response cache store failures and unreadable entries (each a miss).", nil, nil),
	prometheus.NewDesc("relay_response_cache_savings_total", "What response cache hits saved: each cached answer's cost at the pricing of the binding that produced it, in units of currency.", nil, nil),
	prometheus.NewDesc("relay_response_cache_semantic_hits_total", "Requests answered by the semantic cache (their exact lookup counted a miss).", nil, nil),
	prometheus.NewDesc("relay_response_cache_semantic_misses_total", "Semantic cache lookups no entry answered.", nil, nil),
	prometheus.NewDesc("relay_response_cache_semantic_fills_total", "Answers kept in the semantic cache with their vector.", nil, nil),
	prometheus.NewDesc("relay_response_cache_semantic_errors_total", "Semantic index failures and unreadable entries (each a miss).", nil, nil),
}

type cacheCollector struct{ stats func() CacheStats }

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range cacheDescs {
		ch <- d
	}
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	vs := [...]float64{float64(s.Hits), float64(s.Misses), float64(s.Bypasses), float64(s.Fills), float64(s.FillBytes),
		float64(s.TooLarge), float64(s.Errors), float64(s.Saved) / 1e9,
		float64(s.SemanticHits), float64(s.SemanticMisses), float64(s.SemanticFills), float64(s.SemanticErrors)}
	for i, v := range vs {
		ch <- prometheus.MustNewConstMetric(cacheDescs[i], prometheus.CounterValue, v)
	}
}
