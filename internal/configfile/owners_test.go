package configfile_test

import (
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/configfile/configfiletest"
)

// TestApply_PolicyOwnerRoundTrips: a policy's team is applied, exported, and
// a document that would give an existing policy another owner is refused at
// plan time (the owner never changes), naming the document.
func TestApply_PolicyOwnerRoundTrips(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	docs := parse(t, `
kind: Team
spec: {slug: platform}
---
kind: Team
spec: {slug: research}
---
kind: Policy
spec: {slug: platform-default, team: platform}
---
kind: Policy
spec: {slug: shared-default}
`)
	apply(t, srv, docs, configfile.Options{})
	out := export(t, srv)
	if !strings.Contains(out, "slug: platform-default\n  team: platform\n") {
		t.Errorf("export does not carry the policy's team:\n%s", out)
	}
	if second := plan(t, srv, docs, configfile.Options{}); !second.Empty() {
		t.Errorf("second plan is not empty:\n%s", printed(t, second))
	}

	moved := parse(t, "kind: Policy\nspec: {slug: platform-default, team: research}\n")
	_, err := configfile.NewPlan(t.Context(), srv.Client, moved, configfile.Options{})
	if err == nil || !strings.Contains(err.Error(), "Policy platform-default: team: the owner of a policy never changes") {
		t.Errorf("plan moving a policy to another team: err = %v", err)
	}
	toSystem := parse(t, "kind: Policy\nspec: {slug: platform-default}\n")
	if _, err := configfile.NewPlan(t.Context(), srv.Client, toSystem, configfile.Options{}); err == nil {
		t.Error("plan making a team's policy a system one succeeded")
	}
}

// TestPlan_PruneForeseesRefusals: a dry run that says it will delete a team
// whose projects it keeps (Relay answers the real delete 409) is a refusal at
// plan time, and so is a policy a kept service account names; when the plan
// deletes those too, the delete goes through.
func TestPlan_PruneForeseesRefusals(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, parse(t, `
kind: Team
spec: {slug: keep}
---
kind: Team
spec: {slug: doomed}
---
kind: Project
spec: {team: doomed, slug: web}
`), configfile.Options{})
	onlyKeep := parse(t, "kind: Team\nspec: {slug: keep}\n")
	_, err := configfile.NewPlan(t.Context(), srv.Client, onlyKeep, configfile.Options{Prune: true}) // a dry run is this plan, printed
	if err == nil || !strings.Contains(err.Error(), "--prune would delete Team doomed, but Project doomed/web (which this apply keeps) names it in team") {
		t.Fatalf("dry run deleting a team with kept projects: err = %v", err)
	}
	// With projects in the files too, prune deletes the project first and then the team.
	both := parse(t, "kind: Team\nspec: {slug: keep}\n---\nkind: Project\nspec: {team: keep, slug: api}\n")
	p := apply(t, srv, both, configfile.Options{Prune: true})
	if _, _, deleted := p.Counts(); deleted != 2 {
		t.Errorf("deleted %d objects, want the project and the team\n%s", deleted, printed(t, p))
	}
}

// TestLoad_CapsTheInput: past MaxDocuments documents or MaxInputBytes bytes
// over the files of one apply, the input is refused before any of it is
// planned.
func TestLoad_CapsTheInput(t *testing.T) {
	t.Parallel()
	doc := "kind: Team\nspec: {slug: t}\n---\n"
	tests := []struct {
		name, input, want string
	}{
		{"too many documents", strings.Repeat("---\nkind: Team\nspec: {slug: t}\n", configfile.MaxDocuments+1), "more than 50000 documents"},
		{"too many bytes", doc + "# " + strings.Repeat("x", configfile.MaxInputBytes) + "\n", "larger than 16777216 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := configfile.Load([]string{"-"}, strings.NewReader(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if docs, err := configfile.Load([]string{"-"}, strings.NewReader(doc)); err != nil || len(docs) != 1 {
		t.Errorf("a small input: %d documents, %v", len(docs), err)
	}
}

// TestApply_SharesRoundTrip: a host key's and a system policy's shared_with
// are applied, exported, converge, and a removed team is unshared — the host
// key leaving the team's own policy with it.
func TestApply_SharesRoundTrip(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	base := `
kind: Team
spec: {slug: platform}
---
kind: Team
spec: {slug: research}
---
kind: Host
spec: {slug: openai, provider: openai, base_url: https://api.openai.com/v1}
---
kind: HostKey
spec: {host: openai, slug: main, secret_ref: "env:OPENAI_API_KEY", shared_with: [platform, research]}
---
kind: Policy
spec: {slug: platform-own, team: platform, host_keys: [openai/main]}
---
kind: Policy
spec: {slug: everyone, shared_with: [research, platform]}
`
	docs := parse(t, base)
	apply(t, srv, docs, configfile.Options{})
	out := export(t, srv)
	for _, want := range []string{"shared_with:\n    - platform\n    - research\n"} {
		if strings.Count(out, want) != 2 {
			t.Errorf("export should carry both shares lists %q:\n%s", want, out)
		}
	}
	if second := plan(t, srv, docs, configfile.Options{}); !second.Empty() {
		t.Errorf("second plan is not empty:\n%s", printed(t, second))
	}
	fewer := strings.ReplaceAll(base, "shared_with: [platform, research]", "shared_with: [research]")
	fewer = strings.ReplaceAll(fewer, "shared_with: [research, platform]", "shared_with: [research]")
	fewer = strings.ReplaceAll(fewer, "host_keys: [openai/main]", "host_keys: []")
	apply(t, srv, parse(t, fewer), configfile.Options{})
	if third := plan(t, srv, parse(t, fewer), configfile.Options{}); !third.Empty() {
		t.Errorf("plan after unsharing is not empty:\n%s", printed(t, third))
	}
	if out := export(t, srv); strings.Contains(out, "- platform\n") {
		t.Errorf("export still shares with platform:\n%s", out)
	}
}
