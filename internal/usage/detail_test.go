package usage

import (
	"math"
	"strconv"
	"testing"

	"github.com/relay-llm/relay/internal/event"
)

// TestKeepDetail_OnlyWhereItExplains: the full decision is kept for
// refusals, failovers, fallbacks and degraded plans, and for the sampled
// fraction of the rest; a plain routed success keeps its short form only.
func TestKeepDetail_OnlyWhereItExplains(t *testing.T) {
	t.Parallel()
	const a, b = "0192f0a4-5b7c-7d8e-9f00-112233445566", "0192f0a4-5b7c-7d8e-9f00-665544332211"
	plain := `{"model":"m","candidates":[{"binding_id":"` + a + `","host":"h","score":1,"keys":["k"]},{"binding_id":"` + b + `","score":0.5}],"chosen":{"binding_id":"` + a + `","host_key":"k"}}`
	elsewhere := `{"model":"m","candidates":[{"binding_id":"` + a + `","score":1},{"binding_id":"` + b + `","score":0.5}],"chosen":{"binding_id":"` + b + `","host_key":"k"}}`
	held := `{"model":"m","candidates":[{"binding_id":"` + a + `","score":1,"keys_held":2}],"chosen":{"binding_id":"` + a + `"}}`
	skipped := `{"model":"m","candidates":[{"binding_id":"` + b + `","skip":"no_usable_key"},{"binding_id":"` + a + `"}],"chosen":{"binding_id":"` + a + `"}}`
	downgraded := `{"model":"m","candidates":[{"binding_id":"` + a + `"}],"chosen":{"binding_id":"` + a + `"},"budget_fallback":"m-small"}`
	for _, tc := range []struct {
		name   string
		rec    event.Record
		sample uint32
		want   bool
	}{
		{"no decision", event.Record{Status: 200, Attempts: 1}, math.MaxUint32, false},
		{"plain success", event.Record{Status: 200, Attempts: 1, RouteDetail: []byte(plain)}, 0, false},
		{"plain success, all sampled", event.Record{Status: 200, Attempts: 1, RouteDetail: []byte(plain)}, math.MaxUint32, true},
		{"refusal", event.Record{Status: 429, ErrorKind: "rate_limited", RouteDetail: []byte(plain)}, 0, true},
		{"broken stream", event.Record{Status: 200, Attempts: 1, ErrorKind: "stream_error", RouteDetail: []byte(plain)}, 0, true},
		{"retry on the same binding", event.Record{Status: 200, Attempts: 2, RouteDetail: []byte(plain)}, 0, true},
		{"served by a later binding", event.Record{Status: 200, Attempts: 1, RouteDetail: []byte(elsewhere)}, 0, true},
		{"keys held", event.Record{Status: 200, Attempts: 1, RouteDetail: []byte(held)}, 0, true},
		{"a candidate skipped", event.Record{Status: 200, Attempts: 1, RouteDetail: []byte(skipped)}, 0, true},
		{"budget downgrade", event.Record{Status: 200, Attempts: 1, RouteDetail: []byte(downgraded)}, 0, true},
		{"a guardrail acted", event.Record{Status: 200, Attempts: 1, RouteDetail: []byte(plain[:len(plain)-1] + `,"guardrails":[{"stage":"input","rule":"pii","kind":"email","action":"redact","n":1}]}`)}, 0, true},
		{"a cache hit", event.Record{Status: 200, Cache: "hit", RouteDetail: []byte(`{"cache":{"state":"hit","age_ms":5,"binding_id":"` + a + `","saved":12}}`)}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := keepDetail(&tc.rec, tc.sample); got != tc.want {
				t.Errorf("keepDetail = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKeepDetail_SampleIsAFraction: about the configured fraction of plain
// successes keep their decision, and the same request id always the same.
func TestKeepDetail_SampleIsAFraction(t *testing.T) {
	t.Parallel()
	plain := []byte(`{"candidates":[{"binding_id":"0192f0a4-5b7c-7d8e-9f00-112233445566"}],"chosen":{"binding_id":"0192f0a4-5b7c-7d8e-9f00-112233445566"}}`)
	kept := 0
	const n = 20000
	for i := range n {
		rec := event.Record{RequestID: "req_" + string(rune('a'+i%26)) + strconv.Itoa(i), Status: 200, Attempts: 1, RouteDetail: plain}
		k := keepDetail(&rec, detailSample(0.05))
		if k != keepDetail(&rec, detailSample(0.05)) {
			t.Fatal("the same request sampled differently")
		}
		if k {
			kept++
		}
	}
	if kept < n*4/100 || kept > n*6/100 {
		t.Errorf("kept %d of %d at a 5%% sample", kept, n)
	}
}
