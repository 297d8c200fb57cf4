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
