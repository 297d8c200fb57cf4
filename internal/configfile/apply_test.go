package configfile_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/configfile/configfiletest"
)

const fixture = "testdata/catalog"

func load(t *testing.T, paths ...string) []configfile.Document {
	t.Helper()
	docs, err := configfile.Load(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func parse(t *testing.T, text string) []configfile.Document {
	t.Helper()
	docs, err := configfile.Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func plan(t *testing.T, srv *configfiletest.Server, docs []configfile.Document, opts configfile.Options) *configfile.Plan {
	t.Helper()
	p, err := configfile.NewPlan(t.Context(), srv.Client, docs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func apply(t *testing.T, srv *configfiletest.Server, docs []configfile.Document, opts configfile.Options) *configfile.Plan {
	t.Helper()
	p := plan(t, srv, docs, opts)
	if _, err := p.Apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	return p
}

func printed(t *testing.T, p *configfile.Plan) string {
	t.Helper()
	var b strings.Builder
	if err := p.Print(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func export(t *testing.T, srv *configfiletest.Server) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := configfile.Export(t.Context(), srv.Client, &b, 0); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestApply_SecondApplyIsNoop(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	docs := load(t, fixture)

	first := apply(t, srv, docs, configfile.Options{})
	created, updated, deleted := first.Counts()
	if created != len(docs) || updated != 0 || deleted != 0 {
		t.Fatalf("first plan: %d create, %d update, %d delete; want %d creates\n%s", created, updated, deleted, len(docs), printed(t, first))
	}
	if !strings.Contains(printed(t, first), "+ create Host openai\n") {
		t.Errorf("first plan does not create Host openai:\n%s", printed(t, first))
	}

	audit := srv.AuditRows(t)
	second := plan(t, srv, docs, configfile.Options{Prune: true})
	if !second.Empty() {
		t.Fatalf("second plan is not empty:\n%s", printed(t, second))
	}
	if got := printed(t, second); got != "no changes\n" {
		t.Errorf("second plan prints %q", got)
	}
	if _, err := second.Apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := srv.AuditRows(t); got != audit {
		t.Errorf("the second apply wrote %d audit rows", got-audit)
	}
}

func TestPlan_DryRunWritesNothing(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	p := plan(t, srv, load(t, fixture), configfile.Options{Prune: true})
	if p.Empty() {
		t.Fatal("empty plan for an empty control plane")
	}
	if n := srv.AuditRows(t); n != 0 {
		t.Errorf("planning wrote %d audit rows", n)
	}
	if out := export(t, srv); strings.Contains(out, "kind:") {
		t.Errorf("planning created objects:\n%s", out)
	}
}

func TestExport_RoundTripsIntoAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	a, b := configfiletest.New(t), configfiletest.New(t)
	apply(t, a, load(t, fixture), configfile.Options{})
	exported := export(t, a)

	docs, err := configfile.Parse("export.yaml", []byte(exported))
	if err != nil {
		t.Fatalf("parse the export: %v\n%s", err, exported)
	}
	apply(t, b, docs, configfile.Options{})
	if again := export(t, b); again != exported {
		t.Errorf("export of the copy differs:\n--- original\n%s\n--- copy\n%s", exported, again)
	}
	if p := plan(t, b, docs, configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("applying the export again is not a no-op:\n%s", printed(t, p))
	}
	if p := plan(t, a, docs, configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("the export differs from the catalog it came from:\n%s", printed(t, p))
	}
	for _, want := range []string{
		"kind: Binding\nspec:\n  model: claude-sonnet-4\n  host: anthropic\n",
		"  secret_ref: env:OPENAI_API_KEY\n",
		"  host_keys:\n    - anthropic/main\n    - openai/primary\n",
	} {
		if !strings.Contains(exported, want) {
			t.Errorf("export lacks %q:\n%s", want, exported)
		}
	}
}

func TestExport_SealedSecretIsNeverWritten(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	docs := parse(t, `
kind: Host
spec: {slug: openai, provider: openai, base_url: https://api.openai.com/v1}
---
kind: HostKey
spec: {host: openai, slug: sealed, secret: sk-very-secret-value}
`)
	if _, err := configfile.NewPlan(t.Context(), srv.Client, docs, configfile.Options{}); err == nil ||
		!strings.Contains(err.Error(), "test.yaml:2") || !strings.Contains(err.Error(), "--allow-secrets") {
		t.Fatalf("a literal secret without --allow-secrets: err = %v", err)
	}
	apply(t, srv, docs, configfile.Options{AllowSecrets: true})

	var out bytes.Buffer
	warnings, err := configfile.Export(t.Context(), srv.Client, &out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "sk-very-secret-value") {
		t.Fatalf("export leaks the secret:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "# The secret of this host key is sealed") || len(warnings) != 1 {
		t.Errorf("want a comment and one warning for the sealed key; warnings %q\n%s", warnings, out.String())
	}
	// The export (no secret) applies cleanly over the catalog it came from:
	// a host key without secret_ref leaves the sealed secret alone.
	if p := plan(t, srv, parse(t, out.String()), configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("re-applying the export changes something:\n%s", printed(t, p))
	}
	// Into an empty control plane it cannot: the key needs a secret.
	_, err = configfile.NewPlan(t.Context(), configfiletest.New(t).Client, parse(t, out.String()), configfile.Options{})
	if err == nil || !strings.Contains(err.Error(), "HostKey openai/sealed: a new host key needs secret_ref") {
		t.Errorf("err = %v", err)
	}
}

func TestApply_UpdatesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	before := srv.AuditRows(t)

	changed := parse(t, `
kind: Policy
spec:
  slug: default
  name: Default
  rate_limit: standard
  max_wait_ms: 500
  key_strategy: round_robin
  models: [gpt-4o-mini, text-embedding-3-small]
  host_keys: [openai/primary, anthropic/main]
  model_rate_limits:
    - {model: claude-sonnet-4, rate_limit: openai-tier-1}
---
kind: RateLimit
spec:
  slug: standard
  name: Standard
  rules:
    - {meter: requests, amount: 1000, window_seconds: 60}
    - {meter: total_tokens, amount: 200000}
    - {meter: concurrency, amount: 10, per_principal: true}
---
kind: HostKey
spec: {host: openai, slug: primary, secret_ref: env:OPENAI_KEY_2, tier_rate_limit: openai-tier-1}
`)
	p := apply(t, srv, changed, configfile.Options{})
	got := printed(t, p)
	for _, want := range []string{
		"~ update RateLimit standard (rules: [concurrency 10 per principal, requests 600/60s, total_tokens 200000/60s] → [concurrency 10 per principal, requests 1000/60s, total_tokens 200000/60s])\n",
		"~ update HostKey openai/primary (secret_ref: env:OPENAI_API_KEY → env:OPENAI_KEY_2)\n",
		"~ update Policy default (max_wait_ms: 2000 → 500, models: +text-embedding-3-small, -claude-sonnet-4)\n",
		"plan: 0 to create, 3 to update, 0 to delete\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q:\n%s", want, got)
		}
	}
	// One audit row per write: the policy PATCH, one grant added and one
	// withdrawn, one rule PATCHed; the host key PATCH writes two (update,
	// then rotate for the new secret).
	if n := srv.AuditRows(t) - before; n != 6 {
		t.Errorf("%d audit rows; want 6", n)
	}
	if p := plan(t, srv, changed, configfile.Options{}); !p.Empty() {
		t.Errorf("not converged:\n%s", printed(t, p))
	}
}

func TestApply_PruneDeletesOnlyKindsInTheFiles(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})

	// Only hosts and models in the files: the host anthropic and the model
	// claude-sonnet-4 go (with the binding between them, which the
	// database cascades); teams, policies … stay although absent.
	docs := parse(t, `
kind: Host
spec: {slug: openai, name: OpenAI, provider: openai, base_url: https://api.openai.com/v1}
---
kind: Model
spec: {name: gpt-4o-mini, provider: openai, context_window: 128000, max_output_tokens: 16384, supports_vision: true, strategy: weighted}
---
kind: Model
spec: {name: text-embedding-3-small, provider: openai, kind: embedding, supports_tools: false, supports_json: false}
`)
	if _, err := configfile.NewPlan(t.Context(), srv.Client, docs, configfile.Options{}); err != nil {
		t.Fatal(err)
	}
	p := apply(t, srv, docs, configfile.Options{Prune: true})
	// gpt-4o-mini's fallback goes with the model it names.
	want := "~ update Model gpt-4o-mini (fallbacks: [claude-sonnet-4] → [])\n" +
		"- delete Model claude-sonnet-4 (also deletes 1 Binding)\n" +
		"- delete Host anthropic (also deletes 1 HostKey)\n" +
		"plan: 0 to create, 1 to update, 2 to delete\n"
	if got := printed(t, p); got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	out := export(t, srv)
	for _, gone := range []string{"slug: anthropic\n", "name: claude-sonnet-4\n"} {
		if strings.Contains(out, gone) {
			t.Errorf("%q survived the prune", gone)
		}
	}
	for _, kept := range []string{"kind: Team\n", "kind: Policy\n", "kind: RateLimit\n", "kind: Budget\n", "slug: openai\n"} {
		if !strings.Contains(out, kept) {
			t.Errorf("prune deleted %q", kept)
		}
	}
}

func TestApply_ConflictNamesTheDocument(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	docs := parse(t, `
kind: Team
spec: {slug: platform}
---
kind: Host
spec: {slug: openai, provider: openai, base_url: https://api.openai.com/v1}
`)
	p := plan(t, srv, docs, configfile.Options{})
	// Someone else creates the host between the plan and the apply.
	r, err := srv.Client.CreateHostWithResponse(t.Context(), models.HostCreate{Slug: "openai", Provider: "openai", BaseURL: "https://example.com"})
	if err != nil || r.JSON201 == nil {
		t.Fatalf("create host: %v %s", err, r.Body)
	}
	_, err = p.Apply(t.Context())
	if !configfile.IsConflict(err) {
		t.Fatalf("err = %v; want a conflict", err)
	}
	if want := "test.yaml:2 (line 5) Host openai: 409 conflict: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %q; want it to start with %q", err, want)
	}
}

