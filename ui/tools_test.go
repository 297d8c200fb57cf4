package ui_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store"
)

// TestConsole_RoutingExplain: a relay key whose policy grants the model is
// routed past a binding on a disabled host to the binding on an enabled one,
// and its host key is named; a policy that grants nothing is refused with the
// reason; a project viewer may not ask.
func TestConsole_RoutingExplain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "viewer")
	up := b.apiCall("POST", "/api/hosts", map[string]any{"slug": "up", "provider": "openai", "base_url": "https://api.example.com/v1"})
	down := b.apiCall("POST", "/api/hosts", map[string]any{"slug": "down", "provider": "openai", "base_url": "https://down.example.com/v1", "enabled": false})
	spare := b.apiCall("POST", "/api/models", map[string]any{"name": "gpt-spare"})
	model := b.apiCall("POST", "/api/models", map[string]any{"name": "gpt-x", "fallbacks": []any{spare["id"]}})
	b.apiCall("POST", "/api/bindings", map[string]any{"model_id": spare["id"], "host_id": up["id"], "shape": "openai", "upstream_model": "gpt-spare-1", "position": 0})
	b.apiCall("POST", "/api/bindings", map[string]any{"model_id": model["id"], "host_id": down["id"], "shape": "openai", "upstream_model": "gpt-x-down", "position": 0})
	b.apiCall("POST", "/api/bindings", map[string]any{"model_id": model["id"], "host_id": up["id"], "shape": "openai", "upstream_model": "gpt-x-2026", "position": 1})
	b.apiCall("POST", "/api/host-keys", map[string]any{"host_id": up["id"], "slug": "primary", "secret": "sk-upstream-secret-value"})
	open := b.apiCall("POST", "/api/policies", map[string]any{"slug": "open", "all_models": true, "all_host_keys": true})
	closed := b.apiCall("POST", "/api/policies", map[string]any{"slug": "closed"})
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	project := b.apiCall("POST", "/api/projects", map[string]any{"team_id": team["id"], "slug": "web"})
	sa := b.apiCall("POST", "/api/service-accounts", map[string]any{"project_id": project["id"], "slug": "ci"})
	key := b.apiCall("POST", "/api/relay-keys", map[string]any{"project_id": project["id"], "service_account_id": sa["id"], "name": "ci", "policy_id": open["id"]})
	if err := b.snap.Load(t.Context()); err != nil {
		t.Fatal(err)
	}

	br := b.signedIn("ada@example.com")
	must(t, br.get("/explain"), http.StatusOK, "<title>Routing explain · Relay</title>", `<option value="gpt-x">`)
	a := br.get("/explain?" + url.Values{"relay_key_id": {key["relay_key"].(map[string]any)["id"].(string)}, "model": {"gpt-x"}}.Encode())
	must(t, a, http.StatusOK, "The request would go to up (gpt-x) with host key primary (slot 0, affinity", "taken first", "skipped: host disabled",
		"the relay key&#39;s own policy", "open", `<div class="label">Strategy</div><div class="value">priority</div>`,
		`<div class="label">Strategy from</div><div class="value">model</div>`, `<div class="label">Affinity outcome</div>`,
		"gpt-spare (fallback 1)", `<th class="num" scope="col">Score</th>`, " prompt tokens</div>", "gpt-x-2026", "gpt-x-down", "gpt-spare-1")
	mustNot(t, a, "would be refused")
	mustNot(t, a, "sk-upstream-secret-value")

	// A hint, a session and a body reach the router as a request's would.
	policyID := open["id"].(string)
	a = br.get("/explain?" + url.Values{"policy_id": {policyID}, "model": {"gpt-x"}, "hint": {"cost=min"}, "session": {"agent-7"},
		"body": {`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`}}.Encode())
	must(t, a, http.StatusOK, `<div class="label">Strategy</div><div class="value">cost</div>`,
		`<div class="label">Strategy from</div><div class="value">hint</div>`, `<div class="label">Hint</div><div class="value">cost=min</div>`,
		`<div class="label">Session from</div><div class="value">x-relay-session</div>`, "prompt tokens, tools",
		`<option value="cost=min" selected>`, `value="agent-7"`)
	must(t, br.get("/explain?"+url.Values{"policy_id": {policyID}, "model": {"gpt-x"}, "body": {`[1]`}}.Encode()),
		http.StatusUnprocessableEntity, "The request body is not a JSON object.")

	a = br.get("/explain?"+url.Values{"policy_id": {closed["id"].(string)}, "model": {"gpt-x"}}.Encode(), "HX-Request", "true")
	must(t, a, http.StatusOK, "A request would be refused", "not granted")
	mustNot(t, a, "<nav")

	keyID := key["relay_key"].(map[string]any)["id"].(string)
	b.apiCall("POST", "/api/relay-keys/"+keyID+"/revoke", nil)
	if err := b.snap.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	must(t, br.get("/explain?"+url.Values{"relay_key_id": {keyID}, "model": {"gpt-x"}}.Encode()), http.StatusOK, "credential revoked", "A request would be refused")

	a = br.get("/explain?" + url.Values{"model": {"gpt-x"}}.Encode())
	must(t, a, http.StatusUnprocessableEntity, "choose a relay key or a policy")

	u := b.apiCall("POST", "/api/users", map[string]any{"email": "pat@example.com", "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": u["id"], "role": "viewer", "project_id": project["id"]})
	must(t, b.signedIn("pat@example.com").get("/explain?"+url.Values{"policy_id": {open["id"].(string)}, "model": {"gpt-x"}}.Encode()),
		http.StatusForbidden, "Not allowed")
}

