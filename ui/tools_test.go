package ui_test

import (
	"net/http"
	"net/url"
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
	model := b.apiCall("POST", "/api/models", map[string]any{"name": "gpt-x"})
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
	must(t, a, http.StatusOK, "A request would go to up as gpt-x-2026 with host key primary", "taken first", "skipped: host disabled",
		"the relay key&#39;s own policy", "open")
	mustNot(t, a, "sk-upstream-secret-value")

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
