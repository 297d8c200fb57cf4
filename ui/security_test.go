package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A console form posted from another origin is refused even with the right
// CSRF token: the browser's Sec-Fetch-Site or Origin is the second line.
func TestConsole_CrossOriginFormsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")
	postWith := func(path string, form url.Values, header ...string) answer {
		t.Helper()
		form.Set("csrf", br.csrf)
		req, _ := http.NewRequest("POST", br.base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		return br.do(req)
	}
	must(t, postWith("/teams", url.Values{"slug": {"evil-origin"}}, "Origin", "https://evil.example"), http.StatusForbidden, "reload the page")
	must(t, postWith("/teams", url.Values{"slug": {"evil-site"}}, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, "reload the page")
	a := postWith("/teams", url.Values{"slug": {"same-origin"}}, "Origin", b.srv.URL, "Sec-Fetch-Site", "same-origin")
	if a.status != http.StatusSeeOther {
		t.Fatalf("a same-origin form: %d %s", a.status, a.body)
	}
	teams := br.get("/teams")
	must(t, teams, http.StatusOK, "same-origin")
	mustNot(t, teams, "evil-origin", "evil-site")

	// The sign-in form too: another site cannot sign a browser in.
	other := b.browser()
	other.get("/sign-in")
	form := url.Values{"email": {"ada@example.com"}, "password": {"correct horse battery"}, "csrf": {other.csrf}, "next": {"/"}}
	req, _ := http.NewRequest("POST", other.base+"/sign-in", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	must(t, other.do(req), http.StatusForbidden)
}

// The sign-in form's `next` goes through the browser's normalisations
// unharmed: a destination another origin would be is replaced by /.
func TestConsole_SignInNextStaysOnTheConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	for _, next := range []string{"/\t/evil.example", `/\evil.example`, `\/evil.example`, "//evil.example", "https://evil.example", "/%2F/evil.example"} {
		br := b.browser()
		br.get("/sign-in?next=" + url.QueryEscape(next))
		a := br.post("/sign-in", url.Values{"email": {"ada@example.com"}, "password": {"correct horse battery"}, "next": {next}})
		if a.status != http.StatusSeeOther || a.header.Get("Location") != "/" {
			t.Errorf("next=%q: %d Location %q", next, a.status, a.header.Get("Location"))
		}
	}
}
