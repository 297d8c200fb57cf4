package controlapi_test

import (
	"net/http"
	"testing"

	"github.com/relay-llm/relay/openapi/models"
)

// TestMcpTool_WithholdTakesTheApprovalBack: an approved tool, withheld
// (DELETE …/approval), is new again in the tool list, with an audit row; a
// second withhold is 404, and a viewer may not withhold.
func TestMcpTool_WithholdTakesTheApprovalBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	srv := *call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "wh", URL: mockMCPServer(t)})).want(t, http.StatusCreated).JSON201
	tools := call(c.ListMcpServerToolsWithResponse(ctx, srv.ID)).want(t, http.StatusOK).JSON200.Items
	if len(tools) != 1 || tools[0].State != models.McpToolStateNew {
		t.Fatalf("tools: %+v", tools)
	}
	call(c.ApproveMcpToolWithResponse(ctx, srv.ID, "lookup", models.McpToolApprovalCreate{Fingerprint: tools[0].Fingerprint})).want(t, http.StatusOK)
	if got := call(c.ListMcpServerToolsWithResponse(ctx, srv.ID)).want(t, http.StatusOK).JSON200.Items; got[0].State != models.McpToolStateApproved {
		t.Fatalf("after approve: %+v", got)
	}
	viewer := b.newUser("mcpviewer")
	b.grant(viewer.user.ID, models.RoleViewer, nil, nil)
	call(viewer.WithholdMcpToolWithResponse(ctx, srv.ID, "lookup")).wantErr(t, http.StatusForbidden, "forbidden", "")
	if w := call(c.WithholdMcpToolWithResponse(ctx, srv.ID, "lookup")).want(t, http.StatusOK).JSON200; w.Fingerprint != tools[0].Fingerprint || w.Tool != "lookup" {
		t.Fatalf("withheld: %+v", w)
	}
	got := call(c.ListMcpServerToolsWithResponse(ctx, srv.ID)).want(t, http.StatusOK).JSON200.Items
	if got[0].State != models.McpToolStateNew || got[0].ApprovedFingerprint != nil {
		t.Fatalf("after withhold: %+v", got)
	}
	call(c.WithholdMcpToolWithResponse(ctx, srv.ID, "lookup")).wantErr(t, http.StatusNotFound, "not_found", "")
	kind := "mcp_tool_approvals"
	audit := call(c.ListAuditLogWithResponse(ctx, &models.ListAuditLogParams{Kind: &kind})).want(t, http.StatusOK).JSON200.Items
	deleted := 0
	for _, a := range audit {
		if a.Action == "delete" && a.ObjectID == srv.ID.String()+"/lookup" {
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("audit rows of the withhold: %d in %+v", deleted, audit)
	}
}