func TestApply_PruneConflictNamesTheObject(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	// The service account ci still uses the policy default (RESTRICT), and
	// service accounts are not in these files, so prune cannot delete it.
	// The plan (a dry run too) foresees the refusal before anything changes.
	docs := parse(t, "kind: Policy\nspec: {slug: everything, all_models: true, all_host_keys: true, limiter_failure_mode: closed}\n")
	_, err := configfile.NewPlan(t.Context(), srv.Client, docs, configfile.Options{Prune: true})
	if err == nil || !strings.HasPrefix(err.Error(), "--prune would delete Policy default, but ServiceAccount platform/chat/ci (which this apply keeps) names it in policy") {
		t.Fatalf("err = %v", err)
	}
}

func TestPlan_InvalidDocumentsNameTheDocument(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	host := "kind: Host\nspec: {slug: openai, provider: openai, base_url: https://api.openai.com/v1}\n---\n"
	tests := []struct {
		name, text, want string
	}{
		{"unknown kind", "kind: Hots\nspec: {slug: x}\n", "test.yaml:1 (line 1) Hots: unknown kind"},
		{"unknown field", "kind: Host\nspec:\n  slug: x\n  provider: openai\n  base_url: http://x\n  enabeld: true\n",
			"test.yaml:1 (line 1) Host: line 6: unknown field spec.enabeld"},
		{"missing spec", "kind: Team\n", "test.yaml:1 (line 1) Team: spec is required"},
		{"wrong types", "kind: Host\nspec: {slug: x, provider: openai, base_url: http://x, enabled: maybe, connect_timeout_ms: soon}\n",
			"test.yaml:1 (line 1) Host: line 2: cannot unmarshal !!str `maybe` into bool; line 2: cannot unmarshal !!str `soon` into int32"},
		{"required field", "kind: Binding\nspec: {model: m, host: h}\n", "Binding m@h: model, host, shape, upstream_model is required"},
		{"enum", "kind: Host\nspec: {slug: x, provider: openia, base_url: http://x}\n", "test.yaml:1 (line 1) Host x: provider: value is not one of the allowed values"},
		{"pattern", "kind: Team\nspec: {slug: Platform_1}\n", "Team Platform_1: slug: string doesn't match the regular expression"},
		{"dangling reference", host + "kind: Binding\nspec: {model: gpt-5, host: openai, shape: openai, upstream_model: gpt-5}\n",
			"test.yaml:2 (line 4) Binding gpt-5@openai: model: no Model \"gpt-5\" in the files or in Relay"},
		{"duplicate", host + host, "test.yaml:2 (line 4) Host openai: repeats the document at test.yaml:1"},
		{"two subjects", "kind: RoleBinding\nspec: {role: admin, user: a@b.c, group: ops}\n", "RoleBinding admin user:a@b.c on system: give only one of user, group"},
		{"bad project", "kind: ServiceAccount\nspec: {project: chat, slug: ci}\n", "project: want team/project, got \"chat\""},
		{"host key without secret", host + "kind: HostKey\nspec: {host: openai, slug: k}\n", "HostKey openai/k: a new host key needs secret_ref"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			docs, err := configfile.Parse("test.yaml", []byte(tt.text))
			if err == nil {
				_, err = configfile.NewPlan(t.Context(), srv.Client, docs, configfile.Options{})
			}
			var de *configfile.DocError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want a DocError with %q", err, tt.want)
			}
		})
	}
	if n := srv.AuditRows(t); n != 0 {
		t.Errorf("invalid documents wrote %d audit rows", n)
	}
}

