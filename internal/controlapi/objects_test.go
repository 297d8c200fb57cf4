package controlapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/openapi/models"
)

// TestProjectObjects_ListsTheProjectsOwnWithTheirState: GET
// /api/projects/{id}/objects reads the shared object index for one kind,
// newest first and paged, with the state the proxy last saw; a viewer of
// the project reads it, a user of another project gets 404, another
// project's objects are never listed, and without an index the answer is
// 501.
func TestProjectObjects_ListsTheProjectsOwnWithTheirState(t *testing.T) {
	t.Parallel()
	ix := objects.NewMemory(objects.Options{})
	b := setup(t, func(c *controlapi.Config) { c.Objects = ix })
	team := call(b.admin.CreateTeamWithResponse(b.ctx, models.TeamCreate{Slug: "core"})).want(t, http.StatusCreated).JSON201
	mine := call(b.admin.CreateProjectWithResponse(b.ctx, models.ProjectCreate{Slug: "mine", TeamID: team.ID})).want(t, http.StatusCreated).JSON201
	theirs := call(b.admin.CreateProjectWithResponse(b.ctx, models.ProjectCreate{Slug: "theirs", TeamID: team.ID})).want(t, http.StatusCreated).JSON201
	model := call(b.admin.CreateModelWithResponse(b.ctx, models.ModelCreate{Name: "gpt-batch"})).want(t, http.StatusCreated).JSON201
	key, at := uuid.New(), time.Now().UTC().Truncate(time.Second)
	put := func(o objects.Object) {
		t.Helper()
		if o.HostKeyID == uuid.Nil {
			o.HostKeyID = key
		}
		if err := ix.Put(b.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	put(objects.Object{ID: "batch_old", Kind: objects.KindBatch, ProjectID: mine.ID, CreatedAt: at.Add(-time.Hour)})
	put(objects.Object{ID: "batch_new", Kind: objects.KindBatch, ProjectID: mine.ID, CreatedAt: at, Attrs: map[string]string{objects.AttrModel: model.ID.String()},
		State: &objects.State{Status: "in_progress", Total: 5, Completed: 2, Failed: 1, SeenAt: at}})
	put(objects.Object{ID: "batch_theirs", Kind: objects.KindBatch, ProjectID: theirs.ID, CreatedAt: at})
	put(objects.Object{ID: "file-1", Kind: objects.KindFile, ProjectID: mine.ID, CreatedAt: at, Size: 1234, Attrs: map[string]string{objects.AttrPurpose: "batch"}})

	limit := int32(1)
	p1 := call(b.admin.ListProjectObjectsWithResponse(b.ctx, mine.ID, &models.ListProjectObjectsParams{Kind: models.ObjectKindBatch, Limit: &limit})).want(t, http.StatusOK).JSON200
	if len(p1.Items) != 1 || p1.NextCursor == nil {
		t.Fatalf("first page: %+v", p1)
	}
	o := p1.Items[0]
	if o.ID != "batch_new" || o.Status != "in_progress" || o.Model != "gpt-batch" || o.RequestCounts == nil || o.RequestCounts.Total != 5 ||
		o.RequestCounts.Completed != 2 || o.RequestCounts.Failed != 1 || o.SeenAt == nil || !o.SeenAt.Equal(at) || o.HostKeyID != key {
		t.Fatalf("newest batch: %+v", o)
	}
	p2 := call(b.admin.ListProjectObjectsWithResponse(b.ctx, mine.ID, &models.ListProjectObjectsParams{Kind: models.ObjectKindBatch, Limit: &limit, Cursor: p1.NextCursor})).want(t, http.StatusOK).JSON200
	if len(p2.Items) != 1 || p2.Items[0].ID != "batch_old" || p2.NextCursor != nil || p2.Items[0].SeenAt != nil || p2.Items[0].Status != "" {
		t.Fatalf("second page: %+v", p2)
	}
	files := call(b.admin.ListProjectObjectsWithResponse(b.ctx, mine.ID, &models.ListProjectObjectsParams{Kind: models.ObjectKindFile})).want(t, http.StatusOK).JSON200
	if len(files.Items) != 1 || files.Items[0].Purpose != "batch" || files.Items[0].Bytes != 1234 || files.Items[0].RequestCounts != nil {
		t.Fatalf("files: %+v", files)
	}

	// A viewer of mine reads mine, not theirs; theirs is 404 as if it did not exist.
	viewer := b.newUser("objviewer")
	b.grant(viewer.user.ID, models.RoleViewer, nil, &mine.ID)
	got := call(viewer.ListProjectObjectsWithResponse(b.ctx, mine.ID, &models.ListProjectObjectsParams{Kind: models.ObjectKindBatch})).want(t, http.StatusOK).JSON200
	for _, o := range got.Items {
		if o.ID == "batch_theirs" {
			t.Fatal("another project's batch is listed")
		}
	}
	if len(got.Items) != 2 {
		t.Fatalf("viewer: %+v", got.Items)
	}
	call(viewer.ListProjectObjectsWithResponse(b.ctx, theirs.ID, &models.ListProjectObjectsParams{Kind: models.ObjectKindBatch})).wantErr(t, http.StatusNotFound, "not_found", "")
	// Bad input in the API's shape.
	call(b.admin.ListProjectObjectsWithResponse(b.ctx, mine.ID, &models.ListProjectObjectsParams{Kind: "bucket"})).want(t, http.StatusBadRequest)
	bad := "!!"
	call(b.admin.ListProjectObjectsWithResponse(b.ctx, mine.ID, &models.ListProjectObjectsParams{Kind: models.ObjectKindBatch, Cursor: &bad})).wantErr(t, http.StatusBadRequest, "invalid_request", "cursor")

	none := setup(t)
	nt := call(none.admin.CreateTeamWithResponse(none.ctx, models.TeamCreate{Slug: "core"})).want(t, http.StatusCreated).JSON201
	np := call(none.admin.CreateProjectWithResponse(none.ctx, models.ProjectCreate{Slug: "p", TeamID: nt.ID})).want(t, http.StatusCreated).JSON201
	call(none.admin.ListProjectObjectsWithResponse(none.ctx, np.ID, &models.ListProjectObjectsParams{Kind: models.ObjectKindBatch})).wantErr(t, http.StatusNotImplemented, "not_implemented", "")
}
