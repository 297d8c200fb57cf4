package ui_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// created posts a form that must succeed (303 to the list).
func created(t *testing.T, br *browser, path string, form url.Values) {
	t.Helper()
	a := br.post(path, form)
	if a.status != http.StatusSeeOther {
		t.Fatalf("POST %s: %d\n%s", path, a.status, a.body)
	}
}

// rowID is the id in the Edit link of the list row that shows text.
func rowID(t *testing.T, a answer, slug, text string) string {
	t.Helper()
	edit := regexp.MustCompile(`href="/` + slug + `/([0-9a-f-]{36})"`)
	for _, tr := range strings.Split(a.body, "<tr>") {
		if m := edit.FindStringSubmatch(tr); m != nil && strings.Contains(tr, text) {
			return m[1]
		}
	}
	t.Fatalf("no row with %q and an Edit link in:\n%s", text, a.body)
	return ""
}

func TestConsole_RateLimitWithRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")
	must(t, br.get("/rate-limits/new"), http.StatusOK, `name="rule0_meter"`, `name="rule2_window"`)

	// A rule without an amount, and one the API refuses, are marked on their row.
	a := br.post("/rate-limits", url.Values{"slug": {"std"}, "rule0_meter": {"requests"}, "rule1_meter": {"total_tokens"}, "rule1_amount": {"100"}, "rule1_window": {"0"}})
	must(t, a, http.StatusUnprocessableEntity, "enter how many", `value="std"`)
	a = br.post("/rate-limits", url.Values{"slug": {"std"}, "rule1_meter": {"total_tokens"}, "rule1_amount": {"100"}, "rule1_window": {"0"}})
	if a.status < 400 || !regexp.MustCompile(`(?s)class="field invalid"><label for="f-rule1_window"`).MatchString(a.body) {
		t.Fatalf("window 0: %d, not marked on rule 2's window:\n%s", a.status, a.body)
	}

	created(t, br, "/rate-limits", url.Values{"slug": {"std"}, "name": {"Standard"},
		"rule0_meter": {"requests"}, "rule0_amount": {"60"}, "rule0_window": {"60"},
		"rule1_meter": {"total_tokens"}, "rule1_amount": {"100000"}, "rule1_window": {"3600"}, "rule1_per_principal": {"on"}})
	l := br.get("/rate-limits")
	id := rowID(t, l, "rate-limits", "std")
	rl := b.apiCall("GET", "/api/rate-limits/"+id, nil)
	if rules := rl["rules"].([]any); len(rules) != 2 || rules[1].(map[string]any)["per_principal"] != true {
		t.Fatalf("rules %v", rl["rules"])
	}

	// Editing shows the rules; clearing the first and changing the second
	// leaves one rule.
	must(t, br.get("/rate-limits/"+id), http.StatusOK, `value="100000"`, `<option value="total_tokens" selected>`)
	created(t, br, "/rate-limits/"+id, url.Values{"slug": {"std"}, "name": {"Standard"},
		"rule0_meter": {"concurrency"}, "rule0_amount": {"4"}})
	rules := b.apiCall("GET", "/api/rate-limits/"+id, nil)["rules"].([]any)
	if len(rules) != 1 || rules[0].(map[string]any)["meter"] != "concurrency" || rules[0].(map[string]any)["amount"].(float64) != 4 {
		t.Fatalf("after edit: %v", rules)
	}
}

