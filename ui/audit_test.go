package ui_test

import (
	"net/http"
	"net/url"
	"testing"
)

func TestConsole_AuditLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "viewer")
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	project := b.apiCall("POST", "/api/projects", map[string]any{"team_id": team["id"], "slug": "web"})
	u := b.apiCall("POST", "/api/users", map[string]any{"email": "pat@example.com", "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": u["id"], "role": "viewer", "project_id": project["id"]})

	br := b.signedIn("ada@example.com")
	a := br.get("/audit")
	must(t, a, http.StatusOK, "<title>Audit log · Relay</title>", "admin-token", team["id"].(string), `<td class="mono">sessions</td>`, `<option value="teams">`)

	// Filtered by kind: the team's row, not the sign-in.
	a = br.get("/audit?" + url.Values{"kind": {"teams"}}.Encode())
	must(t, a, http.StatusOK, team["id"].(string), `<option value="teams" selected>`)
	mustNot(t, a, project["id"].(string), `<td class="mono">sessions</td>`)
	// Where each write came from: here the test's loopback peer, for the
	// API's writes and the console's own sign-in alike.
	a = br.get("/audit?" + url.Values{"kind": {"sessions"}}.Encode())
	must(t, a, http.StatusOK, ">From<", `<td class="mono">127.0.0.1</td>`)
	a = br.get("/audit?"+url.Values{"actor": {"nobody"}}.Encode(), "HX-Request", "true")
	must(t, a, http.StatusOK, "No audit rows match.", `value="nobody"`)
	mustNot(t, a, "<nav")

	// A viewer of one project may not read the whole log.
	pat := b.signedIn("pat@example.com")
	must(t, pat.get("/audit"), http.StatusForbidden, "Not allowed")
}
