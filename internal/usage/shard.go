package usage

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store"
)

// Shards is a Sink over several ledgers, each a Postgres of its own: every
// event goes to the shard of its project (ShardOf), so a project's events,
// rollups and budgets' history are always in one ledger, and a batch is
// split into one write per shard, run at once. `relay usage-consume` uses
// it when given more than one ledger (RELAY_USAGE_SHARD_URLS).
//
// A batch succeeds only when every shard's write did: a failure on one
// fails the call, and the batch is written again (each shard's write is
// idempotent, so the shards that had committed skip what they hold).
type Shards struct {
	shards []Sink
}

// NewShards returns a Sink over shards, in their order: the order is the
// sharding, and changing it moves projects between ledgers.
func NewShards(shards ...Sink) *Shards { return &Shards{shards: shards} }

// ShardOf is the shard, of n, of a project's events: FNV-1a of its id's
// bytes, modulo n. Events without a project go to shard 0.
func ShardOf(project uuid.UUID, n int) int {
	if n <= 1 || project == uuid.Nil {
		return 0
	}
	h := fnv.New64a()
	h.Write(project[:])
	return int(h.Sum64() % uint64(n))
}

// IngestUsageEvents splits events by shard and writes each part to its
// shard, concurrently; it returns how many were new over all shards.
func (s *Shards) IngestUsageEvents(ctx context.Context, events []store.UsageEvent) (int64, error) {
	if len(s.shards) == 1 {
		return s.shards[0].IngestUsageEvents(ctx, events)
	}
	parts := make([][]store.UsageEvent, len(s.shards))
	for i := range events {
		var project uuid.UUID
		if events[i].ProjectID != nil {
			project = *events[i].ProjectID
		}
		k := ShardOf(project, len(s.shards))
		parts[k] = append(parts[k], events[i])
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fresh int64
		errs  []error
	)
	for k, part := range parts {
		if len(part) == 0 {
			continue
		}
		wg.Go(func() {
			n, err := s.shards[k].IngestUsageEvents(ctx, part)
			mu.Lock()
			defer mu.Unlock()
			fresh += n
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return fresh, errors.Join(errs...)
}
