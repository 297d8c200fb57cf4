package ui_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/bridge"
	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/loader"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/ui"
)

const adminToken = "test-admin-token-0123456789"

// bundle is a control plane as `relay serve` mounts it — the API at /api/
// and the console at / — over a database of its own.
type bundle struct {
	t    testing.TB
	st   *store.Store
	srv  *httptest.Server
	snap *loader.Loader // the snapshot the routing explain reads; reload after changes
}

// setup builds the bundle; with, if given, adds to the control API's config.
func setup(t testing.TB, with ...func(*controlapi.Config)) *bundle {
	t.Helper()
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	box, err := secret.NewBox(bytes.Repeat([]byte{7}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	snap := loader.New(st, box, slog.New(slog.DiscardHandler), loader.Options{})
	cfg := controlapi.Config{Store: st, Box: box, AdminToken: adminToken, Snapshot: snap, Explain: bridge.Explainer(nil, nil)}
	for _, w := range with {
		w(&cfg)
	}
	api, err := controlapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.Handle("/", ui.New(api.(*controlapi.Server), nil))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &bundle{t: t, st: st, srv: srv, snap: snap}
}

// apiCall is one admin-bearer call to the control API; it returns the
// decoded JSON answer.
func (b *bundle) apiCall(method, path string, body any) map[string]any {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		buf, _ := json.Marshal(body)
		rd = bytes.NewReader(buf)
	}
	req, _ := http.NewRequest(method, b.srv.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode >= 300 {
		b.t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, out)
	}
	return out
}

// user creates a user with a password and a system-wide role.
func (b *bundle) user(email, role string) {
	b.t.Helper()
	u := b.apiCall("POST", "/api/users", map[string]any{"email": email, "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": u["id"], "role": role})
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t    testing.TB
	base string
	c    *http.Client
	csrf string
}

func (b *bundle) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: b.t, base: b.srv.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	status int
	header http.Header
	body   string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (br *browser) do(req *http.Request) answer {
	br.t.Helper()
	resp, err := br.c.Do(req)
	if err != nil {
		br.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindSubmatch(body); m != nil {
		br.csrf = string(m[1])
	}
	return answer{resp.StatusCode, resp.Header, string(body)}
}

func (br *browser) get(path string, header ...string) answer {
	br.t.Helper()
	req, _ := http.NewRequest("GET", br.base+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return br.do(req)
}

// post sends a form with the page's CSRF token (unless the form sets csrf).
func (br *browser) post(path string, form url.Values) answer {
	br.t.Helper()
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", br.csrf)
	}
	req, _ := http.NewRequest("POST", br.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return br.do(req)
}

func (b *bundle) signedIn(email string) *browser {
	b.t.Helper()
	br := b.browser()
	br.get("/sign-in")
	a := br.post("/sign-in", url.Values{"email": {email}, "password": {"correct horse battery"}, "next": {"/"}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/" {
		b.t.Fatalf("sign in: %d %s", a.status, a.body)
	}
	br.get("/")
	return br
}

func must(t *testing.T, a answer, status int, contains ...string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d; body:\n%s", a.status, status, a.body)
	}
	for _, c := range contains {
		if !strings.Contains(a.body, c) {
			t.Fatalf("the page lacks %q; body:\n%s", c, a.body)
		}
	}
}

func mustNot(t *testing.T, a answer, absent ...string) {
	t.Helper()
	for _, c := range absent {
		if strings.Contains(a.body, c) {
			t.Fatalf("the page has %q; body:\n%s", c, a.body)
		}
	}
}

func TestConsole_SignInGuardsEveryPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser()
	a := br.get("/hosts")
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/sign-in?next=%2Fhosts" {
		t.Fatalf("GET /hosts signed out: %d %q", a.status, a.header.Get("Location"))
	}
	// An htmx request is redirected by a header htmx follows.
	a = br.get("/", "HX-Request", "true")
	if a.status != http.StatusNoContent || !strings.Contains(a.header.Get("HX-Location"), "/sign-in") {
		t.Fatalf("htmx GET / signed out: %d %v", a.status, a.header)
	}
	must(t, br.get("/sign-in"), http.StatusOK, "Sign in to Relay", `name="csrf"`)
	// The browser's own requests neither redirect nor disturb an open sign-in form.
	if a := br.get("/favicon.ico"); a.status != http.StatusNotFound {
		t.Fatalf("GET /favicon.ico signed out: %d", a.status)
	}
	// The API keeps answering JSON at /api.
	a = br.get("/api/auth/whoami")
	if a.status != http.StatusUnauthorized || !strings.Contains(a.header.Get("Content-Type"), "json") {
		t.Fatalf("/api/auth/whoami: %d %s", a.status, a.header.Get("Content-Type"))
	}
}

func TestConsole_SignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")

	br := b.browser()
	br.get("/sign-in")
	a := br.post("/sign-in", url.Values{"email": {"ada@example.com"}, "password": {"wrong password"}})
	must(t, a, http.StatusUnauthorized, "wrong email or password", `value="ada@example.com"`)
	mustNot(t, a, "wrong password\"")

	// A sign-in form from elsewhere (no matching token cookie) is refused.
	other := b.browser()
	a = other.post("/sign-in", url.Values{"email": {"ada@example.com"}, "password": {"correct horse battery"}, "csrf": {"forged"}})
	must(t, a, http.StatusForbidden, "expired")

	// Two sign-in forms open in one browser both work.
	two := b.browser()
	two.get("/sign-in")
	first := two.csrf
	two.get("/sign-in")
	if two.csrf != first {
		t.Fatal("opening the sign-in page again changed the token of the form already open")
	}

	br = b.signedIn("ada@example.com")
	a = br.get("/")
	must(t, a, http.StatusOK, "Overview", "ada@example.com", "Sign out")

	// An open redirect is not followed.
	br2 := b.browser()
	br2.get("/sign-in")
	a = br2.post("/sign-in", url.Values{"email": {"ada@example.com"}, "password": {"correct horse battery"}, "next": {"//evil.example/"}})
	if a.header.Get("Location") != "/" {
		t.Fatalf("next=//evil: Location %q", a.header.Get("Location"))
	}

	a = br.post("/sign-out", url.Values{})
	if a.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", a.status)
	}
	if a := br.get("/"); a.status != http.StatusSeeOther {
		t.Fatalf("after sign out GET / is %d", a.status)
	}
}