func TestNewPlan_UnreachableAndUnauthorized(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	bad, err := configfile.NewClient(srv.URL, "wrong-token", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = configfile.NewPlan(t.Context(), bad, nil, configfile.Options{})
	if err == nil || !strings.Contains(err.Error(), "refused the credentials (401") || strings.Contains(err.Error(), "\n") {
		t.Errorf("wrong token: err = %v", err)
	}

	down, err := configfile.NewClient("http://127.0.0.1:1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err = configfile.NewPlan(ctx, down, nil, configfile.Options{Parallel: 1})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the control plane at http://127.0.0.1:1") {
		t.Errorf("unreachable: err = %v", err)
	}
}

func TestApply_EveryUpdateConverges(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})

	// testdata/changed.yaml changes nearly every field that apply updates
	// in place; if an update body missed one, the next plan would show it.
	changed := load(t, "testdata/changed.yaml")
	p := apply(t, srv, changed, configfile.Options{Prune: true})
	created, updated, deleted := p.Counts()
	if created != 0 || deleted != 0 || updated < 20 {
		t.Errorf("%d create, %d update, %d delete:\n%s", created, updated, deleted, printed(t, p))
	}
	for _, want := range []string{
		"~ update Binding claude-sonnet-4@anthropic (reasoning_price: 15000000 → null, price_tiers: [{above_input_tokens: 200000, input_price: 6000000, output_price: 22500000}] → [])\n",
		"~ update HostKey anthropic/main (tier_rate_limit: \"\" → openai-tier-1)\n",
		"~ update User ada@example.com (email: ada@example.com → Ada@Example.com, name: Ada → \"Ada Lovelace\", groups: -ops)\n",
		"~ update ServiceAccount platform/chat/ci (name: CI → \"CI bot\", policy: default → \"\")\n",
		"capture_payloads: false → true, capture_max_bytes: 0 → 4096, route_strategy: \"\" → latency, affinity: key → off, budget_fallback: false → true",
		"~ update Model gpt-4o-mini (supports_vision: true → false, strategy: weighted → latency)\n",
		"~ update Model claude-sonnet-4 (supports_vision: false → true, strategy: priority → least_busy, fallbacks: [gpt-4o-mini] → [])\n",
		"weight: 3 → 5",
	} {
		if !strings.Contains(printed(t, p), want) {
			t.Errorf("plan lacks %q:\n%s", want, printed(t, p))
		}
	}
	if again := plan(t, srv, changed, configfile.Options{Prune: true}); !again.Empty() {
		t.Errorf("not converged after the update:\n%s", printed(t, again))
	}
	// And back: the original files undo every change.
	apply(t, srv, load(t, fixture), configfile.Options{Prune: true})
	if again := plan(t, srv, load(t, fixture), configfile.Options{Prune: true}); !again.Empty() {
		t.Errorf("not converged after the way back:\n%s", printed(t, again))
	}
}
