package validate

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestObservability_NamesDocumentedMetrics holds the alert rules and the
// dashboard to the metrics docs/metrics.md documents, so a renamed metric
// cannot leave a silent alert behind.
func TestObservability_NamesDocumentedMetrics(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(relay_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	name := regexp.MustCompile(`\brelay_[a-z0-9_]+`)
	for _, file := range []string{"../prometheus/alerts.yaml", "../grafana/relay-dashboard.json"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, n := range name.FindAllString(string(raw), -1) {
			base := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !documented[base] {
				t.Errorf("%s uses %s, which docs/metrics.md does not document", file, n)
			}
			seen++
		}
		if seen == 0 {
			t.Errorf("%s names no metric", file)
		}
	}
}