func TestConsole_EveryPageFullAndFragment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")
	pages := map[string]string{
		"/": "Overview", "/usage": "Usage", "/breakers": "Breakers", "/password": "Change password",
		"/hosts": "Hosts", "/models": "Models", "/bindings": "Bindings", "/host-keys": "Host keys", "/rate-limits": "Rate limits",
		"/policies": "Policies", "/teams": "Teams", "/projects": "Projects", "/service-accounts": "Service accounts",
		"/relay-keys": "Relay keys", "/policy-bindings": "Policy bindings", "/budgets": "Budgets", "/users": "Users",
		"/groups": "Groups", "/role-bindings": "Role bindings", "/mcp-servers": "MCP servers", "/mcp-servers/new": "New MCP server",
		"/objects":   "Files and batches",
		"/hosts/new": "New host", "/models/new": "New model", "/bindings/new": "New binding", "/host-keys/new": "New host key",
		"/policies/new": "New policy", "/teams/new": "New team", "/projects/new": "New project",
		"/service-accounts/new": "New service account", "/relay-keys/new": "New relay key",
		"/rate-limits/new": "New rate limit", "/budgets/new": "New budget", "/policy-bindings/new": "New policy binding",
		"/users/new": "New user", "/groups/new": "New group", "/role-bindings/new": "New role binding", "/audit": "Audit log",
	}
	nonce := regexp.MustCompile(`script-src 'nonce-([^']+)'`)
	for path, title := range pages {
		a := br.get(path)
		must(t, a, http.StatusOK, "<!doctype html>", "<title>"+title+" · Relay</title>", `<main id="main">`)
		m := nonce.FindStringSubmatch(a.header.Get("Content-Security-Policy"))
		if m == nil {
			t.Fatalf("%s: CSP %q has no nonce", path, a.header.Get("Content-Security-Policy"))
		}
		if n := strings.Count(a.body, "<script"); n != strings.Count(a.body, `nonce="`+m[1]+`"`) || n == 0 {
			t.Fatalf("%s: %d scripts, not all with the response's nonce", path, n)
		}
		f := br.get(path, "HX-Request", "true")
		must(t, f, http.StatusOK, "<title>"+title+" · Relay</title>")
		mustNot(t, f, "<html", "<nav")
	}
	if a := br.get("/hosts/00000000-0000-0000-0000-000000000001"); a.status != http.StatusNotFound {
		t.Fatalf("editing a missing host: %d", a.status)
	}
	must(t, br.get("/no-such-page"), http.StatusNotFound, "Not found", "<nav")
}

