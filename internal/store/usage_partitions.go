package store

import (
	"context"
	"fmt"
	"time"
)

// EnsureUsagePartitions makes the daily partitions of the ledger for the UTC
// days from first through last that do not exist yet, and returns how many it
// made. Events of those days that had landed in the default partition move
// into their day. Concurrent callers (other pods) wait for each other.
func (s *Store) EnsureUsagePartitions(ctx context.Context, first, last time.Time) (int, error) {
	n, err := s.q.EnsureUsagePartitions(ctx, first, last)
	if err != nil {
		return 0, fmt.Errorf("ensure usage partitions: %w", mapErr(err))
	}
	return int(n), nil
}

// DropUsagePartitions deletes the ledger before cutoff, rounded down to a UTC
// day: the daily partitions that end by then are dropped, older events in the
// default partition deleted, and the rollups of those days deleted with them.
// It returns how many partitions it dropped.
func (s *Store) DropUsagePartitions(ctx context.Context, cutoff time.Time) (int, error) {
	n, err := s.q.DropUsagePartitions(ctx, cutoff)
	if err != nil {
		return 0, fmt.Errorf("drop usage partitions: %w", mapErr(err))
	}
	return int(n), nil
}

// ListUsagePartitions names the ledger's daily partitions, oldest first
// (usage_events_pYYYYMMDD).
func (s *Store) ListUsagePartitions(ctx context.Context) ([]string, error) {
	names, err := s.q.ListUsagePartitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("list usage partitions: %w", mapErr(err))
	}
	return names, nil
}
