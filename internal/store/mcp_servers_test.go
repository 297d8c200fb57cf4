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
