package ui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/openapi/models"
)

// A project's upstream objects (issue 26): GET /api/projects/{id}/objects
// in process, a kind at a time, with the state Relay last saw of each.

type objectsView struct {
	Projects, Kinds             []option
	Project, ProjectLabel, CSRF string
	KindLabel                   string
	Objects                     table
}

var objectKinds = []option{
	{Value: string(models.ObjectKindFile), Label: "Files"},
	{Value: string(models.ObjectKindBatch), Label: "Batches"},
	{Value: string(models.ObjectKindMessageBatch), Label: "Message batches"},
	{Value: string(models.ObjectKindResponse), Label: "Stored responses"},
}

func (h *Handler) objects(p *page) {
	q := p.r.URL.Query()
	project, kind := strings.TrimSpace(q.Get("project_id")), q.Get("kind")
	if kind == "" {
		kind = string(models.ObjectKindBatch)
	}
	projects := h.projectOptions(p)
	v := objectsView{CSRF: p.who.CSRFToken,
		Projects: selectOf("project_id", "", project, withNone("Choose a project", projects)).Options,
		Kinds:    selectOf("kind", "", kind, objectKinds).Options}
	for _, o := range objectKinds {
		if o.Value == kind {
			v.KindLabel = o.Label
		}
	}
	if project != "" {
		id, err := uuid.Parse(project)
		if err != nil || v.KindLabel == "" {
			p.fail(controlapi.Problem{Status: http.StatusNotFound, Message: "There is no such project or kind."})
			return
		}
		v.Project, v.ProjectLabel = id.String(), labels(projects).of(id)
		limit := int32(pageSize)
		params := models.ListProjectObjectsParams{Kind: models.ObjectKind(kind), Limit: &limit}
		if c := q.Get("cursor"); c != "" {
			params.Cursor = &c
		}
		l, err := h.svc.ListProjectObjects(p.ctx, id, params)
		if err != nil {
			h.failErr(p, err)
			return
		}
		v.Objects = objectsTable(models.ObjectKind(kind), l.Items)
		here := url.Values{"project_id": {project}, "kind": {kind}}
		if l.NextCursor != nil {
			next := url.Values{"project_id": {project}, "kind": {kind}, "cursor": {*l.NextCursor}}
			v.Objects.Next = "/objects?" + next.Encode()
		}
		if params.Cursor != nil {
			v.Objects.First = "/objects?" + here.Encode()
		}
	}
	p.render(http.StatusOK, "Files and batches", "objects", objectsPage(v))
}

// objectsTable is a page of one kind: a file's purpose and bytes, a
// batch's status and request counts, with when Relay saw them.
func objectsTable(k models.ObjectKind, items []models.ProjectObject) table {
	t := table{Empty: "Relay has no objects of this kind for the project (entries are kept 30 days)."}
	switch k {
	case models.ObjectKindFile:
		t.Columns = []column{{Title: "Id"}, {Title: "Created"}, {Title: "Purpose"}, {Title: "Bytes", Num: true}}
	case models.ObjectKindBatch, models.ObjectKindMessageBatch:
		t.Columns = []column{{Title: "Id"}, {Title: "Created"}, {Title: "Model"}, {Title: "Status"}, {Title: "Requests", Num: true},
			{Title: "Completed", Num: true}, {Title: "Failed", Num: true}, {Title: "Seen"}}
	default:
		t.Columns = []column{{Title: "Id"}, {Title: "Created"}}
	}
	for _, o := range items {
		cells := []cell{{Text: o.ID, Mono: true}, {Text: o.CreatedAt.UTC().Format("2006-01-02 15:04:05")}}
		switch k {
		case models.ObjectKindFile:
			cells = append(cells, cell{Text: o.Purpose}, cell{Text: strconv.FormatInt(o.Bytes, 10), Num: true})
		case models.ObjectKindBatch, models.ObjectKindMessageBatch:
			seen, total, done, failed := "not yet", "", "", ""
			if o.SeenAt != nil {
				seen = o.SeenAt.UTC().Format("2006-01-02 15:04:05")
			}
			if c := o.RequestCounts; c != nil {
				total, done, failed = strconv.FormatInt(c.Total, 10), strconv.FormatInt(c.Completed, 10), strconv.FormatInt(c.Failed, 10)
			}
			cells = append(cells, cell{Text: o.Model, Mono: true}, batchStatus(o.Status), cell{Text: total, Num: true},
				cell{Text: done, Num: true}, cell{Text: failed, Num: true}, cell{Text: seen})
		}
		t.Rows = append(t.Rows, row{ID: o.ID, Cells: cells})
	}
	return t
}

func batchStatus(s string) cell {
	switch s {
	case "completed", "ended":
		return cell{Text: s, Badge: "ok"}
	case "failed", "expired", "cancelled", "canceling", "cancelling":
		return cell{Text: s, Badge: "warn"}
	case "":
		return cell{Text: "unknown"}
	}
	return cell{Text: s}
}