// TestConsole_PayloadCaptures: a project admin opens a capture, deletes it,
// and deletes the rest of the project's; a developer of the project may not
// read them; a forged delete is refused.
func TestConsole_PayloadCaptures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	project := b.apiCall("POST", "/api/projects", map[string]any{"team_id": team["id"], "slug": "web"})
	pid := uuid.MustParse(project["id"].(string))
	for _, who := range []struct{ email, role string }{{"pam@example.com", "project_admin"}, {"dev@example.com", "developer"}} {
		u := b.apiCall("POST", "/api/users", map[string]any{"email": who.email, "password": "correct horse battery"})
		b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": u["id"], "role": who.role, "project_id": project["id"]})
	}
	now := time.Now().UTC()
	if _, err := b.st.InsertPayloadCaptures(t.Context(), []store.PayloadCapture{
		{RequestID: "req_one", CreatedAt: now, ProjectID: pid, Model: "gpt-x", Status: 200, RequestBody: []byte(`{"q":"<hello>"}`), ResponseBody: []byte("data: x\n\n")},
		{RequestID: "req_two", CreatedAt: now, ProjectID: pid, Model: "gpt-x", Status: 200, RequestBody: []byte("{}"), ResponseBody: []byte{}},
	}); err != nil {
		t.Fatal(err)
	}

	pam := b.signedIn("pam@example.com")
	must(t, pam.get("/payloads"), http.StatusOK, "<title>Payload captures · Relay</title>", "core/web")
	must(t, pam.get("/payloads?project_id="+pid.String()), http.StatusOK, "No requests of this project in the last 7 days.", "Delete every capture of this project")
	if a := pam.get("/payloads?request_id=req_one"); a.status != http.StatusSeeOther || a.header.Get("Location") != "/payloads/req_one" {
		t.Fatalf("open by request id: %d %q", a.status, a.header.Get("Location"))
	}
	a := pam.get("/payloads/req_one")
	must(t, a, http.StatusOK, "Capture req_one", `{&#34;q&#34;:&#34;&lt;hello&gt;&#34;}`, "data: x")

	dev := b.signedIn("dev@example.com")
	must(t, dev.get("/payloads/req_one"), http.StatusForbidden)

	must(t, pam.post("/payloads/req_one/delete", url.Values{"csrf": {"forged"}}), http.StatusForbidden, "reload the page")
	must(t, pam.get("/payloads/req_one"), http.StatusOK)
	pam.get("/payloads/req_one")
	if a := pam.post("/payloads/req_one/delete", url.Values{}); a.status != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	must(t, pam.get("/payloads/req_one"), http.StatusNotFound)
	if a := pam.post("/payloads/projects/"+pid.String()+"/delete", url.Values{}); a.status != http.StatusSeeOther {
		t.Fatalf("delete the project's: %d %s", a.status, a.body)
	}
	must(t, pam.get("/payloads/req_two"), http.StatusNotFound)
}

