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
