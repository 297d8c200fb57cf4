package controlapi

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	gen "github.com/relay-llm/relay/openapi/controlgen"
)

// Payload captures (policy capture_payloads; docs/observability.md). They
// hold prompt and answer content of everyone in a project, so reading and
// deleting them needs ManageProject (project_admin or above) on the
// capture's project; a project reader without it gets 403, anyone else 404.

func captureProject(r store.PayloadCapture) uuid.UUID { return r.ProjectID }

// GetPayloadCapture implements StrictServerInterface.
func (s *Server) GetPayloadCapture(ctx context.Context, req gen.GetPayloadCaptureRequestObject) (gen.GetPayloadCaptureResponseObject, error) {
	_, row, _, err := projectRow(ctx, s, "payload capture", rbac.ManageProject,
		func() (store.PayloadCapture, error) { return s.st.PayloadCapture(ctx, req.RequestID) }, captureProject)
	if err != nil {
		return nil, err
	}
	return gen.GetPayloadCapture200JSONResponse{
		RequestID: row.RequestID, CreatedAt: row.CreatedAt, ProjectID: row.ProjectID,
		RelayKeyID: row.RelayKeyID, InferenceTokenID: row.InferenceTokenID, PolicyID: row.PolicyID,
		Model: row.Model, Status: row.Status, RequestBody: string(row.RequestBody), ResponseBody: string(row.ResponseBody),
		Truncated: row.Truncated,
	}, nil
}

// DeletePayloadCapture implements StrictServerInterface.
func (s *Server) DeletePayloadCapture(ctx context.Context, req gen.DeletePayloadCaptureRequestObject) (gen.DeletePayloadCaptureResponseObject, error) {
	if _, _, _, err := projectRow(ctx, s, "payload capture", rbac.ManageProject,
		func() (store.PayloadCapture, error) { return s.st.PayloadCapture(ctx, req.RequestID) }, captureProject); err != nil {
		return nil, err
	}
	if _, err := s.st.DeletePayloadCaptures(ctx, req.RequestID); err != nil {
		return nil, err
	}
	return gen.DeletePayloadCapture204Response{}, nil
}

// DeleteProjectPayloadCaptures implements StrictServerInterface.
func (s *Server) DeleteProjectPayloadCaptures(ctx context.Context, req gen.DeleteProjectPayloadCapturesRequestObject) (gen.DeleteProjectPayloadCapturesResponseObject, error) {
	if _, _, _, err := projectRow(ctx, s, "project", rbac.ManageProject,
		func() (store.Project, error) { return s.st.Projects().Get(ctx, req.ID) }, projectID); err != nil {
		return nil, err
	}
	n, err := s.st.DeleteProjectPayloadCaptures(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	return gen.DeleteProjectPayloadCaptures200JSONResponse{Deleted: n}, nil
}
