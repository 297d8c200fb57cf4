package ui

import (
	"strings"
	"testing"
)

// TestContentStats_ShowTheCacheAndGuardrails: a request's page names a
// cache hit with what it saved and each guardrail action with its count.
func TestContentStats_ShowTheCacheAndGuardrails(t *testing.T) {
	t.Parallel()
	d := []byte(`{"model":"m","cache":{"state":"hit","age_ms":12000,"binding_id":"x","saved":2500000000},` +
		`"guardrails":[{"stage":"input","rule":"pii","kind":"email","action":"redact","n":2},{"stage":"input","rule":"hook","kind":"webhook","action":"log","failure":"timeout","n":1}]}`)
	got := contentStats(d)
	if len(got) != 3 {
		t.Fatalf("stats %+v", got)
	}
	if got[0].Label != "Response cache" || !strings.Contains(got[0].Value, "12 s old") || !strings.Contains(got[0].Value, money(2500000000)) {
		t.Errorf("cache stat %+v", got[0])
	}
	if got[1].Label != "Guardrail pii" || got[1].Value != "input: redact (email) ×2" || !strings.Contains(got[2].Value, "webhook failed: timeout") {
		t.Errorf("guardrail stats %+v", got[1:])
	}
	if contentStats([]byte(`{"model":"m"}`)) != nil {
		t.Errorf("a plain decision shows content stats")
	}
}