func TestConsole_CreateWithValidationInPlace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")
	br.get("/hosts/new")

	a := br.post("/hosts", url.Values{"slug": {"Not A Slug"}, "provider": {"openai"}, "base_url": {"https://api.example.com/v1"}, "enabled": {"on"}})
	must(t, a, http.StatusBadRequest, `class="field invalid"`, "Check the fields marked below", `value="Not A Slug"`, `value="https://api.example.com/v1"`)

	a = br.post("/hosts", url.Values{"slug": {"upstream-a"}, "name": {"Upstream A"}, "provider": {"openai"}, "base_url": {"https://api.example.com/v1"}, "enabled": {"on"}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/hosts" {
		t.Fatalf("create host: %d %s", a.status, a.body)
	}
	must(t, br.get("/hosts"), http.StatusOK, "upstream-a", "Upstream A", "https://api.example.com/v1")

	// A taken slug is a message on the slug field.
	a = br.post("/hosts", url.Values{"slug": {"upstream-a"}, "provider": {"openai"}, "base_url": {"https://api.example.com/v1"}})
	must(t, a, http.StatusConflict, "a host with this slug exists", `class="field invalid"`)

	// An htmx form post that works answers with HX-Location.
	req, _ := http.NewRequest("POST", br.base+"/teams", strings.NewReader(url.Values{"slug": {"core"}, "csrf": {br.csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	a = br.do(req)
	if a.status != http.StatusNoContent || !strings.Contains(a.header.Get("HX-Location"), "/teams") {
		t.Fatalf("htmx create team: %d %v", a.status, a.header)
	}
	must(t, br.get("/teams"), http.StatusOK, "core")
}

func TestConsole_CSRFRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")
	for _, token := range []string{"", "not-the-token"} {
		a := br.post("/teams", url.Values{"slug": {"sneaky"}, "csrf": {token}})
		must(t, a, http.StatusForbidden, "reload the page")
	}
	mustNot(t, br.get("/teams"), "sneaky")
}

func TestConsole_ViewerIsNotOfferedWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("vic@example.com", "viewer")
	b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	br := b.signedIn("vic@example.com")

	a := br.get("/teams")
	must(t, a, http.StatusOK, "core")
	mustNot(t, a, "New team", "Delete", "Edit")
	must(t, br.get("/teams/new"), http.StatusForbidden, "Not allowed")

	// Forcing the form through is refused by the API's RBAC.
	a = br.post("/teams", url.Values{"slug": {"forced"}})
	must(t, a, http.StatusForbidden)
	mustNot(t, br.get("/teams"), "forced")
}

func TestConsole_RelayKeyShownOnceAndRevoked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	project := b.apiCall("POST", "/api/projects", map[string]any{"slug": "web", "team_id": team["id"]})
	br := b.signedIn("ada@example.com")
	br.get("/relay-keys/new")

	a := br.post("/relay-keys", url.Values{"name": {"ci-nightly"}, "project_id": {project["id"].(string)}})
	must(t, a, http.StatusCreated, "Relay key created", "data-copy", "will not show it again")
	secret := regexp.MustCompile(`value="(sk-wr-[^"]+)"`).FindStringSubmatch(a.body)
	if secret == nil {
		t.Fatalf("no key on the page:\n%s", a.body)
	}
	if a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the minted key's page may be cached: %q", a.header.Get("Cache-Control"))
	}
	list := br.get("/relay-keys")
	must(t, list, http.StatusOK, "ci-nightly", "active", "Revoke")
	mustNot(t, list, secret[1])

	id := regexp.MustCompile(`/relay-keys/([0-9a-f-]{36})/revoke`).FindStringSubmatch(list.body)[1]
	a = br.post("/relay-keys/"+id+"/rotate", url.Values{})
	must(t, a, http.StatusCreated, "data-copy")
	rotated := regexp.MustCompile(`value="(sk-wr-[^"]+)"`).FindStringSubmatch(a.body)
	if rotated == nil || rotated[1] == secret[1] {
		t.Fatalf("rotate showed %v (the old key was %s)", rotated, secret[1])
	}
	list = br.get("/relay-keys")
	mustNot(t, list, rotated[1], secret[1])
	a = br.post("/relay-keys/"+id+"/revoke", url.Values{})
	if a.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", a.status, a.body)
	}
	list = br.get("/relay-keys")
	must(t, list, http.StatusOK, "revoked")
	if n := strings.Count(list.body, "/revoke"); n != 1 {
		t.Fatalf("%d revoke buttons after revoking one of two keys", n)
	}
}

func TestConsole_HostKeySecretIsWriteOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	host := b.apiCall("POST", "/api/hosts", map[string]any{"slug": "up", "provider": "openai", "base_url": "https://api.example.com/v1"})
	br := b.signedIn("ada@example.com")
	br.get("/host-keys/new")
	const value = "sk-live-0123456789-very-secret"
	a := br.post("/host-keys", url.Values{"host_id": {host["id"].(string)}, "slug": {"main"}, "secret": {value}, "enabled": {"on"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("create host key: %d %s", a.status, a.body)
	}
	list := br.get("/host-keys")
	must(t, list, http.StatusOK, "main", "sealed")
	mustNot(t, list, value)
	id := regexp.MustCompile(`/host-keys/([0-9a-f-]{36})/delete`).FindStringSubmatch(list.body)[1]
	edit := br.get("/host-keys/" + id)
	must(t, edit, http.StatusOK, `type="password"`, "leave empty to keep")
	mustNot(t, edit, value)
	// This control plane has no tester wired: the API's 501 comes through as a page.
	test := br.post("/host-keys/"+id+"/test", url.Values{})
	must(t, test, http.StatusNotImplemented)
	mustNot(t, test, value)

	// A form that fails keeps every field but the secret.
	a = br.post("/host-keys", url.Values{"host_id": {host["id"].(string)}, "slug": {"main"}, "secret": {value}})
	must(t, a, http.StatusConflict, "the host has a key with this slug")
	mustNot(t, a, value)
}

func TestConsole_PolicyGrantsAsChecklists(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	m1 := b.apiCall("POST", "/api/models", map[string]any{"name": "gpt-a"})
	m2 := b.apiCall("POST", "/api/models", map[string]any{"name": "gpt-b"})
	br := b.signedIn("ada@example.com")
	br.get("/policies/new")
	a := br.post("/policies", url.Values{"slug": {"default"}, "models": {m1["id"].(string)}, "max_wait_ms": {"500"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("create policy: %d %s", a.status, a.body)
	}
	list := br.get("/policies")
	id := regexp.MustCompile(`/policies/([0-9a-f-]{36})/delete`).FindStringSubmatch(list.body)[1]
	grants := b.apiCall("GET", "/api/policies/"+id+"/models", nil)["items"].([]any)
	if len(grants) != 1 || grants[0].(map[string]any)["model_id"] != m1["id"] {
		t.Fatalf("grants after create: %v", grants)
	}
	edit := br.get("/policies/" + id)
	must(t, edit, http.StatusOK, `value="`+m1["id"].(string)+`" checked`)
	// Swap the grant: gpt-a out, gpt-b in.
	a = br.post("/policies/"+id, url.Values{"slug": {"default"}, "models": {m2["id"].(string)}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("update policy: %d %s", a.status, a.body)
	}
	grants = b.apiCall("GET", "/api/policies/"+id+"/models", nil)["items"].([]any)
	if len(grants) != 1 || grants[0].(map[string]any)["model_id"] != m2["id"] {
		t.Fatalf("grants after edit: %v", grants)
	}
}

func TestConsole_ChangePassword(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")
	br.get("/password")
	a := br.post("/password", url.Values{"current": {"nope nope"}, "password": {"a brand new one"}, "confirm": {"a brand new one"}})
	must(t, a, http.StatusUnprocessableEntity, "this is not your current password")
	a = br.post("/password", url.Values{"current": {"correct horse battery"}, "password": {"a brand new one"}, "confirm": {"another"}})
	must(t, a, http.StatusUnprocessableEntity, "the two new passwords differ")
	a = br.post("/password", url.Values{"current": {"correct horse battery"}, "password": {"a brand new one"}, "confirm": {"a brand new one"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("change password: %d %s", a.status, a.body)
	}
	// Still signed in here, on the new session; the old password is gone.
	must(t, br.get("/"), http.StatusOK, "Overview")
	other := b.browser()
	other.get("/sign-in")
	must(t, other.post("/sign-in", url.Values{"email": {"ada@example.com"}, "password": {"correct horse battery"}}), http.StatusUnauthorized)
}

func TestConsole_StaticAssetsArePinned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := b.browser()
	vendor, err := os.ReadFile("static/VENDOR")
	if err != nil {
		t.Fatal(err)
	}
	a := br.get("/static/htmx.min.js")
	sum := sha256.Sum256([]byte(a.body))
	if a.status != http.StatusOK || !strings.Contains(string(vendor), hex.EncodeToString(sum[:])) {
		t.Fatalf("htmx.min.js: %d, sha256 %x not in VENDOR", a.status, sum)
	}
	must(t, br.get("/static/console.css"), http.StatusOK, "prefers-color-scheme: dark")
}

func TestConsole_SearchIsServerSideAndPaged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	b.apiCall("POST", "/api/hosts", map[string]any{"slug": "alpha-east", "provider": "openai", "base_url": "https://a.example.com/v1"})
	b.apiCall("POST", "/api/hosts", map[string]any{"slug": "beta-west", "name": "100% beta", "provider": "openai", "base_url": "https://b.example.com/v1"})
	for i := range 55 {
		b.apiCall("POST", "/api/teams", map[string]any{"slug": "team-" + strconv.Itoa(i)})
	}
	b.apiCall("POST", "/api/teams", map[string]any{"slug": "other"})
	br := b.signedIn("ada@example.com")

	a := br.get("/hosts?q=ALPHA")
	must(t, a, http.StatusOK, "alpha-east", `value="ALPHA"`)
	mustNot(t, a, "beta-west")
	// LIKE wildcards in the term are literal.
	a = br.get("/hosts?q=" + url.QueryEscape("0%"))
	must(t, a, http.StatusOK, "beta-west")
	mustNot(t, a, "alpha-east")
	must(t, br.get("/hosts?q=_"), http.StatusOK, "Nothing matches")

	// A search pages with the keyset cursor and keeps the term.
	a = br.get("/teams?q=team-")
	next := regexp.MustCompile(`href="(/teams\?cursor=[^"]+&amp;q=team-)"`).FindStringSubmatch(a.body)
	if next == nil || strings.Count(a.body, ">team-") != 50 {
		t.Fatalf("first page: %d teams, next %v", strings.Count(a.body, ">team-"), next)
	}
	a = br.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	must(t, a, http.StatusOK, "First page")
	mustNot(t, a, ">other<", "Next page")
	if n := strings.Count(a.body, ">team-"); n != 5 {
		t.Fatalf("second page has %d teams, want 5", n)
	}
}

func TestConsole_SearchKeepsReach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	mine := b.apiCall("POST", "/api/projects", map[string]any{"slug": "mine", "team_id": team["id"]})
	theirs := b.apiCall("POST", "/api/projects", map[string]any{"slug": "theirs", "team_id": team["id"]})
	u := b.apiCall("POST", "/api/users", map[string]any{"email": "dev@example.com", "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": u["id"], "role": "developer", "project_id": mine["id"]})
	b.apiCall("POST", "/api/relay-keys", map[string]any{"name": "shared-name-mine", "project_id": mine["id"], "user_id": u["id"]})
	admin := b.apiCall("POST", "/api/users", map[string]any{"email": "root@example.com"})
	// A user's relay key is for a user with a role in the project.
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": admin["id"], "role": "developer", "project_id": theirs["id"]})
	b.apiCall("POST", "/api/relay-keys", map[string]any{"name": "shared-name-theirs", "project_id": theirs["id"], "user_id": admin["id"]})
	br := b.signedIn("dev@example.com")
	// A project developer gets the overview of what it may read, without the pod's breakers.
	a := br.get("/")
	must(t, a, http.StatusOK, "Overview", "Top models")
	mustNot(t, a, "Breakers holding")
	a = br.get("/relay-keys?q=shared-name")
	must(t, a, http.StatusOK, "shared-name-mine")
	mustNot(t, a, "shared-name-theirs")
}
