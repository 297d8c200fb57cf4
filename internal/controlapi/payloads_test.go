package controlapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/store"
)

// TestPayloads_ReadAndRedact: a project admin reads and deletes a capture
// of its project; a developer there gets 403; an outsider 404.
func TestPayloads_ReadAndRedact(t *testing.T) {
	b := setup(t)
	ctx := b.ctx
	team := call(b.admin.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "cap-team"})).want(t, http.StatusCreated).JSON201
	project := call(b.admin.CreateProjectWithResponse(ctx, models.ProjectCreate{TeamID: team.ID, Slug: "cap-proj"})).want(t, http.StatusCreated).JSON201
	other := call(b.admin.CreateProjectWithResponse(ctx, models.ProjectCreate{TeamID: team.ID, Slug: "cap-other"})).want(t, http.StatusCreated).JSON201
	now := time.Now().UTC().Truncate(time.Microsecond)
	if _, err := b.st.InsertPayloadCaptures(ctx, []store.PayloadCapture{
		{RequestID: "req-cap-1", CreatedAt: now, ProjectID: project.ID, Model: "m", Status: 200, RequestBody: []byte(`{"q":"hello"}`), ResponseBody: []byte("data: x\n\n")},
		{RequestID: "req-cap-2", CreatedAt: now, ProjectID: project.ID, RequestBody: []byte("{}"), ResponseBody: []byte{}},
	}); err != nil {
		t.Fatal(err)
	}

	admin := b.newUser("capadmin")
	b.grant(admin.user.ID, models.RoleProjectAdmin, nil, &project.ID)
	dev := b.newUser("capdev")
	b.grant(dev.user.ID, models.RoleDeveloper, nil, &project.ID)
	outsider := b.newUser("capout")
	b.grant(outsider.user.ID, models.RoleProjectAdmin, nil, &other.ID)

	got := call(admin.GetPayloadCaptureWithResponse(ctx, "req-cap-1")).want(t, http.StatusOK).JSON200
	if got.RequestBody != `{"q":"hello"}` || got.ResponseBody != "data: x\n\n" || got.ProjectID != project.ID || got.Status != 200 {
		t.Errorf("capture %+v", got)
	}
	call(dev.GetPayloadCaptureWithResponse(ctx, "req-cap-1")).want(t, http.StatusForbidden)
	call(outsider.GetPayloadCaptureWithResponse(ctx, "req-cap-1")).want(t, http.StatusNotFound)
	call(dev.DeletePayloadCaptureWithResponse(ctx, "req-cap-1")).want(t, http.StatusForbidden)
	call(outsider.DeleteProjectPayloadCapturesWithResponse(ctx, project.ID)).want(t, http.StatusNotFound)

	call(admin.DeletePayloadCaptureWithResponse(ctx, "req-cap-1")).want(t, http.StatusNoContent)
	call(admin.GetPayloadCaptureWithResponse(ctx, "req-cap-1")).want(t, http.StatusNotFound)
	if n := call(admin.DeleteProjectPayloadCapturesWithResponse(ctx, project.ID)).want(t, http.StatusOK).JSON200.Deleted; n != 1 {
		t.Errorf("deleted %d, want req-cap-2", n)
	}
}

