package metrics_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/metrics"
)

// TestMetrics_CacheSeriesMatchTheDocs: /metrics serves every metric of
// docs/metrics.md's "Response cache" table and no other response cache
// series, and relay_response_cache_savings_total is in units of currency.
func TestMetrics_CacheSeriesMatchTheDocs(t *testing.T) {
	t.Parallel()
	reg := metrics.New(metrics.Options{})
	reg.WatchCache(func() metrics.CacheStats { return metrics.CacheStats{Hits: 3, Saved: 2_500_000_000} })
	fams := scrape(t, reg)
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	section = section[strings.Index(section, "## Response cache"):]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(relay_[a-z0-9_]+)`").FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
		if fams[m[1]] == nil {
			t.Errorf("docs/metrics.md documents %s, which /metrics does not serve", m[1])
		}
	}
	for name := range fams {
		if strings.HasPrefix(name, "relay_response_cache_") && !documented[name] {
			t.Errorf("/metrics serves %s, which docs/metrics.md does not document", name)
		}
	}
	if f := fams["relay_response_cache_savings_total"]; f == nil || f.Metric[0].Counter.GetValue() != 2.5 {
		t.Errorf("savings %v, want 2.5", f)
	}
}
