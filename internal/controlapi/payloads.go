package controlapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/models"
)

// Payload captures (policy capture_payloads; docs/observability.md). They
// hold prompt and answer content of everyone in a project, so reading and
// deleting them needs ManageProject (project_admin or above) on the
// capture's project; a project reader without it gets 403, anyone else 404.
// A capture is addressed by Relay's request id (X-Relay-Request-ID), never
// by the caller's X-Request-ID (its client_request_id), and a delete reaches
// only rows of the project the caller was authorised on. Every delete
// writes an audit row.

func captureProject(r store.PayloadCapture) uuid.UUID { return r.ProjectID }

// payloadCapture returns the newest capture of requestID that the caller
// may manage. Relay's ids are unique; only captures written before it
// minted its own may share one across projects, and a row of a project the
// caller cannot see never hides one it can.
func (s *Server) payloadCapture(ctx context.Context, requestID string) (*caller, store.PayloadCapture, error) {
	rows, err := s.st.PayloadCaptures(ctx, requestID)
	if err != nil {
		return nil, store.PayloadCapture{}, err
	}
	refusal := notFound("payload capture")
	for _, r := range rows {
		c, row, _, err := projectRow(ctx, s, "payload capture", rbac.ManageProject,
			func() (store.PayloadCapture, error) { return r, nil }, captureProject)
		if err == nil {
			return c, row, nil
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			return nil, store.PayloadCapture{}, err
		}
		if ae.status == http.StatusForbidden {
			refusal = err // the caller sees this one: 403 beats 404
		}
	}
	return nil, store.PayloadCapture{}, refusal
}

// GetPayloadCapture is the operation of the same name in openapi/control.yaml.
func (v *Service) GetPayloadCapture(ctx context.Context, requestID string) (out models.PayloadCapture, err error) {
	s, ctx, done, err := v.enter(ctx, "GetPayloadCapture")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := s.payloadCapture(ctx, requestID)
	if err != nil {
		return out, err
	}
	return models.PayloadCapture{
		RequestID: row.RequestID, CreatedAt: row.CreatedAt, ProjectID: row.ProjectID,
		RelayKeyID: row.RelayKeyID, InferenceTokenID: row.InferenceTokenID, PolicyID: row.PolicyID,
		Model: row.Model, Status: row.Status, RequestBody: string(row.RequestBody), ResponseBody: string(row.ResponseBody),
		Truncated: row.Truncated,
	}, nil
}

// DeletePayloadCapture is the operation of the same name in openapi/control.yaml.
func (v *Service) DeletePayloadCapture(ctx context.Context, requestID string) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeletePayloadCapture")
	if err != nil {
		return err
	}
	defer done(&err)
	c, row, err := s.payloadCapture(ctx, requestID)
	if err != nil {
		return err
	}
	if _, err := s.st.DeletePayloadCapture(ctx, c.actor, row); err != nil {
		return err
	}
	return nil
}

// DeleteProjectPayloadCaptures is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteProjectPayloadCaptures(ctx context.Context, id uuid.UUID) (out models.PayloadCapturesDeleted, err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteProjectPayloadCaptures")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, _, err := projectRow(ctx, s, "project", rbac.ManageProject,
		func() (store.Project, error) { return s.st.Projects().Get(ctx, id) }, projectID)
	if err != nil {
		return out, err
	}
	n, err := s.st.DeleteProjectPayloadCaptures(ctx, c.actor, id)
	if err != nil {
		return out, err
	}
	return models.PayloadCapturesDeleted{Deleted: n}, nil
}
