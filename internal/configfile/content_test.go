package configfile_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/configfile/configfiletest"
	"github.com/relay-llm/relay/openapi/models"
)

// policyNamed reads a policy through the control API.
func policyNamed(t *testing.T, srv *configfiletest.Server, slug string) models.Policy {
	t.Helper()
	r, err := srv.Client.ListPoliciesWithResponse(t.Context(), nil)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("list policies: %v %s", err, r.Body)
	}
	for _, p := range r.JSON200.Items {
		if p.Slug == slug {
			return p
		}
	}
	t.Fatalf("no policy %s", slug)
	return models.Policy{}
}

func modelIDs(t *testing.T, srv *configfiletest.Server) map[string]string {
	t.Helper()
	r, err := srv.Client.ListModelsWithResponse(t.Context(), nil)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("list models: %v %s", err, r.Body)
	}
	out := map[string]string{}
	for _, m := range r.JSON200.Items {
		out[m.ID.String()] = m.Name
	}
	return out
}

// TestApply_ResponseCacheAndGuardrailsReachThePolicy: a policy's
// response_cache (models by name) and guardrails (a webhook rule too) are
// what the control API then holds, the export writes them back, and
// applying the export is a no-op.
func TestApply_ResponseCacheAndGuardrailsReachThePolicy(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})

	p := policyNamed(t, srv, "everything")
	rc := p.ResponseCache
	if rc == nil || !rc.Enabled || rc.Scope == nil || *rc.Scope != models.ResponseCacheScopeHeader ||
		rc.ScopeHeader == nil || *rc.ScopeHeader != "X-Tenant" || rc.TTLSeconds == nil || *rc.TTLSeconds != 600 || rc.Models == nil {
		t.Fatalf("response cache = %+v", rc)
	}
	names := modelIDs(t, srv)
	var cached []string
	for _, id := range *rc.Models {
		cached = append(cached, names[id.String()])
	}
	slices.Sort(cached)
	if !slices.Equal(cached, []string{"claude-sonnet-4", "gpt-4o-mini"}) {
		t.Errorf("cached models = %v", cached)
	}
	g := p.Guardrails
	if g == nil || len(g.Rules) != 3 || g.MaxPromptBytes == nil || *g.MaxPromptBytes != 1048576 {
		t.Fatalf("guardrails = %+v", g)
	}
	if w := g.Rules[2].Webhook; g.Rules[2].Name != "classifier" || w == nil || w.URL != "https://guard.example.com/check" ||
		w.Fail == nil || *w.Fail != models.GuardrailWebhookFailOpen || w.TimeoutMs == nil || *w.TimeoutMs != 500 {
		t.Errorf("webhook rule = %+v", g.Rules[2])
	}
	if d := g.Rules[0].Detectors; d == nil || !slices.Equal(*d, []models.GuardrailRuleDetectors{"email", "card"}) {
		t.Errorf("detectors = %v", d)
	}

	out := export(t, srv)
	for _, want := range []string{
		"  response_cache:\n    models:\n      - claude-sonnet-4\n      - gpt-4o-mini\n    scope: header\n    scope_header: X-Tenant\n    ttl_seconds: 600\n",
		"      - name: classifier\n        stage: output\n        action: block\n        webhook:\n          url: https://guard.example.com/check\n          timeout_ms: 500\n          fail: open\n          max_concurrent: 4\n",
		"        deny_patterns:\n          - secret-\\d+\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %q:\n%s", want, out)
		}
	}
	if p := plan(t, srv, parse(t, out), configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("re-applying the export changes something:\n%s", printed(t, p))
	}
}

// TestApply_DroppingTheBlocksTurnsThemOff: a policy document without
// response_cache and guardrails turns the cache off and removes the rules,
// and the next plan is empty.
func TestApply_DroppingTheBlocksTurnsThemOff(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	bare := parse(t, "kind: Policy\nspec: {slug: everything, all_models: true, all_host_keys: true, limiter_failure_mode: closed, route_strategy: cost, affinity: binding}\n")
	got := printed(t, apply(t, srv, bare, configfile.Options{}))
	if !strings.HasPrefix(got, "~ update Policy everything (response_cache: {models: [claude-sonnet-4, gpt-4o-mini], scope: header, scope_header: X-Tenant, ttl_seconds: 600} → null, guardrails: {max_prompt_bytes: 1048576, rules: [") ||
		!strings.HasSuffix(got, "]} → null)\nplan: 0 to create, 1 to update, 0 to delete\n") {
		t.Errorf("plan:\n%s", got)
	}
	p := policyNamed(t, srv, "everything")
	if p.ResponseCache != nil && p.ResponseCache.Enabled {
		t.Errorf("the cache is still on: %+v", p.ResponseCache)
	}
	if p.Guardrails != nil && (len(p.Guardrails.Rules) > 0 || p.Guardrails.MaxPromptBytes != nil) {
		t.Errorf("guardrails remain: %+v", p.Guardrails)
	}
	if again := plan(t, srv, bare, configfile.Options{}); !again.Empty() {
		t.Errorf("not converged:\n%s", printed(t, again))
	}
	// `enabled: false`, the API's spelling, is off too; `scope: project`
	// and `fail: closed` are the defaults, no change.
	same := parse(t, "kind: Policy\nspec: {slug: everything, all_models: true, all_host_keys: true, limiter_failure_mode: closed, route_strategy: cost, affinity: binding, response_cache: {enabled: false, ttl_seconds: 5}}\n")
	if p := plan(t, srv, same, configfile.Options{}); !p.Empty() {
		t.Errorf("enabled: false is not off:\n%s", printed(t, p))
	}
	on := parse(t, `
kind: Policy
spec:
  slug: everything
  all_models: true
  all_host_keys: true
  limiter_failure_mode: closed
  route_strategy: cost
  affinity: binding
  response_cache: {scope: project}
  guardrails:
    rules: [{name: hook, stage: input, action: log, webhook: {url: "https://guard.example.com/x", fail: closed}}]
`)
	apply(t, srv, on, configfile.Options{})
	if p := plan(t, srv, on, configfile.Options{}); !p.Empty() {
		t.Errorf("defaults spelt out are not converged:\n%s", printed(t, p))
	}
}

