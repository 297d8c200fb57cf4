package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// PayloadCapture is one captured request and answer (policy
// capture_payloads; docs/observability.md). RequestID is Relay's own request
// id (X-Relay-Request-ID); ClientRequestID the caller's X-Request-ID, an
// attribute only.
type PayloadCapture struct {
	RequestID        string
	CreatedAt        time.Time
	ProjectID        uuid.UUID
	RelayKeyID       *uuid.UUID
	InferenceTokenID *uuid.UUID
	PolicyID         *uuid.UUID
	Model            string
	Status           int32
	RequestBody      []byte
	ResponseBody     []byte
	Truncated        bool
	ClientRequestID  *string
}

// capturedRequest is what the audit log keeps of a deleted capture: which
// request it was, never the bodies (a deletion is a redaction).
type capturedRequest struct {
	RequestID       string
	ClientRequestID *string
	CreatedAt       time.Time
	ProjectID       uuid.UUID
	Model           string
	Status          int32
}

// projectCaptures is what the audit log keeps of a project's deletion.
type projectCaptures struct {
	ProjectID uuid.UUID
	Captures  int64
}

// InsertPayloadCaptures appends captures with COPY and returns how many it
// wrote. Captures are not audited when written: they are data, not
// configuration; their deletion is.
func (s *Store) InsertPayloadCaptures(ctx context.Context, cs []PayloadCapture) (int64, error) {
	rows := make([]dbsqlc.InsertPayloadCapturesParams, len(cs))
	for i, c := range cs {
		rows[i] = dbsqlc.InsertPayloadCapturesParams(c)
	}
	n, err := s.q.InsertPayloadCaptures(ctx, rows)
	if err != nil {
		return 0, fmt.Errorf("insert payload captures: %w", mapErr(err))
	}
	return n, nil
}

// PayloadCaptures returns the captures of a request id (Relay's), newest
// first: one, but rows written before Relay minted its own ids may share
// one across projects (the caller keeps those it may see).
func (s *Store) PayloadCaptures(ctx context.Context, requestID string) ([]PayloadCapture, error) {
	rows, err := s.q.ListPayloadCapturesByRequest(ctx, requestID)
	if err != nil {
		return nil, fmt.Errorf("list payload captures: %w", mapErr(err))
	}
	return each(rows, func(r dbsqlc.PayloadCapture) PayloadCapture { return PayloadCapture(r) }), nil
}

// DeletePayloadCapture deletes capture c (as PayloadCaptures returned it):
// the rows of its request id in its project, none of another project. It
// writes one audit row, by actor, and returns how many rows went.
func (s *Store) DeletePayloadCapture(ctx context.Context, actor string, c PayloadCapture) (int64, error) {
	var n int64
	err := s.InTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.q.DeletePayloadCapturesByRequest(ctx, c.RequestID, c.ProjectID)
		if err != nil {
			return fmt.Errorf("delete payload capture: %w", mapErr(err))
		}
		before := capturedRequest{RequestID: c.RequestID, ClientRequestID: c.ClientRequestID,
			CreatedAt: c.CreatedAt, ProjectID: c.ProjectID, Model: c.Model, Status: c.Status}
		return tx.Audit(ctx, actor, "delete", string(KindPayloadCaptures), c.RequestID, before, nil)
	})
	return n, err
}

// DeleteProjectPayloadCaptures deletes every capture of a project, writes
// one audit row by actor, and returns how many went.
func (s *Store) DeleteProjectPayloadCaptures(ctx context.Context, actor string, projectID uuid.UUID) (int64, error) {
	var n int64
	err := s.InTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.q.DeletePayloadCapturesByProject(ctx, projectID)
		if err != nil {
			return fmt.Errorf("delete project payload captures: %w", mapErr(err))
		}
		return tx.Audit(ctx, actor, "delete", string(KindPayloadCaptures), projectID.String(),
			projectCaptures{ProjectID: projectID, Captures: n}, nil)
	})
	return n, err
}

// DeletePayloadCapturesBefore deletes captures made before t, batch rows
// at a time until none is left, and returns how many went. Retention is
// not audited: it is the configured policy, not an act.
func (s *Store) DeletePayloadCapturesBefore(ctx context.Context, t time.Time, batch int32) (int64, error) {
	var total int64
	for {
		n, err := s.q.DeletePayloadCapturesBefore(ctx, t, batch)
		if err != nil {
			return total, fmt.Errorf("delete old payload captures: %w", mapErr(err))
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}
