package configfile_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/configfile/configfiletest"
)

// semanticPolicy is the fixture's policy "everything" with two semantic
// cache domains: one with every rule set, one with none.
const semanticPolicy = `
kind: Policy
spec:
  slug: everything
  all_models: true
  all_host_keys: true
  limiter_failure_mode: closed
  route_strategy: cost
  affinity: binding
  response_cache:
    models: [gpt-4o-mini, claude-sonnet-4]
    scope: header
    scope_header: X-Tenant
    ttl_seconds: 600
    semantic:
      - name: faq
        models: [gpt-4o-mini, claude-sonnet-4]
        metadata: {topic: billing}
        system_sha256: [9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08]
        embeddings_model: text-embedding-3-small
        threshold: 0.85
      - {name: rest, embeddings_model: text-embedding-3-small}
  guardrails:
    max_prompt_bytes: 1048576
    rules:
      - {name: pii, stage: both, action: redact, detectors: [email, card]}
      - {name: words, stage: input, action: block, deny_words: [forbidden], deny_patterns: ['secret-\d+']}
      - name: classifier
        stage: output
        action: block
        webhook: {url: https://guard.example.com/check, timeout_ms: 500, fail: open, max_concurrent: 4}
`

// TestApply_SemanticCacheDomainsRoundTrip: a policy's semantic cache
// domains (models by name) are what the control API then holds, in order;
// the export writes them back, and applying the export is a no-op, so an
// export no longer wipes them. A document without them removes them,
// which the plan shows.
func TestApply_SemanticCacheDomainsRoundTrip(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	docs := parse(t, semanticPolicy)
	got := printed(t, apply(t, srv, docs, configfile.Options{}))
	if !strings.HasPrefix(got, "~ update Policy everything (response_cache: ") || !strings.Contains(got, "semantic: [{name: faq") {
		t.Errorf("plan:\n%s", got)
	}

	names := modelIDs(t, srv)
	rc := policyNamed(t, srv, "everything").ResponseCache
	if rc == nil || !rc.Enabled || rc.Semantic == nil || len(*rc.Semantic) != 2 {
		t.Fatalf("response cache = %+v", rc)
	}
	faq, rest := (*rc.Semantic)[0], (*rc.Semantic)[1]
	if faq.Name != "faq" || names[faq.EmbeddingsModel.String()] != "text-embedding-3-small" ||
		faq.Threshold == nil || *faq.Threshold != 0.85 || faq.Models == nil ||
		faq.Metadata == nil || (*faq.Metadata)["topic"] != "billing" ||
		faq.SystemSha256 == nil || !slices.Equal(*faq.SystemSha256, []string{"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}) {
		t.Fatalf("domain faq = %+v", faq)
	}
	var taken []string
	for _, id := range *faq.Models {
		taken = append(taken, names[id.String()])
	}
	slices.Sort(taken)
	if !slices.Equal(taken, []string{"claude-sonnet-4", "gpt-4o-mini"}) {
		t.Errorf("domain faq's models = %v", taken)
	}
	if rest.Name != "rest" || names[rest.EmbeddingsModel.String()] != "text-embedding-3-small" || rest.Models != nil || rest.Metadata != nil {
		t.Errorf("domain rest = %+v", rest)
	}

	if p := plan(t, srv, docs, configfile.Options{}); !p.Empty() {
		t.Errorf("re-applying the document changes something:\n%s", printed(t, p))
	}
	out := export(t, srv)
	want := "    ttl_seconds: 600\n    semantic:\n" +
		"      - name: faq\n        models:\n          - claude-sonnet-4\n          - gpt-4o-mini\n" +
		"        metadata:\n          topic: billing\n" +
		"        system_sha256:\n          - 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n" +
		"        embeddings_model: text-embedding-3-small\n        threshold: 0.85\n" +
		"      - name: rest\n        embeddings_model: text-embedding-3-small\n"
	if !strings.Contains(out, want) {
		t.Errorf("export lacks %q:\n%s", want, out)
	}
	if p := plan(t, srv, parse(t, out), configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("re-applying the export changes something:\n%s", printed(t, p))
	}

	// A threshold finer than the API keeps (four places) converges too.
	fine := parse(t, strings.Replace(semanticPolicy, "threshold: 0.85", "threshold: 0.12345678", 1))
	apply(t, srv, fine, configfile.Options{})
	if p := plan(t, srv, fine, configfile.Options{}); !p.Empty() {
		t.Errorf("a fine threshold does not converge:\n%s", printed(t, p))
	}

	// The fixture's policy has no domains: applying it removes them.
	got = printed(t, apply(t, srv, load(t, fixture), configfile.Options{}))
	if !strings.Contains(got, "~ update Policy everything (response_cache: ") || !strings.Contains(got, "semantic: [{name: faq") {
		t.Errorf("removing the domains plans:\n%s", got)
	}
	if rc := policyNamed(t, srv, "everything").ResponseCache; rc == nil || !rc.Enabled || rc.Semantic != nil && len(*rc.Semantic) > 0 {
		t.Errorf("after removing the domains: %+v", rc)
	}
}

// TestPlan_BadSemanticDomainsNameTheDocumentAndField: an unknown model, a
// threshold out of range, a name used twice (and the other rules the API
// checks) fail the plan, naming the document and the field, and nothing is
// written.
func TestPlan_BadSemanticDomainsNameTheDocumentAndField(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	before := srv.AuditRows(t)
	pol := "kind: Policy\nspec:\n  slug: everything\n  response_cache:\n    semantic:\n"
	emb := "embeddings_model: text-embedding-3-small"
	tests := []struct{ name, text, want string }{
		{"unknown embeddings model", pol + "      - {name: a, embeddings_model: ada-3}\n",
			`test.yaml:1 (line 1) Policy everything: response_cache.semantic.0.embeddings_model: no Model "ada-3" in the files or in Relay`},
		{"unknown model", pol + "      - {name: a, " + emb + "}\n      - {name: b, models: [gpt-5], " + emb + "}\n",
			`test.yaml:1 (line 1) Policy everything: response_cache.semantic.1.models: no Model "gpt-5" in the files or in Relay`},
		{"threshold above 1", pol + "      - {name: a, " + emb + ", threshold: 1.5}\n",
			"test.yaml:1 (line 1) Policy everything: response_cache.semantic.0.threshold: 1.5 is not 0 to 1"},
		{"threshold below 0", pol + "      - {name: a, " + emb + ", threshold: -0.1}\n",
			"Policy everything: response_cache.semantic.0.threshold: -0.1 is not 0 to 1"},
		{"threshold NaN", pol + "      - {name: a, " + emb + ", threshold: .nan}\n",
			"Policy everything: response_cache.semantic.0.threshold: NaN is not 0 to 1"},
		{"duplicate name", pol + "      - {name: a, " + emb + "}\n      - {name: a, " + emb + "}\n",
			`test.yaml:1 (line 1) Policy everything: response_cache.semantic.1.name: the domain "a" is named by semantic.0 too`},
		{"bad name", pol + "      - {name: FAQ, " + emb + "}\n",
			`Policy everything: response_cache.semantic.0.name: "FAQ" is not 1 to 64 of a-z, 0-9, _ and -`},
		{"no embeddings model", pol + "      - {name: a}\n",
			"Policy everything: response_cache.semantic.0.embeddings_model is required"},
		{"bad digest", pol + "      - {name: a, " + emb + ", system_sha256: [abc]}\n",
			`Policy everything: response_cache.semantic.0.system_sha256: "abc" is not a hex SHA-256 digest`},
		{"unknown field", pol + "      - {name: a, " + emb + ", treshold: 0.5}\n",
			"unknown field spec.response_cache.semantic.0.treshold"},
		{"too many", pol + strings.Repeat("      - {name: a, "+emb+"}\n", 17),
			"Policy everything: response_cache.semantic: at most 16 domains"},
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
	if n := srv.AuditRows(t) - before; n != 0 {
		t.Errorf("bad documents wrote %d audit rows", n)
	}
}

// TestExport_SemanticDomainNamingADeletedModel: a domain whose embedding
// model was deleted cannot be written as it is kept, so the export leaves it
// out with a warning (the others stay), and the export re-applies as a
// no-op (the plan reads Relay's side the same way).
func TestExport_SemanticDomainNamingADeletedModel(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	apply(t, srv, parse(t, strings.Replace(semanticPolicy, "      - {name: rest, embeddings_model: text-embedding-3-small}\n",
		"      - {name: rest, embeddings_model: text-embedding-3-small}\n      - {name: old, embeddings_model: old-embed}\n", 1)+
		"---\nkind: Model\nspec: {name: old-embed, provider: openai, kind: embedding}\n"), configfile.Options{})
	for id, name := range modelIDs(t, srv) {
		if name != "old-embed" {
			continue
		}
		if r, err := srv.Client.DeleteModelWithResponse(t.Context(), uuidOf(t, id)); err != nil || r.StatusCode() != 204 {
			t.Fatalf("delete model: %v %s", err, r.Body)
		}
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
	if s := out.String(); !strings.Contains(s, "      - name: rest\n") || strings.Contains(s, "name: old") {
		t.Errorf("export:\n%s", s)
	}
	if p := plan(t, srv, parse(t, out.String()), configfile.Options{}); !p.Empty() {
		t.Errorf("re-applying the export changes something:\n%s", printed(t, p))
	}
}
