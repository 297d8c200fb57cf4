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

// TestConsole_PolicyCacheGuardrailsAndMCP: the policy form edits the
// response cache, the guardrails (as the API's JSON) and the MCP grants;
// what it saves is what the API then shows, the edit form shows it again,
// and a rule the API refuses is marked in place with what was typed kept.
func TestConsole_PolicyCacheGuardrailsAndMCP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")
	must(t, br.get("/policies/new"), http.StatusOK, "Response cache", "Guardrails (JSON)", "MCP grants")
	rules := `{"rules":[{"name":"pii","stage":"both","action":"redact","detectors":["email","card"]}]}`
	a := br.post("/policies", url.Values{"slug": {"guarded"}, "affinity": {"key"}, "cache_enabled": {"on"}, "cache_scope": {"relay_key"},
		"cache_ttl_seconds": {"600"}, "guardrails": {rules}, "mcp_grants": {"docs, github__search_*"}, "mcp_require_approval": {"on"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	l := b.apiCall("GET", "/api/policies", nil)["items"].([]any)
	var p map[string]any
	for _, x := range l {
		if x.(map[string]any)["slug"] == "guarded" {
			p = x.(map[string]any)
		}
	}
	rc, _ := p["response_cache"].(map[string]any)
	g, _ := p["guardrails"].(map[string]any)
	grants, _ := p["mcp_grants"].([]any)
	if rc["enabled"] != true || rc["scope"] != "relay_key" || rc["ttl_seconds"] != float64(600) || g == nil || len(g["rules"].([]any)) != 1 ||
		len(grants) != 2 || grants[1] != "github__search_*" || p["mcp_require_approval"] != true {
		t.Fatalf("saved: cache %v guardrails %v grants %v %v", rc, g, grants, p["mcp_require_approval"])
	}
	id := p["id"].(string)
	must(t, br.get("/policies/"+id), http.StatusOK, `value="600"`, "&#34;redact&#34;", `value="docs, github__search_*"`)

	// The API's validation, in place: an action no rule has, a grant no pattern is.
	bad := `{"rules":[{"name":"pii","stage":"both","action":"shout"}]}`
	a = br.post("/policies/"+id, url.Values{"slug": {"guarded"}, "affinity": {"key"}, "guardrails": {bad}})
	must(t, a, http.StatusBadRequest, "Check the fields marked below.", "shout")
	a = br.post("/policies/"+id, url.Values{"slug": {"guarded"}, "affinity": {"key"}, "guardrails": {"not json"}})
	must(t, a, http.StatusUnprocessableEntity, "this is not a guardrails object")
	a = br.post("/policies/"+id, url.Values{"slug": {"guarded"}, "affinity": {"key"}, "mcp_grants": {"docs/../x"}})
	if a.status < 400 {
		t.Fatalf("a grant that is no pattern was saved: %d", a.status)
	}
	// Turning the cache off and emptying the rules and grants removes them.
	if a := br.post("/policies/"+id, url.Values{"slug": {"guarded"}, "affinity": {"key"}}); a.status != http.StatusSeeOther {
		t.Fatalf("clear: %d %s", a.status, a.body)
	}
	p = b.apiCall("GET", "/api/policies/"+id, nil)
	if rc, _ := p["response_cache"].(map[string]any); rc != nil && rc["enabled"] == true {
		t.Fatalf("cache still on: %v", rc)
	}
	if g, _ := p["guardrails"].(map[string]any); g != nil && len(g["rules"].([]any)) > 0 {
		t.Fatalf("guardrails kept: %v", g)
	}
	if gr, _ := p["mcp_grants"].([]any); len(gr) != 0 {
		t.Fatalf("grants kept: %v", gr)
	}
}
