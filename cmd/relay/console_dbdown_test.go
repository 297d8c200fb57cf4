package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/secret"
)

// TestConsole_PostgresDownIsAPage: with Postgres cut, a signed-in console
// page is the API's database_unavailable state as an HTML page — 503 with
// Retry-After — not a 500 text/plain "internal error".
func TestConsole_PostgresDownIsAPage(t *testing.T) {
	const email, password = "down@example.com", "correct horse battery"
	db := pgtest.NewDB(t)
	u, _ := url.Parse(db)
	pg := newTCPProxy(t, u.Host)
	p := startRelay(t, throughProxy(t, db, pg), false, "RELAY_MASTER_KEY="+secret.NewKey(),
		"RELAY_ADMIN_EMAIL="+email, "RELAY_ADMIN_PASSWORD="+password, "RELAY_SHUTDOWN_TIMEOUT=2s")
	waitReady(t, p.control)

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Post(p.control+"/api/auth/login", "application/json",
		strings.NewReader(`{"email":"`+email+`","password":"`+password+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login = %d", resp.StatusCode)
	}
	get := func() (int, http.Header, string) {
		resp, err := c.Get(p.control + "/teams")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	if code, _, _ := get(); code != http.StatusOK {
		t.Fatalf("teams page with Postgres up = %d", code)
	}

	pg.Cut()
	var (
		code int
		hdr  http.Header
		body string
	)
	poll.Until(t, 20*time.Second, "the console answers 503 with Postgres down", func() bool {
		code, hdr, body = get()
		return code != http.StatusOK
	})
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, "The database is unavailable") || !strings.Contains(strings.ToLower(body), "<!doctype html>") {
		t.Fatalf("teams page with Postgres down = %d, Retry-After %q, %s:\n%s", code, hdr.Get("Retry-After"), hdr.Get("Content-Type"), body)
	}
}
