package metrics

import "github.com/prometheus/client_golang/prometheus"

// CacheStats are the response cache's counters (cache.Stats).
type CacheStats struct {
	Hits, Misses, Bypasses, Fills, FillBytes, TooLarge, Errors int64
}

// WatchCache exports the response cache's counters:
// relay_response_cache_{hits,misses,bypasses,fills,fill_bytes,too_large,errors}_total.
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
}

type cacheCollector struct{ stats func() CacheStats }

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range cacheDescs {
		ch <- d
	}
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for i, v := range [...]int64{s.Hits, s.Misses, s.Bypasses, s.Fills, s.FillBytes, s.TooLarge, s.Errors} {
		ch <- prometheus.MustNewConstMetric(cacheDescs[i], prometheus.CounterValue, float64(v))
	}
}
