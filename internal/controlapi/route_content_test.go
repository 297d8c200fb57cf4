package controlapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/snapshot"
)

// TestRouteExplain_SaysWhatTheContentControlsDo: the explain's content
// lines name the guardrail a request would be blocked or redacted by
// (never the matched text), the webhooks it would ask, and whether the
// response cache would answer a repeat.
func TestRouteExplain_SaysWhatTheContentControlsDo(t *testing.T) {
	t.Parallel()
	snap, policy := explainCatalog()
	s := guardrail.Settings{Rules: []guardrail.RuleSettings{
		{Name: "secrets", Stage: guardrail.StageInput, Action: guardrail.ActionBlock, Detectors: []guardrail.Kind{guardrail.Secret}},
		{Name: "classifier", Stage: guardrail.StageInput, Action: guardrail.ActionLog, Webhook: &guardrail.WebhookSettings{URL: "https://classifier.example.com/check", Fail: "open"}},
	}}
	g, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	policy.Guardrails, policy.Cache = g, &snapshot.ResponseCache{TTL: time.Minute}
	b := setup(t, func(c *controlapi.Config) { c.Snapshot = &routedSnapshot{snap: snap} })
	explain := func(text string) []string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "small", "messages": []any{map[string]string{"role": "user", "content": text}}})
		raw, _ := json.Marshal(map[string]any{"policy_id": policy.ID.String(), "body": json.RawMessage(body)})
		res := call(b.admin.RouteExplainWithBodyWithResponse(b.ctx, "application/json", bytes.NewReader(raw))).want(t, http.StatusOK).JSON200
		if res.Content == nil {
			return nil
		}
		return *res.Content
	}
	const key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
	got := explain("use " + key)
	if !slices.Contains(got, "would be blocked by guardrail secrets (secret found)") ||
		!slices.Contains(got, "would ask the webhook guardrail classifier (fails open)") {
		t.Errorf("content %q", got)
	}
	if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "would be answered from cache") }) {
		t.Errorf("content %q: the cache is on", got)
	}
	for _, l := range got {
		if strings.Contains(l, "abcdefghij") {
			t.Errorf("a content line holds the matched text: %q", l)
		}
	}
	if got := explain("hello"); slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "blocked") }) {
		t.Errorf("a clean request: %q", got)
	}
}

// TestRouteExplain_NamesTheSemanticDomain: with semantic cache domains on
// the policy, the explain names the first domain that takes the request
// (by model and metadata tags), its embeddings model and threshold, and
// says nothing of a request no domain takes.
func TestRouteExplain_NamesTheSemanticDomain(t *testing.T) {
	t.Parallel()
	snap, policy := explainCatalog()
	small, big := snap.ModelByName("small"), snap.ModelByName("big")
	policy.Cache = &snapshot.ResponseCache{TTL: time.Minute, Semantic: []snapshot.SemanticDomain{
		{Name: "support", Models: map[snapshot.ID]struct{}{small.ID: {}}, Metadata: map[string]string{"app": "helpdesk"}, EmbeddingsModel: big.ID, Threshold: 0.92},
		{Name: "anything", EmbeddingsModel: big.ID, Threshold: 0.95},
	}}
	b := setup(t, func(c *controlapi.Config) { c.Snapshot = &routedSnapshot{snap: snap} })
	explain := func(body string) []string {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"policy_id": policy.ID.String(), "body": json.RawMessage(body)})
		res := call(b.admin.RouteExplainWithBodyWithResponse(b.ctx, "application/json", bytes.NewReader(raw))).want(t, http.StatusOK).JSON200
		if res.Content == nil {
			return nil
		}
		return *res.Content
	}
	semantic := func(lines []string) string {
		for _, l := range lines {
			if strings.Contains(l, "semantic cache") {
				return l
			}
		}
		return ""
	}
	tagged := semantic(explain(`{"model":"small","metadata":{"app":"helpdesk"},"messages":[{"role":"user","content":"hi"}]}`))
	if !strings.Contains(tagged, "domain support") || !strings.Contains(tagged, "embedded by big") || !strings.Contains(tagged, "0.92") {
		t.Errorf("a tagged request: %q, want the support domain", tagged)
	}
	if got := semantic(explain(`{"model":"small","messages":[{"role":"user","content":"hi"}]}`)); !strings.Contains(got, "domain anything") {
		t.Errorf("an untagged request: %q, want the catch-all domain", got)
	}
	policy.Cache.Semantic = policy.Cache.Semantic[:1]
	if got := semantic(explain(`{"model":"big","messages":[{"role":"user","content":"hi"}]}`)); got != "" {
		t.Errorf("a request no domain takes: %q", got)
	}
}