func TestConsole_TenancyAndDirectoryForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	project := b.apiCall("POST", "/api/projects", map[string]any{"team_id": team["id"], "slug": "web"})
	policy := b.apiCall("POST", "/api/policies", map[string]any{"slug": "std"})
	br := b.signedIn("ada@example.com")

	// Budgets: an amount in currency, stored as micro-units.
	br.get("/budgets/new")
	must(t, br.post("/budgets", url.Values{"project_id": {project["id"].(string)}, "period": {"month"}, "amount": {"lots"}}),
		http.StatusUnprocessableEntity, "enter an amount like 100.00")
	created(t, br, "/budgets", url.Values{"project_id": {project["id"].(string)}, "period": {"month"}, "amount": {"250.50"}})
	bid := rowID(t, br.get("/budgets"), "budgets", "250.5")
	must(t, br.get("/budgets/"+bid), http.StatusOK, `value="250.5"`)
	created(t, br, "/budgets/"+bid, url.Values{"period": {"day"}, "amount": {"10"}})
	if got := b.apiCall("GET", "/api/budgets/"+bid, nil); got["amount"].(float64) != 10e6 || got["period"] != "day" {
		t.Fatalf("budget after edit %v", got)
	}

	// Users: the password is write-only.
	br.get("/users/new")
	must(t, br.post("/users", url.Values{"email": {"not an email"}}), http.StatusUnprocessableEntity, `class="field invalid"`, "enter an email address")
	created(t, br, "/users", url.Values{"email": {"bo@example.com"}, "name": {"Bo"}, "password": {"secret password 123"}})
	uid := rowID(t, br.get("/users"), "users", "bo@example.com")
	a := br.get("/users/" + uid)
	must(t, a, http.StatusOK, `value="bo@example.com"`)
	mustNot(t, a, "secret password 123")
	created(t, br, "/users/"+uid, url.Values{"email": {"bo@example.com"}, "name": {"Bo B"}, "disabled": {"on"}})
	if u := b.apiCall("GET", "/api/users/"+uid, nil); u["disabled"] != true || u["has_password"] != true || u["name"] != "Bo B" {
		t.Fatalf("user after edit %v", u)
	}

	// Groups with members.
	created(t, br, "/groups", url.Values{"slug": {"oncall"}, "members": {uid}})
	gid := rowID(t, br.get("/groups"), "groups", "oncall")
	if m := b.apiCall("GET", "/api/groups/"+gid+"/members", nil)["items"].([]any); len(m) != 1 {
		t.Fatalf("members %v", m)
	}
	must(t, br.get("/groups/"+gid), http.StatusOK, `value="`+uid+`" checked`)
	created(t, br, "/groups/"+gid, url.Values{"slug": {"oncall"}})
	if m := b.apiCall("GET", "/api/groups/"+gid+"/members", nil)["items"].([]any); len(m) != 0 {
		t.Fatalf("members after unticking %v", m)
	}

	// Policy bindings: exactly one subject.
	br.get("/policy-bindings/new")
	a = br.post("/policy-bindings", url.Values{"project_id": {project["id"].(string)}, "policy_id": {policy["id"].(string)}})
	if a.status < 400 || !strings.Contains(a.body, `class="alert error"`) {
		t.Fatalf("binding without a subject: %d\n%s", a.status, a.body)
	}
	created(t, br, "/policy-bindings", url.Values{"project_id": {project["id"].(string)}, "policy_id": {policy["id"].(string)}, "group_id": {gid}, "position": {"3"}})
	pbid := rowID(t, br.get("/policy-bindings"), "policy-bindings", "group ")
	created(t, br, "/policy-bindings/"+pbid, url.Values{"policy_id": {policy["id"].(string)}, "user_id": {uid}, "position": {"1"}})
	if pb := b.apiCall("GET", "/api/policy-bindings/"+pbid, nil); pb["user_id"] != uid || pb["group_id"] != nil || pb["position"].(float64) != 1 {
		t.Fatalf("policy binding after edit %v", pb)
	}

	// Role bindings: a role for a user in a project, then changed.
	created(t, br, "/role-bindings", url.Values{"role": {"developer"}, "user_id": {uid}, "project_id": {project["id"].(string)}})
	rbid := rowID(t, br.get("/role-bindings"), "role-bindings", "developer")
	created(t, br, "/role-bindings/"+rbid, url.Values{"role": {"project_admin"}})
	if rb := b.apiCall("GET", "/api/role-bindings/"+rbid, nil); rb["role"] != "project_admin" || rb["project_id"] != project["id"] {
		t.Fatalf("role binding after edit %v", rb)
	}
}

func TestConsole_NewFormsRefuseViewersAndForgedPosts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	b.user("vic@example.com", "viewer")
	vic := b.signedIn("vic@example.com")
	for _, kind := range []string{"rate-limits", "budgets", "policy-bindings", "users", "groups", "role-bindings"} {
		must(t, vic.get("/"+kind+"/new"), http.StatusForbidden, "Not allowed")
		mustNot(t, vic.get("/"+kind), "/"+kind+"/new")
	}
	must(t, vic.post("/groups", url.Values{"slug": {"forced"}}), http.StatusForbidden)
	must(t, vic.post("/rate-limits", url.Values{"slug": {"forced"}}), http.StatusForbidden)

	ada := b.signedIn("ada@example.com")
	for _, kind := range []string{"rate-limits", "groups", "users"} {
		must(t, ada.post("/"+kind, url.Values{"slug": {"sneaky"}, "email": {"sneaky@example.com"}, "csrf": {"not-the-token"}}), http.StatusForbidden, "reload the page")
	}
	mustNot(t, ada.get("/groups"), "sneaky")
	mustNot(t, ada.get("/rate-limits"), "sneaky")
	mustNot(t, ada.get("/users"), "sneaky")
}

