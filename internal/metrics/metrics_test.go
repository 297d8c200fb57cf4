package metrics_test

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/metrics"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/internal/wire"
)

const relayKey = "sk-wr-metrics-test-0123456789abcdef"

type status struct{}

func (status) Version() uint64    { return 42 }
func (status) Age() time.Duration { return 1500 * time.Millisecond }

// nullSink stores nothing.
type nullSink struct{}

func (nullSink) IngestUsageEvents(_ context.Context, rows []store.UsageEvent) (int64, error) {
	return int64(len(rows)), nil
}

// limiter refuses requests whose body asks for it.
type limiter struct{}

func (limiter) Admit(_ context.Context, a *admission.Admission) (func(wire.Usage), error) {
	if a.Model.Name == "limited" {
		return nil, &wire.Error{Kind: wire.ErrRateLimited, Msg: "Slow down.", RetryAfter: time.Second}
	}
	return nil, nil
}

func TestMetrics_SeriesAfterTraffic(t *testing.T) {
	t.Parallel()
	mock := mockupstream.New(mockupstream.Options{Record: -1})
	up := httptest.NewServer(mock)
	defer up.Close()

	id := func() uuid.UUID { return uuid.New() }
	// Affinity off: the flaky host's keys are tried in position order.
	policy := &snapshot.Policy{ID: id(), AllModels: true, AllHostKeys: true, MaxAttempts: 3, KeyStrategy: snapshot.StrategyPrioritized, Affinity: snapshot.AffinityOff}
	project, sa := id(), id()
	oa, flaky := id(), id()
	d := &snapshot.Data{
		Projects:        []*snapshot.Project{{ID: project}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: sa, ProjectID: project, PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RelayKeys:       []*snapshot.RelayKey{{ID: id(), ProjectID: project, ServiceAccountID: sa, Hash: sha256.Sum256([]byte(relayKey))}},
		Hosts: []*snapshot.Host{
			{ID: oa, Slug: "openai", Provider: "openai", BaseURL: up.URL, Enabled: true},
			{ID: flaky, Slug: "flaky", BaseURL: up.URL, Enabled: true},
		},
		HostKeys: []*snapshot.HostKey{
			{ID: id(), HostID: oa, Slug: "oa-1", Secret: snapshot.NewSecret("sk-up"), SecretVersion: 1, Enabled: true, Usable: true},
			{ID: id(), HostID: flaky, Slug: "bad", Secret: snapshot.NewSecret("sk-up-fault-503"), SecretVersion: 1, Enabled: true, Usable: true},
			{ID: id(), HostID: flaky, Slug: "good", Secret: snapshot.NewSecret("sk-up-good"), SecretVersion: 1, Position: 1, Enabled: true, Usable: true},
		},
	}
	pricing := snapshot.Pricing{Input: 1_000_000_000, Output: 2_000_000_000, Reasoning: 2_000_000_000} // $1000/M: visible in a float
	for _, m := range []struct {
		name, upstream string
		host           uuid.UUID
	}{{"gpt", "gpt-4o-cached-reasoning", oa}, {"flaky", "gpt-4o", flaky}, {"limited", "gpt-4o", oa}} {
		mid := id()
		d.Models = append(d.Models, &snapshot.Model{ID: mid, Name: m.name})
		d.Bindings = append(d.Bindings, &snapshot.Binding{ID: id(), ModelID: mid, HostID: m.host, Shape: wire.ShapeOpenAI,
			UpstreamModel: m.upstream, Enabled: true, Pricing: pricing})
	}
	snap := snapshot.Build(d, 42, time.Now())
	current := func() *snapshot.Snapshot { return snap }

	reg := metrics.New(metrics.Options{Snapshot: current, Status: status{}})
	w := usage.NewWriter(usage.WriterConfig{Sink: nullSink{}, Snapshot: current, Observer: reg})
	reg.WatchUsage(w)
	reg.WatchLimiter(func() metrics.LimiterStats {
		return metrics.LimiterStats{Waiting: 2, Admitted: 10, Refused: 3, BudgetRefused: 1, SettleDropped: 5, LeasesDropped: 4, StoreAvailable: true}
	})
	h := proxy.New(proxy.Config{
		Snapshot: current, Recorder: w, Limiter: limiter{},
		Breakers: reg.Breakers(keypool.NewMemory(keypool.BreakerConfig{})),
	})
	relay := httptest.NewServer(reg.WrapInference(h))
	defer relay.Close()

	post := func(path, body string) {
		req, _ := http.NewRequest(http.MethodPost, relay.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+relayKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post("/v1/chat/completions", `{"model":"gpt","messages":[{"role":"user","content":"hello"}]}`)
	post("/v1/chat/completions", `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hello"}]}`)
	post("/v1/chat/completions", `{"model":"flaky","messages":[{"role":"user","content":"hello"}]}`)
	post("/v1/chat/completions", `{"model":"limited","messages":[{"role":"user","content":"hello"}]}`)
	post("/v1/chat/completions", `{"model":"no-such-model-`+uuid.NewString()+`","messages":[]}`)
	post("/v1/nowhere", `{}`)
	req, _ := http.NewRequest(http.MethodPost, relay.URL+"/v1/chat/completions", strings.NewReader(`{}`)) // no key
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	reg.PacingStarted()
	reg.PacingStarted()
	reg.PacingEnded(300*time.Millisecond, "admitted")
	relay.Close() // every Record is in
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	fams := scrape(t, reg)
	get := func(name string, labels map[string]string) *dto.Metric {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Errorf("no %s", name)
			return nil
		}
	next:
		for _, m := range f.Metric {
			for k, v := range labels {
				found := false
				for _, lp := range m.Label {
					found = found || lp.GetName() == k && lp.GetValue() == v
				}
				if !found {
					continue next
				}
			}
			return m
		}
		t.Errorf("no %s%v among %d series", name, labels, len(f.Metric))
		return nil
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		m := get(name, labels)
		switch {
		case m == nil:
			return -1
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
		return -1
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64 // -1: only present
	}{
		{"relay_requests_total", map[string]string{"model": "gpt", "host": "openai", "inbound_shape": "openai_chat", "upstream_shape": "openai", "status": "200"}, 2},
		{"relay_requests_total", map[string]string{"model": "flaky", "host": "flaky", "status": "200"}, 1},
		{"relay_requests_total", map[string]string{"model": "limited", "status": "429"}, 1},
		{"relay_requests_total", map[string]string{"model": "unknown", "host": "none", "upstream_shape": "none", "status": "404"}, 1},
		{"relay_request_errors_total", map[string]string{"model": "limited", "kind": "rate_limited"}, 1},
		{"relay_rate_limit_refusals_total", map[string]string{"model": "limited", "source": "relay"}, 1},
		{"relay_request_duration_seconds", map[string]string{"model": "gpt", "host": "openai", "stream": "true"}, 1},
		{"relay_time_to_first_byte_seconds", map[string]string{"model": "gpt", "stream": "false"}, 1},
		{"relay_overhead_seconds", map[string]string{"inbound_shape": "openai_chat"}, 3},
		{"relay_tokens_total", map[string]string{"model": "gpt", "type": "cached_read"}, -1},
		{"relay_tokens_total", map[string]string{"model": "gpt", "type": "reasoning"}, -1},
		{"relay_tokens_total", map[string]string{"model": "gpt", "type": "input"}, -1},
		{"relay_cost_total", map[string]string{"model": "gpt", "host": "openai"}, -1},
		{"relay_upstream_failovers_total", map[string]string{"model": "flaky"}, 1},
		{"relay_upstream_attempts_total", map[string]string{"host": "flaky", "host_key": "bad", "outcome": "failure"}, 1},
		{"relay_upstream_attempts_total", map[string]string{"host": "flaky", "host_key": "good", "outcome": "success"}, 1},
		{"relay_upstream_attempts_total", map[string]string{"host": "openai", "host_key": "oa-1", "outcome": "success"}, 2},
		// A 503 holds (bad, gpt-4o) only: the key itself stays closed.
		{"relay_host_key_breaker_state", map[string]string{"host": "flaky", "host_key": "bad", "state": "open"}, 0},
		{"relay_host_key_breaker_state", map[string]string{"host": "flaky", "host_key": "bad", "state": "closed"}, 1},
		{"relay_host_key_breaker_state", map[string]string{"host": "openai", "host_key": "oa-1", "state": "closed"}, 1},
		{"relay_requests_in_flight", nil, 0},
		{"relay_inference_responses_total", map[string]string{"status": "200"}, 3},
		{"relay_inference_responses_total", map[string]string{"status": "401"}, 1},
		{"relay_inference_responses_total", map[string]string{"status": "404"}, 2},
		{"relay_inference_responses_total", map[string]string{"status": "429"}, 1},
		{"relay_pacing_queue_length", nil, 3}, // one from Pacing calls, two from the limiter's stats
		{"relay_rate_limiter_refused_total", map[string]string{"reason": "rate_limited"}, 3},
		{"relay_rate_limiter_refused_total", map[string]string{"reason": "budget_exceeded"}, 1},
		{"relay_rate_limiter_admitted_total", nil, 10},
		{"relay_rate_limiter_settlements_dropped_total", nil, 5},
		{"relay_rate_limiter_lease_releases_dropped_total", nil, 4},
		{"relay_rate_limiter_store_up", nil, 1},
		{"relay_pacing_wait_seconds", map[string]string{"outcome": "admitted"}, 1},
		{"relay_snapshot_version", nil, 42},
		{"relay_snapshot_age_seconds", nil, 1.5},
		{"relay_usage_events_written_total", nil, 5},
		{"relay_usage_events_dropped_total", nil, 0},
		{"relay_usage_events_lost_total", nil, 0},
		{"relay_usage_queue_capacity", nil, usage.DefaultQueueSize},
		{"go_goroutines", nil, -1},
		// Routing and the prompt cache ("cached" upstream models report half
		// the prompt as read from the cache).
		{"relay_prompt_cache_read_tokens_total", map[string]string{"model": "gpt", "host": "openai", "host_key": "oa-1"}, -1},
		{"relay_prompt_cache_prompt_tokens_total", map[string]string{"model": "gpt", "host": "openai", "host_key": "oa-1"}, -1},
		{"relay_prompt_cache_savings_total", map[string]string{"model": "gpt", "host": "openai"}, -1},
		{"relay_route_affinity_total", map[string]string{"model": "gpt", "outcome": "off"}, 2},
		{"relay_route_affinity_total", map[string]string{"model": "flaky", "outcome": "off"}, 1},
		// The OpenTelemetry GenAI client metrics: requests that reached an upstream.
		{"gen_ai_client_token_usage", map[string]string{"gen_ai_operation_name": "chat", "gen_ai_provider_name": "openai", "gen_ai_request_model": "gpt", "gen_ai_token_type": "input"}, 2},
		{"gen_ai_client_token_usage", map[string]string{"gen_ai_request_model": "gpt", "gen_ai_token_type": "output"}, 2},
		{"gen_ai_client_operation_duration_seconds", map[string]string{"gen_ai_operation_name": "chat", "gen_ai_provider_name": "openai", "gen_ai_request_model": "gpt"}, 2},
		{"gen_ai_client_operation_duration_seconds", map[string]string{"gen_ai_provider_name": "_OTHER", "gen_ai_request_model": "flaky"}, 1},
	}
	for _, c := range checks {
		if v := value(c.name, c.labels); c.want >= 0 && v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if v := value("relay_tokens_total", map[string]string{"model": "gpt", "type": "reasoning"}); v <= 0 {
		t.Errorf("no reasoning tokens counted")
	}
	if v := value("relay_cost_total", map[string]string{"model": "gpt", "host": "openai"}); v <= 0 {
		t.Errorf("no cost counted")
	}
	if v := value("relay_prompt_cache_hit_ratio", map[string]string{"model": "gpt", "host": "openai", "host_key": "oa-1"}); v < 0.3 || v > 0.5 {
		t.Errorf("prompt cache hit ratio %v, want about a half", v)
	}
	if v := value("relay_prompt_cache_savings_total", map[string]string{"model": "gpt", "host": "openai"}); v <= 0 {
		t.Errorf("no savings counted")
	}
	for _, m := range fams["gen_ai_client_operation_duration_seconds"].GetMetric() {
		for _, lp := range m.Label {
			if lp.GetName() == "gen_ai_request_model" && lp.GetValue() == "limited" {
				t.Errorf("a request refused before any upstream attempt counts as a GenAI operation: %v", m)
			}
		}
	}
	// Bounded labels: nothing that names a request, a secret or the caller's model text.
	for name, f := range fams {
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				if v := lp.GetValue(); strings.Contains(v, "no-such-model") || strings.Contains(v, "sk-") || strings.HasPrefix(v, "req_") {
					t.Errorf("%s has the label %s=%q", name, lp.GetName(), v)
				}
			}
		}
	}
}

// scrape fetches /metrics through the handler and parses it as Prometheus
// text.
func scrape(t *testing.T, reg *metrics.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

func TestMetrics_InFlightCountsRunningRequests(t *testing.T) {
	t.Parallel()
	reg := metrics.New(metrics.Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	h := reg.WrapInference(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
		}()
		<-entered
	}
	if v := gauge(t, reg, "relay_requests_in_flight"); v != 3 {
		t.Errorf("in flight %v, want 3", v)
	}
	close(release)
	wg.Wait()
	if v := gauge(t, reg, "relay_requests_in_flight"); v != 0 {
		t.Errorf("in flight %v after, want 0", v)
	}
}

func gauge(t *testing.T, reg *metrics.Registry, name string) float64 {
	t.Helper()
	f := scrape(t, reg)[name]
	if f == nil || len(f.Metric) != 1 {
		t.Fatalf("no %s", name)
	}
	return f.Metric[0].Gauge.GetValue()
}

// BenchmarkObserveUsage is the metrics part of a Record's cost on the
// request path.
func BenchmarkObserveUsage(b *testing.B) {
	reg := metrics.New(metrics.Options{})
	ev := usage.Event{Record: event.Record{
		Model: "gpt", ModelID: uuid.New(), HostID: uuid.New(), HostSlug: "openai", Inbound: "openai_chat",
		Upstream: wire.ShapeOpenAI, Status: 200, Attempts: 1, Total: 300 * time.Millisecond, TimeToFirstByte: 50 * time.Millisecond,
		Overhead: 40 * time.Microsecond, Usage: wire.Usage{Input: 1200, Output: 300, CacheRead: 600, Reasoning: 100},
	}, Cost: 1_234_567}
	b.ReportAllocs()
	for b.Loop() {
		reg.ObserveUsage(ev)
	}
}
