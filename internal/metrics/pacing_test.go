package metrics_test

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/metrics"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/ratelimit"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/internal/wire"
)

// TestMetrics_PacingSeriesUnderTraffic runs Relay's real limiter under a
// token rule — a request that waits and is admitted when another settles,
// one that waits in vain, one that can never fit — and holds /metrics to
// docs/metrics.md and the shipped alert rules: every metric of the "Rate
// limits and pacing" table is served, and every threshold the alerts put
// on relay_pacing_wait_seconds is one of its buckets.
func TestMetrics_PacingSeriesUnderTraffic(t *testing.T) {
	t.Parallel()
	mock := mockupstream.New(mockupstream.Options{Record: -1})
	up := httptest.NewServer(mock)
	defer up.Close()
	id := func() uuid.UUID { return uuid.New() }
	rl := &snapshot.RateLimit{ID: id(), Slug: "tpm"}
	rl.Rules = []*snapshot.Rule{{ID: id(), RateLimitID: rl.ID, Meter: snapshot.MeterTotalTokens, Amount: 1000, Window: time.Minute}}
	policy := &snapshot.Policy{ID: id(), AllModels: true, AllHostKeys: true, MaxAttempts: 1, KeyStrategy: snapshot.StrategyPrioritized,
		Affinity: snapshot.AffinityOff, RateLimitID: rl.ID, MaxWait: 1500 * time.Millisecond, LimiterFailureMode: "open"}
	project, sa, host, model := id(), id(), id(), id()
	d := &snapshot.Data{
		Projects:        []*snapshot.Project{{ID: project}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: sa, ProjectID: project, PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RateLimits:      []*snapshot.RateLimit{rl},
		RelayKeys:       []*snapshot.RelayKey{{ID: id(), ProjectID: project, ServiceAccountID: sa, Hash: sha256.Sum256([]byte(relayKey))}},
		Hosts:           []*snapshot.Host{{ID: host, Slug: "openai", Provider: "openai", BaseURL: up.URL, Enabled: true}},
		HostKeys:        []*snapshot.HostKey{{ID: id(), HostID: host, Slug: "k", Secret: snapshot.NewSecret("sk-up"), SecretVersion: 1, Enabled: true, Usable: true}},
		Models:          []*snapshot.Model{{ID: model, Name: "gpt", Kind: "chat", MaxOutputTokens: 1000}},
		Bindings:        []*snapshot.Binding{{ID: id(), ModelID: model, HostID: host, Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-4o", Enabled: true}},
	}
	snap := snapshot.Build(d, 1, time.Now())
	current := func() *snapshot.Snapshot { return snap }

	reg := metrics.New(metrics.Options{Snapshot: current, Status: status{}})
	lim := ratelimit.New(ratelimit.Options{FixedEstimates: true})
	defer lim.Close()
	lim.ObservePacing(reg)
	reg.WatchLimiter(func() metrics.LimiterStats {
		st := lim.Stats()
		return metrics.LimiterStats{Admitted: st.Admitted, Paced: st.Paced, Refused: st.Refused, PacedAdmitted: st.PacedAdmitted,
			RefusedNeverFits: st.RefusedNeverFits, RefusedWaitTooLong: st.RefusedWaitTooLong, RefusedQueueFull: st.RefusedQueueFull, Degraded: st.Degraded, StoreAvailable: true}
	})
	w := usage.NewWriter(usage.WriterConfig{Sink: nullSink{}, Snapshot: current, Observer: reg})
	relay := httptest.NewServer(reg.WrapInference(proxy.New(proxy.Config{Snapshot: current, Limiter: lim, Recorder: w})))
	defer relay.Close()
	post := func(maxTokens int) int {
		body := `{"model":"gpt","max_tokens":` + strconv.Itoa(maxTokens) + `,"messages":[{"role":"user","content":"hello"}]}`
		req, _ := http.NewRequest(http.MethodPost, relay.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+relayKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// hold takes 900 of the 1000 tokens, as a request in flight would.
	cl, _ := snap.Authenticate(sha256.Sum256([]byte(relayKey)), time.Now())
	hold := func() admission.Reservation {
		r, err := lim.Reserve(&admission.Admission{Caller: &cl, Model: snap.Model(model), Snapshot: snap, Inbound: wire.InboundChat, BodyBytes: 40, MaxTokens: 890, Header: http.Header{}})
		if err == nil {
			err = r.Attempt(t.Context(), snap.HostKeys(host)[0], snap.Bindings(model)[0])
		}
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// Waits, then is admitted when the held request settles low.
	held := hold()
	got := make(chan int, 1)
	go func() { got <- post(500) }()
	poll.Until(t, 10*time.Second, "the request waits", func() bool { return lim.Stats().Waiting == 1 })
	held.Done(wire.Usage{Input: 10, Output: 20})
	if code := <-got; code != 200 {
		t.Fatalf("the waiting request: %d, want 200", code)
	}
	// Can never fit (max output 1000 plus the prompt, over the rule).
	if code := post(1000); code != 429 {
		t.Fatalf("never fits: %d, want 429", code)
	}
	// Waits in vain: a held request that never settles.
	hold()
	if code := post(900); code != 429 {
		t.Fatalf("waits in vain: %d, want 429", code)
	}

	relay.Close() // every Record is in
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, reg)
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	section = section[strings.Index(section, "## Rate limits and pacing"):]
	if i := strings.Index(section[3:], "\n## "); i >= 0 {
		section = section[:i+3]
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `(relay_[a-z0-9_]+)`").FindAllStringSubmatch(section, -1) {
		if name := m[1]; fams[name] == nil {
			t.Errorf("docs/metrics.md documents %s, which /metrics does not serve under pacing traffic", name)
		}
	}
	wait := fams["relay_pacing_wait_seconds"]
	if wait == nil {
		t.Fatal("no relay_pacing_wait_seconds")
	}
	outcomes := map[string]uint64{}
	var bounds []float64
	for _, m := range wait.Metric {
		for _, l := range m.Label {
			if l.GetName() == "outcome" {
				outcomes[l.GetValue()] = m.Histogram.GetSampleCount()
			}
		}
		bounds = bounds[:0]
		for _, b := range m.Histogram.Bucket {
			bounds = append(bounds, b.GetUpperBound())
		}
	}
	if outcomes["admitted"] != 1 || outcomes["refused"] != 1 {
		t.Errorf("relay_pacing_wait_seconds by outcome %v, want 1 admitted and 1 refused", outcomes)
	}
	for reason, n := range map[string]float64{"never_fits": 1, "wait_too_long": 1} {
		if got := counterWith(fams["relay_pacing_refusals_total"], "reason", reason); got != n {
			t.Errorf("relay_pacing_refusals_total{reason=%q} = %v, want %v", reason, got, n)
		}
	}
	if got := counterWith(fams["relay_rate_limiter_admitted_after_wait_total"], "", ""); got != 1 {
		t.Errorf("relay_rate_limiter_admitted_after_wait_total = %v, want 1", got)
	}
	alerts, err := os.ReadFile("../../deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	thresholds := regexp.MustCompile(`relay_pacing_wait_seconds_bucket[^\n]*\)\s*>\s*([0-9.]+)`).FindAllStringSubmatch(string(alerts), -1)
	if len(thresholds) == 0 {
		t.Fatal("no alert on relay_pacing_wait_seconds in deploy/prometheus/alerts.yaml")
	}
	for _, m := range thresholds {
		v, _ := strconv.ParseFloat(m[1], 64)
		found := false
		for _, b := range bounds {
			found = found || b == v
		}
		if !found {
			t.Errorf("an alert compares relay_pacing_wait_seconds with %v, which is no bucket bound of it (%v)", v, bounds)
		}
	}
}

// counterWith is the value of the counter of f whose label name is value
// ("" for an unlabelled counter); -1 when there is none.
func counterWith(f *dto.MetricFamily, name, value string) float64 {
	if f == nil {
		return -1
	}
	for _, m := range f.Metric {
		if name == "" {
			return m.Counter.GetValue()
		}
		for _, l := range m.Label {
			if l.GetName() == name && l.GetValue() == value {
				return m.Counter.GetValue()
			}
		}
	}
	return -1
}
