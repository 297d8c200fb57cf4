package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/dbsqlc"
)

// UsageEventsPage asks for up to Limit usage events after (AfterCreatedAt,
// AfterRequestID) in that order (zero values for the first page), of one
// project when ProjectID is set.
type UsageEventsPage struct {
	AfterCreatedAt time.Time
	AfterRequestID string
	ProjectID      *uuid.UUID
	Limit          int32
}

// InsertUsageEvents appends events to the ledger with COPY and returns how
// many it wrote. The ledger is not audited.
func (s *Store) InsertUsageEvents(ctx context.Context, events []UsageEvent) (int64, error) {
	rows := make([]dbsqlc.InsertUsageEventsParams, len(events))
	for i, e := range events {
		rows[i] = dbsqlc.InsertUsageEventsParams(e)
	}
	n, err := s.q.InsertUsageEvents(ctx, rows)
	if err != nil {
		return 0, fmt.Errorf("insert usage events: %w", mapErr(err))
	}
	return n, nil
}

// ListUsageEvents returns one page of usage events in time order.
func (s *Store) ListUsageEvents(ctx context.Context, p UsageEventsPage) ([]UsageEvent, error) {
	rows, err := s.q.ListUsageEventsPage(ctx, p.AfterCreatedAt, p.AfterRequestID, p.ProjectID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list usage events: %w", mapErr(err))
	}
	return rows, nil
}
