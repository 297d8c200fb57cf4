package ui_test

import (
	"net/http"
	"net/url"
	"testing"
)

// TestConsole_TeamAdminMakesItsTeamsPolicy: a team admin makes a policy
// owned by its team in the console (a system admin's job alone before), the
// list names each policy's owner, and another team's policy is not listed.
func TestConsole_TeamAdminMakesItsTeamsPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	core := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	other := b.apiCall("POST", "/api/teams", map[string]any{"slug": "other"})
	b.apiCall("POST", "/api/policies", map[string]any{"slug": "theirs", "team_id": other["id"]})
	b.apiCall("POST", "/api/policies", map[string]any{"slug": "shared-default"})
	u := b.apiCall("POST", "/api/users", map[string]any{"email": "lead@example.com", "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": u["id"], "role": "team_admin", "team_id": core["id"]})
	br := b.signedIn("lead@example.com")
	must(t, br.get("/policies/new"), http.StatusOK, "Owner", "The system")
	a := br.post("/policies", url.Values{"slug": {"core-default"}, "team_id": {core["id"].(string)}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("create the team's policy: %d %s", a.status, a.body)
	}
	list := br.get("/policies")
	must(t, list, http.StatusOK, "core-default", "Team core", "shared-default", "System")
	mustNot(t, list, "theirs")
	// A system policy stays a system admin's.
	if a := br.post("/policies", url.Values{"slug": {"sys-by-lead"}}); a.status == http.StatusSeeOther {
		t.Errorf("a team admin made a system policy: %d", a.status)
	}
}
