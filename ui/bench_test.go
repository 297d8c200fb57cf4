package ui_test

import (
	"io"
	"net/http"
	"regexp"
	"testing"
)

// BenchmarkRelayKeysPage renders the relay keys list with 100,000 relay keys
// in the database, server side (session check, the API's list or search
// method, the names of projects and service accounts, the templ render): the
// first page, the next one, and two searches.
func BenchmarkRelayKeysPage(b *testing.B) {
	bd := setup(b)
	bd.user("ada@example.com", "admin")
	team := bd.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	project := bd.apiCall("POST", "/api/projects", map[string]any{"slug": "web", "team_id": team["id"]})
	sa := bd.apiCall("POST", "/api/service-accounts", map[string]any{"slug": "bot", "project_id": project["id"]})
	_, err := bd.st.Pool().Exec(b.Context(), `
		INSERT INTO relay_keys (key_hash, display_prefix, name, project_id, service_account_id)
		SELECT sha256(i::text::bytea), 'sk-wr-' || substr(md5(i::text), 1, 6), 'key-' || i, $1, $2
		FROM generate_series(1, 100000) AS i`, project["id"], sa["id"])
	if err != nil {
		b.Fatal(err)
	}
	if _, err := bd.st.Pool().Exec(b.Context(), `ANALYZE relay_keys`); err != nil {
		b.Fatal(err)
	}
	br := bd.signedIn("ada@example.com")
	first := br.get("/relay-keys")
	next := regexp.MustCompile(`href="(/relay-keys\?cursor=[^"]+)"`).FindStringSubmatch(first.body)
	if first.status != http.StatusOK || next == nil {
		b.Fatalf("relay keys page: %d, next link %v", first.status, next)
	}
	pages := []struct{ name, path string }{
		{"first", "/relay-keys"},
		{"next", next[1]},
		{"search-rare", "/relay-keys?q=key-99999"}, // one match, near the end of the keyset
		{"search-common", "/relay-keys?q=key-1"},   // a full page of matches early on
	}
	for _, pg := range pages {
		path := pg.path
		b.Run(pg.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				resp, err := br.c.Get(br.base + path)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				n = len(body)
			}
			b.ReportMetric(float64(n), "html-bytes")
		})
	}
}

// BenchmarkFirstVisitBytes measures what a first visit downloads: the
// sign-in page and its assets, then the overview and nothing new (the
// assets are the same files).
func BenchmarkFirstVisitBytes(b *testing.B) {
	bd := setup(b)
	bd.user("ada@example.com", "admin")
	br := bd.signedIn("ada@example.com")
	anon := bd.browser()
	for b.Loop() {
		total, html := 0, 0
		for _, path := range []string{"/sign-in", "/static/console.css", "/static/htmx.min.js", "/static/console.js"} {
			a := anon.get(path)
			total += len(a.body)
			if path == "/sign-in" {
				html = len(a.body)
			}
		}
		overview := br.get("/")
		b.ReportMetric(float64(total), "first-visit-bytes")
		b.ReportMetric(float64(html), "sign-in-html-bytes")
		b.ReportMetric(float64(len(overview.body)), "overview-html-bytes")
	}
}
