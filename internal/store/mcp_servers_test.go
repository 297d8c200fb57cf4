package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestMCPServers_CRUDAndApprovals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	ref := "env:MCP_TOKEN"
	srv := mk[MCPServer](t)(s.MCPServers().Create(ctx, actor, MCPServer{
		Slug: "github", URL: "https://mcp.example/mcp", Enabled: true, TimeoutMs: 5000,
		AuthHeader: "Authorization", AuthSecretRef: &ref,
	}))
	if got := mk[MCPServer](t)(s.MCPServers().Get(ctx, srv.ID)); got.Slug != "github" || *got.AuthSecretRef != ref {
		t.Fatalf("get = %+v", got)
	}
	if got := mk[MCPServer](t)(s.MCPServers().GetBySlug(ctx, "github")); got.ID != srv.ID {
		t.Fatalf("by slug = %+v", got)
	}
	// A header without a credential breaks the table's check.
	if _, err := s.MCPServers().Modify(ctx, actor, srv.ID, func(r *MCPServer) error { r.AuthSecretRef = nil; return nil }); err == nil {
		t.Fatal("a header without a credential was stored")
	}
	upd := mk[MCPServer](t)(s.MCPServers().Modify(ctx, actor, srv.ID, func(r *MCPServer) error {
		r.Name, r.AuthHeader, r.AuthSecretRef = "GitHub", "", nil
		return nil
	}))
	if upd.Name != "GitHub" || upd.AuthHeader != "" || upd.AuthSecretRef != nil {
		t.Fatalf("update = %+v", upd)
	}
	if rows := mk[[]MCPServer](t)(s.MCPServers().List(ctx, Page{Limit: 10})); len(rows) != 1 {
		t.Fatalf("list: %d rows", len(rows))
	}
	fp1, fp2 := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	mk[MCPToolApproval](t)(s.MCPServers().Approve(ctx, actor, srv.ID, "create_issue", fp1))
	again := mk[MCPToolApproval](t)(s.MCPServers().Approve(ctx, actor, srv.ID, "create_issue", fp2))
	if again.Fingerprint != fp2 || again.ApprovedBy != actor {
		t.Fatalf("re-approval = %+v", again)
	}
	if _, err := s.MCPServers().Approve(ctx, actor, srv.ID, "bad", "not-hex"); err == nil {
		t.Fatal("a malformed fingerprint was stored")
	}
	as := mk[[]MCPToolApproval](t)(s.MCPServers().Approvals(ctx, srv.ID))
	if len(as) != 1 || as[0].Fingerprint != fp2 {
		t.Fatalf("approvals = %+v", as)
	}
	// Withholding deletes the approval (the tool is new again); a tool
	// without one is not found.
	mk[MCPToolApproval](t)(s.MCPServers().Approve(ctx, actor, srv.ID, "list_repos", fp1))
	if w := mk[MCPToolApproval](t)(s.MCPServers().Withhold(ctx, actor, srv.ID, "list_repos")); w.Tool != "list_repos" || w.Fingerprint != fp1 {
		t.Fatalf("withheld = %+v", w)
	}
	if _, err := s.MCPServers().Withhold(ctx, actor, srv.ID, "list_repos"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("withhold twice: %v, want not found", err)
	}
	// The changed-row read carries the approvals with their server.
	cat, _, err := s.ReadChanged(ctx, map[Kind][]uuid.UUID{KindMCPToolApprovals.Owner(): {srv.ID}})
	if err != nil || len(cat.MCPServers) != 1 || len(cat.MCPToolApprovals) != 1 {
		t.Fatalf("read changed: %v %+v", err, cat)
	}
	if err := s.MCPServers().Delete(ctx, actor, srv.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MCPServers().Get(ctx, srv.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if as := mk[[]MCPToolApproval](t)(s.MCPServers().Approvals(ctx, srv.ID)); len(as) != 0 {
		t.Fatalf("approvals outlived their server: %+v", as)
	}
}

// OAuth client credentials and per-tool prices (migrations 00028, 00029)
// round-trip, and the table holds a server to one credential: OAuth
// without a static header, a client id and exactly one client secret.
func TestMCPServers_OAuthAndToolPrices(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	ref := "env:MCP_CLIENT_SECRET"
	srv := mk[MCPServer](t)(s.MCPServers().Create(ctx, actor, MCPServer{
		Slug: "linear", URL: "https://mcp.example/mcp", Enabled: true, TimeoutMs: 5000,
		OAuthTokenURL: "https://auth.example/token", OAuthClientID: "relay", OAuthClientSecretRef: &ref,
		OAuthScopes: []string{"read", "write"}, OAuthAudience: "https://mcp.example",
		ToolPrices: []byte(`{"search_*": 1500}`),
	}))
	got := mk[MCPServer](t)(s.MCPServers().Get(ctx, srv.ID))
	if got.OAuthTokenURL != "https://auth.example/token" || got.OAuthClientID != "relay" || *got.OAuthClientSecretRef != ref ||
		strings.Join(got.OAuthScopes, " ") != "read write" || got.OAuthAudience != "https://mcp.example" ||
		got.OAuthAuthMethod != "client_secret_basic" || string(got.ToolPrices) != `{"search_*": 1500}` {
		t.Fatalf("get = %+v", got)
	}
	for name, f := range map[string]func(r *MCPServer){
		"a header beside OAuth": func(r *MCPServer) { r.AuthHeader, r.AuthSecretRef = "Authorization", &ref },
		"no client secret":      func(r *MCPServer) { r.OAuthClientSecretRef = nil },
		"two client secrets":    func(r *MCPServer) { r.OAuthClientSecretCiphertext = []byte{1} },
		"no client id":          func(r *MCPServer) { r.OAuthClientID = "" },
		"an unknown method":     func(r *MCPServer) { r.OAuthAuthMethod = "private_key_jwt" },
		"a price list":          func(r *MCPServer) { r.ToolPrices = []byte(`[1]`) },
	} {
		if _, err := s.MCPServers().Modify(ctx, actor, srv.ID, func(r *MCPServer) error { f(r); return nil }); err == nil {
			t.Fatalf("%s was stored", name)
		}
	}
	// Taking OAuth off clears every field of it.
	upd := mk[MCPServer](t)(s.MCPServers().Modify(ctx, actor, srv.ID, func(r *MCPServer) error {
		r.OAuthTokenURL, r.OAuthClientID, r.OAuthClientSecretRef, r.OAuthScopes, r.OAuthAudience = "", "", nil, nil, ""
		r.OAuthAuthMethod, r.ToolPrices = "client_secret_post", nil
		return nil
	}))
	if upd.OAuthTokenURL != "" || upd.OAuthClientSecretRef != nil || len(upd.OAuthScopes) != 0 || string(upd.ToolPrices) != "{}" {
		t.Fatalf("update = %+v", upd)
	}
}
