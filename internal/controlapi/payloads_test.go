package controlapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/client"
)

// TestPayloads_ReadAndRedact: a project admin reads and deletes a capture
// of its project; a developer there gets 403; an outsider 404.
func TestPayloads_ReadAndRedact(t *testing.T) {
	b := setup(t)
	ctx := b.ctx
	team := call(b.admin.CreateTeamWithResponse(ctx, client.TeamCreate{Slug: "cap-team"})).want(t, http.StatusCreated).JSON201
	project := call(b.admin.CreateProjectWithResponse(ctx, client.ProjectCreate{TeamID: team.ID, Slug: "cap-proj"})).want(t, http.StatusCreated).JSON201
	other := call(b.admin.CreateProjectWithResponse(ctx, client.ProjectCreate{TeamID: team.ID, Slug: "cap-other"})).want(t, http.StatusCreated).JSON201
	now := time.Now().UTC().Truncate(time.Microsecond)
	if _, err := b.st.InsertPayloadCaptures(ctx, []store.PayloadCapture{
		{RequestID: "req-cap-1", CreatedAt: now, ProjectID: project.ID, Model: "m", Status: 200, RequestBody: []byte(`{"q":"hello"}`), ResponseBody: []byte("data: x\n\n")},
		{RequestID: "req-cap-2", CreatedAt: now, ProjectID: project.ID, RequestBody: []byte("{}"), ResponseBody: []byte{}},
	}); err != nil {
		t.Fatal(err)
	}

	admin := b.newUser("capadmin")
	b.grant(admin.user.ID, client.RoleProjectAdmin, nil, &project.ID)
	dev := b.newUser("capdev")
	b.grant(dev.user.ID, client.RoleDeveloper, nil, &project.ID)
	outsider := b.newUser("capout")
	b.grant(outsider.user.ID, client.RoleProjectAdmin, nil, &other.ID)

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
