package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsole_PayloadsOffersDeleteOnlyWhereAllowed: a project admin of one
// project is offered "Delete every capture" for that project, not for
// another project of the team (the API would refuse it).
func TestConsole_PayloadsOffersDeleteOnlyWhereAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	mine := b.apiCall("POST", "/api/projects", map[string]any{"team_id": team["id"], "slug": "web"})
	other := b.apiCall("POST", "/api/projects", map[string]any{"team_id": team["id"], "slug": "batch"})
	u := b.apiCall("POST", "/api/users", map[string]any{"email": "pam@example.com", "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": u["id"], "role": "project_admin", "project_id": mine["id"]})
	v := b.apiCall("POST", "/api/users", map[string]any{"email": "tess@example.com", "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": v["id"], "role": "viewer", "team_id": team["id"]})

	pam := b.signedIn("pam@example.com")
	must(t, pam.get("/payloads?project_id="+mine["id"].(string)), http.StatusOK, "Delete every capture of this project")
	mustNot(t, pam.get("/payloads?project_id="+other["id"].(string)), "Delete every capture of this project")
	tess := b.signedIn("tess@example.com")
	mustNot(t, tess.get("/payloads?project_id="+mine["id"].(string)), "Delete every capture of this project")
}

// TestConsole_NamesAreIsolatedAndWrap: a name with a right-to-left
// override or zero-width characters is rendered in an isolate (dir=auto,
// unicode-bidi: isolate) so it cannot reorder the text around it, and a
// long unbroken name wraps (overflow-wrap: anywhere).
func TestConsole_NamesAreIsolatedAndWrap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	const evil = "\u202egnp.exe\u200b\u2066x"
	long := strings.Repeat("W", 200)
	b.apiCall("POST", "/api/teams", map[string]any{"slug": "rtl", "name": evil})
	b.apiCall("POST", "/api/teams", map[string]any{"slug": "long", "name": long})
	ada := b.signedIn("ada@example.com")
	must(t, ada.get("/teams"), http.StatusOK, `<bdi dir="auto">`+evil+`</bdi>`, `<bdi dir="auto">`+long+`</bdi>`)
	must(t, ada.get("/static/console.css"), http.StatusOK, "unicode-bidi: isolate", "overflow-wrap: anywhere")
}

// TestConsole_HostKeyFormRefusesRelaysOwnSetting: the console's host key
// form keeps the API's rule, with the message at the secret_ref field; the
// host form likewise for a base URL at a metadata address.
func TestConsole_HostKeyFormRefusesRelaysOwnSetting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	host := b.apiCall("POST", "/api/hosts", map[string]any{"slug": "echo", "provider": "openai", "base_url": "https://echo.example.com"})
	ada := b.signedIn("ada@example.com")
	a := ada.post("/host-keys", url.Values{"host_id": {host["id"].(string)}, "slug": {"stolen"}, "secret_ref": {"env:RELAY_MASTER_KEY"}, "enabled": {"on"}})
	must(t, a, http.StatusUnprocessableEntity, "one of Relay&#39;s own settings")
	a = ada.post("/hosts", url.Values{"slug": {"meta"}, "provider": {"custom"}, "base_url": {"http://169.254.169.254/latest"}})
	must(t, a, http.StatusUnprocessableEntity, "metadata address")
}
