package ui_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/objects"
)

// TestConsole_FilesAndBatches: the page lists a project's batches with the
// state Relay last saw (status, request counts) and its files with purpose
// and bytes, from the object index; another project's objects never
// appear, and a member of another project cannot open this one's.
func TestConsole_FilesAndBatches(t *testing.T) {
	t.Parallel()
	ix := objects.NewMemory(objects.Options{})
	b := setup(t, func(c *controlapi.Config) { c.Objects = ix })
	b.user("ada@example.com", "admin")
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	mine := b.apiCall("POST", "/api/projects", map[string]any{"slug": "mine", "team_id": team["id"]})
	theirs := b.apiCall("POST", "/api/projects", map[string]any{"slug": "theirs", "team_id": team["id"]})
	mineID, theirsID := uuid.MustParse(mine["id"].(string)), uuid.MustParse(theirs["id"].(string))
	at := time.Now().UTC()
	for _, o := range []objects.Object{
		{ID: "batch_mine", Kind: objects.KindBatch, ProjectID: mineID, CreatedAt: at, State: &objects.State{Status: "in_progress", Total: 7, Completed: 3, Failed: 2, SeenAt: at}},
		{ID: "batch_theirs", Kind: objects.KindBatch, ProjectID: theirsID, CreatedAt: at},
		{ID: "file-mine", Kind: objects.KindFile, ProjectID: mineID, CreatedAt: at, Size: 4096, Attrs: map[string]string{objects.AttrPurpose: "batch_output"}},
	} {
		o.HostKeyID = uuid.New()
		if err := ix.Put(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	br := b.signedIn("ada@example.com")
	must(t, br.get("/objects"), http.StatusOK, "Files and batches", "Choose a project")
	q := url.Values{"project_id": {mineID.String()}, "kind": {"batch"}}
	page := br.get("/objects?" + q.Encode())
	must(t, page, http.StatusOK, "Batches of", "batch_mine", "in_progress", ">7<", ">3<", ">2<")
	mustNot(t, page, "batch_theirs")
	q.Set("kind", "file")
	files := br.get("/objects?"+q.Encode(), "HX-Request", "true")
	must(t, files, http.StatusOK, "file-mine", "batch_output", "4096")
	mustNot(t, files, "<html")
	// A developer of theirs: mine is not found, theirs lists only its own.
	u := b.apiCall("POST", "/api/users", map[string]any{"email": "dev@example.com", "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": u["id"], "role": "developer", "project_id": theirsID.String()})
	dev := b.signedIn("dev@example.com")
	q.Set("kind", "batch")
	must(t, dev.get("/objects?"+q.Encode()), http.StatusNotFound)
	q.Set("project_id", theirsID.String())
	own := dev.get("/objects?" + q.Encode())
	must(t, own, http.StatusOK, "batch_theirs")
	mustNot(t, own, "batch_mine")
	must(t, br.get("/objects?project_id=nope&kind=batch"), http.StatusNotFound)
}
