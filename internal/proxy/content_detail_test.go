package proxy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/wire"
)

// contentDetail is the part of a route_detail the content controls write.
type contentDetail struct {
	Cache *struct {
		State     string `json:"state"`
		AgeMS     int64  `json:"age_ms"`
		BindingID string `json:"binding_id"`
		Saved     int64  `json:"saved"`
	} `json:"cache"`
	Guardrails []struct {
		Stage, Rule, Kind, Action, Failure string
		N                                  int
	} `json:"guardrails"`
}

func readDetail(t *testing.T, rec event.Record) contentDetail {
	t.Helper()
	var d contentDetail
	if err := json.Unmarshal(rec.RouteDetail, &d); err != nil {
		t.Fatalf("route detail %s: %v", rec.RouteDetail, err)
	}
	return d
}

// TestCache_HitRecordsWhatItSaved: a hit's record and route_detail say
// what it saved — the cached answer's usage at its binding's prices — and
// the cache's counter (relay_response_cache_savings_total) adds it up.
func TestCache_HitRecordsWhatItSaved(t *testing.T) {
	t.Parallel()
	f := cacheFixture(t, nil)
	for _, b := range f.data.Bindings {
		b.Pricing.Input, b.Pricing.Output = 2_000_000_000, 8_000_000_000 // per million tokens, nano-units
	}
	f.start()
	body := cacheCases()[0].body
	if resp, b := f.post("/v1/chat/completions", body, nil); resp.StatusCode != 200 {
		t.Fatalf("miss: %d %s", resp.StatusCode, b)
	}
	miss := f.settle()
	if resp, b := f.post("/v1/chat/completions", body, nil); resp.Header.Get("X-Relay-Cache") != "hit" {
		t.Fatalf("second: %s %s", resp.Header.Get("X-Relay-Cache"), b)
	}
	hit := f.rec.next(t)
	var want int64
	for _, b := range f.data.Bindings {
		if b.ID == miss.BindingID {
			want = pricing.CostAt(pricing.RatesFor(&b.Pricing, miss.Usage.Input), miss.Usage)
		}
	}
	if want <= 0 || hit.CacheSavedCost != want {
		t.Fatalf("hit saved %d, want %d (the miss's cost)", hit.CacheSavedCost, want)
	}
	d := readDetail(t, hit)
	if d.Cache == nil || d.Cache.State != "hit" || d.Cache.Saved != want || d.Cache.BindingID != miss.BindingID.String() {
		t.Errorf("route detail cache %+v, want a hit saving %d", d.Cache, want)
	}
	if s := f.h.CacheStats(); s.Saved != want || s.Hits != 1 {
		t.Errorf("cache stats %+v, want one hit saving %d", s, want)
	}
	if d := readDetail(t, miss); d.Cache != nil {
		t.Errorf("the miss's detail names a hit: %s", miss.RouteDetail)
	}
}

// TestGuardrails_ActionsOnTheUsageEvent: every action a guardrail took is
// on the record and in its route_detail — stage, rule, kind, action and
// count, a webhook's failure — and never the matched text.
func TestGuardrails_ActionsOnTheUsageEvent(t *testing.T) {
	t.Parallel()
	url := stuckWebhook(t)
	f := guardFixture(t,
		guardrail.RuleSettings{Name: "pii", Stage: guardrail.StageInput, Action: guardrail.ActionRedact, Detectors: []guardrail.Kind{guardrail.Email}},
		guardrail.RuleSettings{Name: "slow", Stage: guardrail.StageInput, Action: guardrail.ActionBlock,
			Webhook: &guardrail.WebhookSettings{URL: url, TimeoutMS: 30, Fail: "open"}},
		guardrail.RuleSettings{Name: "cards", Stage: guardrail.StageOutput, Action: guardrail.ActionBlock, Detectors: []guardrail.Kind{guardrail.Card}})
	f.start()
	chat := guardCases()[0]
	if resp, body := f.post(chat.path, chat.body("mail ops@example.com or ceo@example.com", false), nil); resp.StatusCode != 200 {
		t.Fatalf("redacted: %d %s", resp.StatusCode, body)
	}
	rec := f.rec.next(t)
	want := []event.Guardrail{
		{Stage: "input", Rule: "pii", Kind: "email", Action: "redact", N: 2},
		{Stage: "input", Rule: "slow", Kind: "webhook", Action: "log", Failure: "timeout", N: 1},
	}
	if len(rec.Guardrails) != len(want) || rec.Guardrails[0] != want[0] || rec.Guardrails[1] != want[1] {
		t.Fatalf("record guardrails %+v, want %+v", rec.Guardrails, want)
	}
	d := readDetail(t, rec)
	if len(d.Guardrails) != 2 || d.Guardrails[0].Rule != "pii" || d.Guardrails[0].N != 2 || d.Guardrails[1].Failure != "timeout" {
		t.Errorf("route detail guardrails %+v", d.Guardrails)
	}
	for _, s := range []string{"ops@example.com", "ceo@"} {
		if strings.Contains(string(rec.RouteDetail), s) {
			t.Errorf("the route detail holds %q: %s", s, rec.RouteDetail)
		}
	}
	// A streamed answer the card rule blocks.
	if resp, _ := f.post(chat.path, chat.body("pay 4111 1111 1111 1111", true), nil); resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	rec = f.rec.next(t)
	got := rec.Guardrails[len(rec.Guardrails)-1]
	if got != (event.Guardrail{Stage: "output", Rule: "cards", Kind: "card", Action: "block", N: 1}) || rec.ErrorKind != wire.ErrGuardrailCode {
		t.Errorf("blocked stream record %+v, error %q", rec.Guardrails, rec.ErrorKind)
	}
	if strings.Contains(string(rec.RouteDetail), "4111") {
		t.Errorf("the route detail holds the card: %s", rec.RouteDetail)
	}
}
