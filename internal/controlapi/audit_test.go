package controlapi_test

import (
	"net/http"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/controlapi"
)

// TestAudit_ListPagedAndFiltered: a system viewer pages through the audit
// log filtered by kind and by actor; a project viewer, who may read rows of
// one project only, gets 403; a cursor the API did not return is a 400.
func TestAudit_ListPagedAndFiltered(t *testing.T) {
	b := setup(t)
	ctx := b.ctx
	var teams []string
	var first models.Team
	for _, slug := range []string{"audit-a", "audit-b", "audit-c"} {
		team := call(b.admin.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: slug})).want(t, http.StatusCreated).JSON201
		teams = append(teams, team.ID.String())
		if first.Slug == "" {
			first = *team
		}
	}
	project := call(b.admin.CreateProjectWithResponse(ctx, models.ProjectCreate{TeamID: first.ID, Slug: "audit-p"})).want(t, http.StatusCreated).JSON201

	reader := b.newUser("auditreader")
	b.grant(reader.user.ID, models.RoleViewer, nil, nil)
	pviewer := b.newUser("auditpviewer")
	b.grant(pviewer.user.ID, models.RoleViewer, nil, &project.ID)

	kind, limit := "teams", int32(2)
	var got []string
	var cursor *string
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("the pages do not end")
		}
		l := call(reader.ListAuditLogWithResponse(ctx, &models.ListAuditLogParams{Kind: &kind, Limit: &limit, Cursor: cursor})).want(t, http.StatusOK).JSON200
		for _, e := range l.Items {
			if e.Kind != "teams" || e.Action != models.AuditEntryActionCreate || e.Actor != controlapi.AdminTokenActor(adminToken) || e.At.IsZero() {
				t.Errorf("row %+v", e)
			}
			got = append(got, e.ObjectID)
		}
		if l.NextCursor == nil {
			break
		}
		cursor = l.NextCursor
	}
	if len(got) != 3 || got[0] != teams[0] || got[1] != teams[1] || got[2] != teams[2] {
		t.Errorf("team rows %v, want %v oldest first", got, teams)
	}

	// The sign-ins of the two users are theirs; the reader sees its own by actor.
	actor := "user:" + reader.user.ID.String()
	l := call(reader.ListAuditLogWithResponse(ctx, &models.ListAuditLogParams{Actor: &actor})).want(t, http.StatusOK).JSON200
	if len(l.Items) != 1 || l.Items[0].Action != models.AuditEntryActionLogin || l.Items[0].Kind != "sessions" {
		t.Errorf("rows by %s: %+v", actor, l.Items)
	}

	call(pviewer.ListAuditLogWithResponse(ctx, &models.ListAuditLogParams{})).wantErr(t, http.StatusForbidden, "forbidden", "")
	bad := "not-a-cursor"
	call(reader.ListAuditLogWithResponse(ctx, &models.ListAuditLogParams{Cursor: &bad})).wantErr(t, http.StatusBadRequest, "invalid_request", "cursor")
}