// TestPlan_BadContentControlsNameTheDocumentAndField: a bad cache or
// guardrail setting fails before anything is written, naming the document
// and the field; what only the control API checks (a regular expression)
// is its 422, naming the document, with nothing written either.
func TestPlan_BadContentControlsNameTheDocumentAndField(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	before := srv.AuditRows(t)
	pol := "kind: Policy\nspec:\n  slug: everything\n"
	tests := []struct{ name, text, want string }{
		{"unknown field", pol + "  guardrails: {rules: [{name: a, stage: input, action: log, detector: [email]}]}\n",
			"test.yaml:1 (line 1) Policy: line 4: unknown field spec.guardrails.rules.0.detector"},
		{"enum", pol + "  guardrails: {rules: [{name: a, stage: later, action: log, detectors: [email]}]}\n",
			"test.yaml:1 (line 1) Policy everything: guardrails.rules.0.stage: value is not one of the allowed values"},
		{"duplicate rule", pol + "  guardrails: {rules: [{name: a, stage: input, action: log, detectors: [email]}, {name: a, stage: output, action: log, detectors: [card]}]}\n",
			"test.yaml:1 (line 1) Policy everything: guardrails.rules.1: the name \"a\" is used by rules.0 too"},
		{"missing action", pol + "  guardrails: {rules: [{name: a, stage: input}]}\n",
			"Policy everything: guardrails.rules.0: name, stage and action are required"},
		{"unknown model", pol + "  response_cache: {models: [gpt-5]}\n",
			"test.yaml:1 (line 1) Policy everything: response_cache.models: no Model \"gpt-5\" in the files or in Relay"},
		{"bound", pol + "  response_cache: {ttl_seconds: -1}\n",
			"Policy everything: response_cache.ttl_seconds: number must be at least 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := configfile.Parse("test.yaml", []byte(tt.text))
			if err == nil {
				_, err = configfile.NewPlan(t.Context(), srv.Client, docs, configfile.Options{})
			}
			var de *configfile.DocError
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &de) {
				t.Errorf("err = %v; want a DocError with %q", err, tt.want)
			}
		})
	}
	// The API's own check: the plan passes, the apply answers its 422.
	docs := parse(t, pol+"  guardrails: {rules: [{name: a, stage: input, action: block, deny_patterns: ['(']}]}\n")
	_, err := plan(t, srv, docs, configfile.Options{}).Apply(t.Context())
	if err == nil || !strings.Contains(err.Error(), "test.yaml:1 (line 1) Policy everything: ") || !strings.Contains(err.Error(), "rules[0].deny_patterns[0] is not a regular expression") {
		t.Errorf("a bad pattern: err = %v", err)
	}
	if n := srv.AuditRows(t) - before; n != 0 {
		t.Errorf("bad documents wrote %d audit rows", n)
	}
}

// TestExport_CacheNamingADeletedModel: the API keeps a cache's models as
// ids without a foreign key, so deleting a model leaves its id behind;
// export leaves it out with a warning instead of failing, and re-applies.
func TestExport_CacheNamingADeletedModel(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	var gone string
	for id, name := range modelIDs(t, srv) {
		if name == "claude-sonnet-4" {
			gone = id
		}
	}
	r, err := srv.Client.DeleteModelWithResponse(t.Context(), uuidOf(t, gone))
	if err != nil || r.StatusCode() != 204 {
		t.Fatalf("delete model: %v %s", err, r.Body)
	}
	var out bytes.Buffer
	warnings, err := configfile.Export(t.Context(), srv.Client, &out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(warnings, func(w string) bool {
		return strings.Contains(w, "Policy everything: its response cache names 1 model(s) that no longer exist")
	}) {
		t.Errorf("warnings = %q", warnings)
	}
	if !strings.Contains(out.String(), "  response_cache:\n    models:\n      - gpt-4o-mini\n    scope: header\n") {
		t.Errorf("export:\n%s", out.String())
	}
	if p := plan(t, srv, parse(t, out.String()), configfile.Options{}); !p.Empty() {
		t.Errorf("re-applying the export changes something:\n%s", printed(t, p))
	}
}

func uuidOf(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