// TestConsole_RequestRoute: the usage explorer lists the range's requests
// with the route each took, and a request's page shows the decision from its
// route_detail (the chosen binding and key slot, the strategy, the affinity
// outcome, every candidate with its score or why it was skipped, and the
// fallbacks left out); an unrouted request says so; the page is found by the
// request id alone (an old address's ?at= is ignored), and an id not in the
// ledger, not of Relay's form or not the viewer's is not found.
func TestConsole_RequestRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "viewer")
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	const routed, refused = "req_7a11c0de7a11c0de7a11c0de7a11c0de", "req_0ff1ce000ff1ce000ff1ce000ff1ce00"
	route := "binding=b/big; slot=1; strategy=cost; affinity=hit; hint=cost=min"
	detail := `{"model":"small","strategy":"cost","strategy_from":"hint","hint":"cost=min","affinity":"key",
	 "session_from":"prompt_cache_key","needs":{"prompt_tokens":100012,"tools":true},
	 "candidates":[
	   {"binding_id":"8a1f1a52-0000-4000-8000-000000000001","host":"a","model":"small","shape":"openai","position":0,"skip":"context window too small","score":0},
	   {"binding_id":"8a1f1a52-0000-4000-8000-000000000002","host":"b","model":"big","upstream_model":"big-2026-upstream","fallback":1,"shape":"openai","position":0,"score":612,"keys":["b2","b1"],"affinity":true,"keys_held":1}],
	 "dropped_fallbacks":[{"model":"other","why":"not granted"}],
	 "chosen":{"binding_id":"8a1f1a52-0000-4000-8000-000000000002","host":"b","model":"big","host_key":"b2","slot":1,"affinity":"hit"}}`
	if _, err := b.st.InsertUsageEvents(t.Context(), []store.UsageEvent{
		{RequestID: routed, CreatedAt: at, Model: "small", Status: 200, InputTokens: 100000, CachedReadTokens: 90000,
			Cost: 25_000_000, Saved: 202_500_000, Route: &route, RouteDetail: []byte(detail)},
		{RequestID: refused, CreatedAt: at.Add(time.Second), Model: "small", Status: 429, ErrorKind: "rate_limited"},
	}); err != nil {
		t.Fatal(err)
	}
	// A page of earlier requests puts these two on the second page.
	var earlier []store.UsageEvent
	for i := range 50 {
		earlier = append(earlier, store.UsageEvent{RequestID: "req_early_" + strconv.Itoa(i), CreatedAt: at.Add(-time.Duration(i+1) * time.Second), Model: "small", Status: 200})
	}
	if _, err := b.st.InsertUsageEvents(t.Context(), earlier); err != nil {
		t.Fatal(err)
	}

	br := b.signedIn("ada@example.com")
	a := br.get("/usage?group_by=host_key")
	must(t, a, http.StatusOK, `<h2 id="requests">Requests</h2>`, "req_early_0", "Next page")
	mustNot(t, a, routed)
	next := regexp.MustCompile(`href="(/usage\?[^"]*cursor=[^"]*)" rel="next"`).FindStringSubmatch(a.body)
	if next == nil {
		t.Fatal("the requests have no next page link")
	}
	a = br.get(html.UnescapeString(next[1]))
	must(t, a, http.StatusOK, `<option value="host_key" selected>`, route, "not routed", "90,000", "0.202500", "First page",
		`href="/usage/requests/`+routed+`"`)
	mustNot(t, a, "req_early_0<")

	a = br.get("/usage/requests/" + routed)
	must(t, a, http.StatusOK, "<title>Request "+routed+" · Relay</title>", route,
		"The request went to b (big) with host key b2 (slot 1, affinity hit).",
		`<div class="label">Strategy</div><div class="value">cost</div>`, `<div class="label">Strategy from</div><div class="value">hint</div>`,
		`<div class="label">Affinity outcome</div><div class="value">hit</div>`, `<div class="label">Session from</div><div class="value">prompt_cache_key</div>`,
		"~100,012 prompt tokens, tools", "skipped: context window too small", "big (fallback 1)", "big-2026-upstream", ">612<", "b2, b1 (session order)",
		"1 held by its breaker", "Fallback models left out", "not granted", `<span class="badge ok">chosen</span>`)
	must(t, br.get("/usage/requests/"+routed, "HX-Request", "true"), http.StatusOK, "Routing decision")
	// An address from before the lookup carries the request's time: ignored,
	// even when it is another time.
	for _, old := range []time.Time{at, at.Add(time.Hour)} {
		must(t, br.get("/usage/requests/"+routed+"?at="+strconv.FormatInt(old.UnixMicro(), 10)), http.StatusOK, "<title>Request "+routed+" · Relay</title>")
	}

	a = br.get("/usage/requests/" + refused)
	must(t, a, http.StatusOK, "429 (rate_limited)", "This request was not routed")
	mustNot(t, a, "Routing decision")

	for _, id := range []string{"req_7a11c0de7a11c0de7a11c0de7a11c0df", "req_routed", "REQ_" + routed[4:]} {
		must(t, br.get("/usage/requests/"+id), http.StatusNotFound, "There is no such request")
	}

	// A project's viewer reads only its project's requests.
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	project := b.apiCall("POST", "/api/projects", map[string]any{"team_id": team["id"], "slug": "web"})
	u := b.apiCall("POST", "/api/users", map[string]any{"email": "pat@example.com", "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": u["id"], "role": "viewer", "project_id": project["id"]})
	must(t, b.signedIn("pat@example.com").get("/usage/requests/"+routed), http.StatusNotFound, "There is no such request")
}
