package controlapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"
)

// catalogRows is every row of every table but sessions (a sign-in writes
// one), as JSON: equal before and after means the catalog, tenancy and audit
// log are exactly as they were.
func catalogRows(t *testing.T, b *bundle) string {
	t.Helper()
	var tables string
	if err := b.st.Pool().QueryRow(b.ctx, `SELECT string_agg(quote_ident(table_name), ',' ORDER BY table_name)
		FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
		AND table_name NOT IN ('sessions', 'goose_db_version')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, tbl := range strings.Split(tables, ",") {
		var rows string
		if err := b.st.Pool().QueryRow(b.ctx, `SELECT coalesce(json_agg(t ORDER BY t::text)::text, '[]') FROM `+tbl+` t`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		out.WriteString(tbl + ": " + rows + "\n")
	}
	return out.String()
}

func applyBody(yaml string, dryRun bool) models.ApplyRequest {
	return models.ApplyRequest{Files: []models.ApplyFile{{Name: "relay.yaml", Content: yaml}}, DryRun: &dryRun}
}

// TestApplyConfig_AllOrNothing: a document set whose later document fails
// — refused by the operation (a base URL at a metadata address), a unique
// violation the caller could not foresee, an object out of the caller's
// reach — leaves every table exactly as before, in the dry run and the real
// run alike, and answers the failing operation's status naming the
// document; the same set without the bad document lands whole.
func TestApplyConfig_AllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	teamA, teamB := b.team("team-a"), b.team("team-b")
	call(b.admin.CreatePolicyWithResponse(b.ctx, models.PolicyCreate{Slug: "b-only", TeamID: &teamB.ID})).want(t, http.StatusCreated)
	b.policy("system-unshared")
	tadmin := b.newUser("tadmin-a")
	b.grant(tadmin.user.ID, models.RoleTeamAdmin, &teamA.ID, nil)

	good := `
kind: Project
spec: {team: team-a, slug: web, name: Web}
---
kind: Policy
spec: {slug: a-own, team: team-a}
---
kind: Host
spec: {slug: internal, provider: custom, base_url: 'http://10.1.2.3:8000/v1'}
`
	tests := []struct {
		name, as, yaml string
		status         int
		code, says     string
	}{
		{"refused by the operation", "admin", good + `---
kind: Host
spec: {slug: metadata, provider: custom, base_url: 'http://169.254.169.254/v1'}
`, http.StatusUnprocessableEntity, "validation_failed", "relay.yaml:4 (line 11) Host metadata: 422"},
		// Team B's policy is out of the team admin's sight, so the plan
		// creates one of the same slug after the project: the store refuses it.
		{"unique violation", "tadmin", `
kind: Project
spec: {team: team-a, slug: web}
---
kind: Policy
spec: {slug: b-only, team: team-a}
`, http.StatusConflict, "conflict", "Policy b-only: 409"},
		{"a system policy not shared with the team", "tadmin", `
kind: Project
spec: {team: team-a, slug: web}
---
kind: ServiceAccount
spec: {project: team-a/web, slug: ci, policy: system-unshared}
`, http.StatusUnprocessableEntity, "validation_failed", "ServiceAccount team-a/web/ci: 422 validation_failed: policy_id: no such policy"},
		{"another team's policy", "tadmin", `
kind: Project
spec: {team: team-a, slug: web}
---
kind: ServiceAccount
spec: {project: team-a/web, slug: ci, policy: b-only}
`, http.StatusNotFound, "not_found", `policy: no Policy "b-only"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := b.admin
			if tc.as == "tadmin" {
				c = tadmin.ClientWithResponses
			}
			before := catalogRows(t, b)
			for _, dry := range []bool{true, false} {
				e := call(c.ApplyConfigWithResponse(b.ctx, applyBody(tc.yaml, dry))).wantErr(t, tc.status, tc.code, "")
				if !strings.Contains(e.Message, tc.says) || !strings.Contains(e.Message, "nothing was changed") {
					t.Errorf("dry run %v: message %q, want it to name %q and say nothing was changed", dry, e.Message, tc.says)
				}
				if after := catalogRows(t, b); after != before {
					t.Fatalf("dry run %v: the failed apply changed the tables:\nbefore %s\nafter  %s", dry, before, after)
				}
			}
		})
	}

	before := catalogRows(t, b)
	dry := call(b.admin.ApplyConfigWithResponse(b.ctx, applyBody(good, true))).want(t, http.StatusOK).JSON200
	if after := catalogRows(t, b); after != before {
		t.Fatalf("a dry run changed the tables")
	}
	real := call(b.admin.ApplyConfigWithResponse(b.ctx, applyBody(good, false))).want(t, http.StatusOK).JSON200
	if dry.Plan != real.Plan || dry.Created != 3 || real.Created != 3 || !dry.DryRun || real.DryRun {
		t.Errorf("dry run %+v and real run %+v disagree (want 3 created each)", dry, real)
	}
	again := call(b.admin.ApplyConfigWithResponse(b.ctx, applyBody(good, false))).want(t, http.StatusOK).JSON200
	if again.Plan != "no changes\n" || again.Created+again.Updated+again.Deleted != 0 {
		t.Errorf("second apply: %+v", again)
	}
}
