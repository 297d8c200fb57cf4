package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/dbsqlc"
)

// PayloadCapture is one captured request and answer (policy
// capture_payloads; docs/observability.md).
type PayloadCapture = dbsqlc.PayloadCapture

// InsertPayloadCaptures appends captures with COPY and returns how many it
// wrote. Captures are not audited: they are data, not configuration.
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

// PayloadCapture returns the newest capture of a request id; ErrNotFound
// when there is none.
func (s *Store) PayloadCapture(ctx context.Context, requestID string) (PayloadCapture, error) {
	return result(s.q.GetPayloadCapture(ctx, requestID))
}

// DeletePayloadCaptures deletes the captures of a request id and returns
// how many went.
func (s *Store) DeletePayloadCaptures(ctx context.Context, requestID string) (int64, error) {
	return result(s.q.DeletePayloadCapturesByRequest(ctx, requestID))
}

// DeleteProjectPayloadCaptures deletes every capture of a project.
func (s *Store) DeleteProjectPayloadCaptures(ctx context.Context, projectID uuid.UUID) (int64, error) {
	return result(s.q.DeletePayloadCapturesByProject(ctx, projectID))
}

// DeletePayloadCapturesBefore deletes captures made before t, batch rows
// at a time until none is left, and returns how many went.
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
