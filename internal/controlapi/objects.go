package controlapi

import (
	"context"
	"encoding/base64"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/models"
)

// A project's upstream objects (issue 26): a read-only view of the object
// index the inference plane writes (internal/objects), each entry with the
// last state the proxy saw of it. The index is taken as a value
// (Config.Objects) so that the control plane never links the proxy.

// ListProjectObjects implements StrictServerInterface: Read on the project,
// and only that project's entries (the index is keyed by project).
func (v *Service) ListProjectObjects(ctx context.Context, id uuid.UUID, params models.ListProjectObjectsParams) (out models.ProjectObjectList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListProjectObjects")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, proj, _, err := projectRow(ctx, s, "project", 0, func() (store.Project, error) { return s.st.Projects().Get(ctx, id) }, projectID)
	if err != nil {
		return out, err
	}
	kind := objects.Kind(params.Kind)
	if !kind.Valid() {
		return out, invalid("kind: not an object kind", "kind")
	}
	if s.cfg.Objects == nil {
		return out, &apiError{status: 501, code: codeNotImplemented, message: "this control plane has no object index (run it with the inference plane, or with RELAY_REDIS_URL)"}
	}
	pg := objects.Page{Limit: defaultLimit}
	if l := params.Limit; l != nil {
		pg.Limit = int(min(max(*l, 1), maxLimit))
	}
	if c := params.Cursor; c != nil && *c != "" {
		b, err := base64.RawURLEncoding.DecodeString(*c)
		if err != nil || len(b) == 0 {
			return out, badRequest("cursor: not a cursor this API returned", detail("cursor", "not a cursor this API returned"))
		}
		pg.After = string(b)
	}
	list, more, err := s.cfg.Objects.List(ctx, proj.ID, kind, pg)
	if err != nil {
		return out, err
	}
	names := map[string]string{}
	items := make([]models.ProjectObject, 0, len(list))
	for _, o := range list {
		items = append(items, s.objectOut(ctx, o, names))
	}
	var next *string
	if more && len(list) > 0 {
		c := base64.RawURLEncoding.EncodeToString([]byte(list[len(list)-1].ID))
		next = &c
	}
	return models.ProjectObjectList{Items: items, NextCursor: next}, nil
}

// objectOut is an index entry as the API shows it; names caches the
// catalog names of the models met so far.
func (s *Server) objectOut(ctx context.Context, o objects.Object, names map[string]string) models.ProjectObject {
	m := models.ProjectObject{ID: o.ID, Kind: models.ObjectKind(o.Kind), HostID: o.HostID, HostKeyID: o.HostKeyID,
		CreatedAt: o.CreatedAt.UTC(), Bytes: o.Size, Purpose: o.Attrs[objects.AttrPurpose]}
	if id := o.Attrs[objects.AttrModel]; id != "" {
		name, ok := names[id]
		if !ok {
			if mid, err := uuid.Parse(id); err == nil {
				if row, err := s.st.Models().Get(ctx, mid); err == nil {
					name = row.Name
				}
			}
			names[id] = name
		}
		m.Model = name
	}
	if st := o.State; st != nil {
		m.Status = st.Status
		at := st.SeenAt.UTC()
		m.SeenAt = &at
		if o.Kind == objects.KindBatch || o.Kind == objects.KindMessageBatch {
			m.RequestCounts = &struct {
				Completed int64 `json:"completed"`
				Failed    int64 `json:"failed"`
				Total     int64 `json:"total"`
			}{Completed: st.Completed, Failed: st.Failed, Total: st.Total}
		}
	}
	return m
}