// TestPayloads_TenantIsolation: two projects in two teams whose keys sent
// the same X-Request-ID. Captures are addressed by Relay's own request id,
// so each project has its own; and even rows written before Relay minted
// its ids (keyed by the caller's, shared across the projects) stay apart:
// the other project's newer row hides nothing from a team admin, whose
// DELETE removes its own project's row only. Every delete is audited.
func TestPayloads_TenantIsolation(t *testing.T) {
	b := setup(t)
	ctx := b.ctx
	victimTeam := call(b.admin.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "victim-team"})).want(t, http.StatusCreated).JSON201
	otherTeam := call(b.admin.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "other-team"})).want(t, http.StatusCreated).JSON201
	victim := call(b.admin.CreateProjectWithResponse(ctx, models.ProjectCreate{TeamID: victimTeam.ID, Slug: "victim"})).want(t, http.StatusCreated).JSON201
	other := call(b.admin.CreateProjectWithResponse(ctx, models.ProjectCreate{TeamID: otherTeam.ID, Slug: "other"})).want(t, http.StatusCreated).JSON201
	now := time.Now().UTC().Truncate(time.Microsecond)
	same := "same-client-id"
	if _, err := b.st.InsertPayloadCaptures(ctx, []store.PayloadCapture{
		{RequestID: "req_victim", ClientRequestID: &same, CreatedAt: now, ProjectID: victim.ID, RequestBody: []byte("victim"), ResponseBody: []byte{}},
		{RequestID: "req_other", ClientRequestID: &same, CreatedAt: now, ProjectID: other.ID, RequestBody: []byte("other"), ResponseBody: []byte{}},
		// Before migration 00004: keyed by the caller's id; the other
		// project's row is the newer.
		{RequestID: same, CreatedAt: now, ProjectID: victim.ID, RequestBody: []byte("victim legacy"), ResponseBody: []byte{}},
		{RequestID: same, CreatedAt: now.Add(time.Second), ProjectID: other.ID, RequestBody: []byte("other legacy"), ResponseBody: []byte{}},
	}); err != nil {
		t.Fatal(err)
	}
	admin := b.newUser("victimadmin")
	b.grant(admin.user.ID, models.RoleTeamAdmin, &victimTeam.ID, nil)

	if got := call(admin.GetPayloadCaptureWithResponse(ctx, "req_victim")).want(t, http.StatusOK).JSON200; got.RequestBody != "victim" {
		t.Errorf("req_victim: %+v", got)
	}
	call(admin.GetPayloadCaptureWithResponse(ctx, "req_other")).want(t, http.StatusNotFound)
	call(admin.DeletePayloadCaptureWithResponse(ctx, "req_other")).want(t, http.StatusNotFound)
	if got := call(admin.GetPayloadCaptureWithResponse(ctx, same)).want(t, http.StatusOK).JSON200; got.RequestBody != "victim legacy" || got.ProjectID != victim.ID {
		t.Errorf("legacy capture: %+v, want the victim's", got)
	}
	call(admin.DeletePayloadCaptureWithResponse(ctx, same)).want(t, http.StatusNoContent)
	call(admin.DeletePayloadCaptureWithResponse(ctx, "req_victim")).want(t, http.StatusNoContent)
	call(admin.GetPayloadCaptureWithResponse(ctx, same)).want(t, http.StatusNotFound)

	// The other project's captures are all there.
	for _, id := range []string{"req_other", same} {
		rows, err := b.st.PayloadCaptures(ctx, id)
		if err != nil || len(rows) != 1 || rows[0].ProjectID != other.ID {
			t.Errorf("%s after the victim's deletes: %+v %v", id, rows, err)
		}
	}
	if n := call(b.admin.DeleteProjectPayloadCapturesWithResponse(ctx, other.ID)).want(t, http.StatusOK).JSON200.Deleted; n != 2 {
		t.Errorf("the other project's delete took %d, want 2", n)
	}

	kind := "payload_captures"
	audit, err := b.st.ListAuditLog(ctx, store.AuditLogPage{Kind: &kind, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{same, "req_victim", other.ID.String()}
	if len(audit) != len(want) {
		t.Fatalf("%d audit rows, want %d: %+v", len(audit), len(want), audit)
	}
	for i, a := range audit {
		if a.ObjectID != want[i] || a.Action != "delete" {
			t.Errorf("audit row %d: %s %s, want delete %s", i, a.Action, a.ObjectID, want[i])
		}
	}
	if audit[0].Actor != "user:"+admin.user.ID.String() || audit[2].Actor != controlapi.AdminTokenActor(adminToken) {
		t.Errorf("audit actors %q, %q", audit[0].Actor, audit[2].Actor)
	}
}
