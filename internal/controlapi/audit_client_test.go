package controlapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/server"
	"github.com/relay-llm/relay/openapi/models"
)

// TestAudit_RecordsTheClientAddress: every audit row names where its write
// came from — the TCP peer, or, from a trusted proxy, the first untrusted hop
// of X-Forwarded-For (server.Forwarded, the rule RELAY_TRUSTED_PROXIES sets
// for the console); a peer that is not trusted cannot choose the address.
// The API lists it, and the writes of an apply carry the apply's.
func TestAudit_RecordsTheClientAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h, err := controlapi.New(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	behind := httptest.NewServer(server.Forwarded(trusted, h))
	t.Cleanup(behind.Close)
	direct := httptest.NewServer(server.Forwarded(nil, h))
	t.Cleanup(direct.Close)

	create := func(url, slug, xff string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(b.ctx, http.MethodPost, url+"/api/teams", strings.NewReader(`{"slug":"`+slug+`"}`))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create team %s: %d", slug, resp.StatusCode)
		}
	}
	create(behind.URL, "via-proxy", "198.51.100.9, 203.0.113.7, 10.0.0.2")
	create(direct.URL, "spoofed", "203.0.113.66")
	create(direct.URL, "direct", "")
	apply := models.ApplyRequest{Files: []models.ApplyFile{{Name: "a.yaml", Content: "kind: Team\nspec: {slug: applied}\n"}}}
	call(b.admin.ApplyConfigWithResponse(b.ctx, apply)).want(t, http.StatusOK)

	want := map[string]string{"via-proxy": "203.0.113.7", "spoofed": "127.0.0.1", "direct": "127.0.0.1", "applied": "127.0.0.1"}
	teams := call(b.admin.ListTeamsWithResponse(b.ctx, nil)).want(t, http.StatusOK).JSON200.Items
	kind := "teams"
	rows := call(b.admin.ListAuditLogWithResponse(b.ctx, &models.ListAuditLogParams{Kind: &kind})).want(t, http.StatusOK).JSON200.Items
	for _, team := range teams {
		found := false
		for _, r := range rows {
			if r.ObjectID != team.ID.String() {
				continue
			}
			found = true
			if r.ClientAddr == nil || *r.ClientAddr != want[team.Slug] {
				t.Errorf("audit row of team %s: client_addr %v, want %s", team.Slug, r.ClientAddr, want[team.Slug])
			}
		}
		if !found {
			t.Errorf("no audit row for team %s", team.Slug)
		}
	}
}
