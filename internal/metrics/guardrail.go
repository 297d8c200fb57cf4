package metrics

import "github.com/prometheus/client_golang/prometheus"

// GuardrailCount is one counter of the guardrails' actions
// (docs/guardrails.md): a stage (input, output), an action (block,
// redact, log) and a kind (a detector, or deny).
type GuardrailCount struct {
	Stage, Action, Kind string
	N                   int64
}

// WatchGuardrails exports the guardrails' counters:
// relay_guardrail_actions_total{stage,action,kind}.
func (r *Registry) WatchGuardrails(counts func() []GuardrailCount) {
	r.reg.MustRegister(guardrailCollector{counts})
}

var guardrailDesc = prometheus.NewDesc("relay_guardrail_actions_total",
	"Findings of the policies' guardrails, by stage, action and kind.", []string{"stage", "action", "kind"}, nil)

type guardrailCollector struct{ counts func() []GuardrailCount }

func (c guardrailCollector) Describe(ch chan<- *prometheus.Desc) { ch <- guardrailDesc }

func (c guardrailCollector) Collect(ch chan<- prometheus.Metric) {
	for _, n := range c.counts() {
		ch <- prometheus.MustNewConstMetric(guardrailDesc, prometheus.CounterValue, float64(n.N), n.Stage, n.Action, n.Kind)
	}
}