func TestConsole_RoutingFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	alt := b.apiCall("POST", "/api/models", map[string]any{"name": "alt"})
	host := b.apiCall("POST", "/api/hosts", map[string]any{"slug": "h", "provider": "openai", "base_url": "https://h.example.com"})
	br := b.signedIn("ada@example.com")

	// A model with a strategy and fallbacks by name; an unknown name is
	// marked on the field.
	must(t, br.get("/models/new"), http.StatusOK, `name="strategy"`, `name="fallbacks"`)
	must(t, br.post("/models", url.Values{"name": {"main"}, "kind": {"chat"}, "strategy": {"cost"}, "fallbacks": {"nope"}}),
		http.StatusUnprocessableEntity, "no model named nope")
	created(t, br, "/models", url.Values{"name": {"main"}, "kind": {"chat"}, "strategy": {"cost"}, "fallbacks": {"alt"}})
	id := rowID(t, br.get("/models"), "models", "main")
	m := b.apiCall("GET", "/api/models/"+id, nil)
	if m["strategy"] != "cost" || len(m["fallbacks"].([]any)) != 1 || m["fallbacks"].([]any)[0] != alt["id"] {
		t.Fatalf("model %v", m)
	}
	must(t, br.get("/models/"+id), http.StatusOK, `value="alt"`, `<option value="cost" selected>`)
	// The API's own rule (no model falls back to itself) comes back on the form.
	a := br.post("/models/"+id, url.Values{"name": {"main"}, "kind": {"chat"}, "strategy": {"cost"}, "fallbacks": {"main"}})
	if a.status != http.StatusUnprocessableEntity || !strings.Contains(a.body, "itself") {
		t.Fatalf("self fallback: %d\n%s", a.status, a.body)
	}

	// A binding's weight.
	created(t, br, "/bindings", url.Values{"model_id": {id}, "host_id": {host["id"].(string)}, "shape": {"openai"},
		"upstream_model": {"up"}, "weight": {"4"}, "enabled": {"on"}})
	bl := b.apiCall("GET", "/api/bindings?model_id="+id, nil)["items"].([]any)
	if len(bl) != 1 || bl[0].(map[string]any)["weight"].(float64) != 4 {
		t.Fatalf("bindings %v", bl)
	}

	// A policy's routing strategy, affinity and budget fallback.
	created(t, br, "/policies", url.Values{"slug": {"routed"}, "route_strategy": {"latency"}, "affinity": {"binding"}, "budget_fallback": {"on"}})
	pid := rowID(t, br.get("/policies"), "policies", "routed")
	p := b.apiCall("GET", "/api/policies/"+pid, nil)
	if p["route_strategy"] != "latency" || p["affinity"] != "binding" || p["budget_fallback"] != true {
		t.Fatalf("policy %v", p)
	}
	must(t, br.get("/policies/"+pid), http.StatusOK, `<option value="binding" selected>`, `<option value="latency" selected>`)

	// A policy's degrade option: set at creation, shown in the form.
	created(t, br, "/policies", url.Values{"slug": {"degrading"}, "degrade_after_ms": {"1500"}, "degrade_below_priority": {"2"}})
	did := rowID(t, br.get("/policies"), "policies", "degrading")
	if d := b.apiCall("GET", "/api/policies/"+did, nil); d["degrade_after_ms"] != float64(1500) || d["degrade_below_priority"] != float64(2) || p["degrade_after_ms"] != nil {
		t.Fatalf("degrading policy %v (routed: %v)", d, p["degrade_after_ms"])
	}
	must(t, br.get("/policies/"+did), http.StatusOK, `name="degrade_after_ms"`, `value="1500"`, `name="degrade_below_priority"`)

	// The usage pages show the cache hit ratio and the money saved, and
	// group by binding and host key.
	must(t, br.get("/usage?group_by=binding"), http.StatusOK, "Cache hit ratio", "Saved by the cache", `<option value="host_key"`)
	must(t, br.get("/"), http.StatusOK, "Cache hit ratio")
}
