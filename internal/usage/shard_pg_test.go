package usage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
)

// downShard fails every write while failing is set.
type downShard struct {
	usage.Sink
	failing bool
}

func (s *downShard) IngestUsageEvents(ctx context.Context, rows []store.UsageEvent) (int64, error) {
	if s.failing {
		return 0, errors.New("shard down")
	}
	return s.Sink.IngestUsageEvents(ctx, rows)
}

// TestShards_EachProjectInOneLedger writes batches of events of 40
// projects through a Shards sink over three ledgers: every event is in the
// ledger of its project's shard and in no other, with the rollups beside
// it; a batch with one shard down fails as a whole and, written again once
// the shard is back, leaves every event in its ledger exactly once.
func TestShards_EachProjectInOneLedger(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	urls := make([]string, 3)
	sinks := make([]usage.Sink, 3)
	for i := range urls {
		urls[i] = pgtest.NewDB(t)
		st, err := store.Open(ctx, urls[i])
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		sinks[i] = st
	}
	flaky := &downShard{Sink: sinks[2]}
	sinks[2] = flaky
	shards := usage.NewShards(sinks...)

	projects := make([]uuid.UUID, 40)
	for i := range projects {
		projects[i] = uuid.New()
	}
	rows := func(from, to int) []store.UsageEvent {
		out := make([]store.UsageEvent, 0, to-from)
		for i := from; i < to; i++ {
			rec := loadRecord(i, projects[i%len(projects)])
			ev := usage.NewEvent(&rec, nil)
			out = append(out, ev.Row())
		}
		return out
	}
	if n, err := shards.IngestUsageEvents(ctx, rows(0, 400)); err != nil || n != 400 {
		t.Fatalf("first batch: %d new, %v; want 400", n, err)
	}
	second := rows(400, 800)
	flaky.failing = true
	if _, err := shards.IngestUsageEvents(ctx, second); err == nil {
		t.Fatal("a batch with a shard down succeeded")
	}
	flaky.failing = false
	n, err := shards.IngestUsageEvents(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if n >= 400 || n == 0 {
		t.Errorf("the batch written again counted %d new: the shards that had committed should skip theirs", n)
	}

	total := 0
	for k, u := range urls {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		r, err := conn.Query(ctx, `SELECT project_id, count(*), count(DISTINCT request_id) FROM usage_events GROUP BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var p uuid.UUID
			var c, d int
			if err := r.Scan(&p, &c, &d); err != nil {
				t.Fatal(err)
			}
			if got := usage.ShardOf(p, len(urls)); got != k {
				t.Errorf("project %s's events are in shard %d, its shard is %d", p, k, got)
			}
			if c != d || c != 20 {
				t.Errorf("project %s: %d rows, %d request ids in shard %d; want 20 once each", p, c, d, k)
			}
			total += c
		}
		r.Close()
		var requests int
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(requests), 0) FROM usage_rollups WHERE grain = 'hour' AND detailed`).Scan(&requests); err != nil {
			t.Fatal(err)
		}
		var events int
		_ = conn.QueryRow(ctx, `SELECT count(*) FROM usage_events`).Scan(&events)
		if requests != events {
			t.Errorf("shard %d: rollups count %d requests, the ledger holds %d", k, requests, events)
		}
	}
	if total != 800 {
		t.Errorf("the shards hold %d events, want 800", total)
	}
}

// TestShardOf_Spreads: 3,000 projects spread over 3 shards within 10 % of
// even, and a project without an id goes to shard 0.
func TestShardOf_Spreads(t *testing.T) {
	counts := make([]int, 3)
	for range 3000 {
		counts[usage.ShardOf(uuid.New(), 3)]++
	}
	for k, c := range counts {
		if c < 900 || c > 1100 {
			t.Errorf("shard %d has %d of 3000 projects", k, c)
		}
	}
	if usage.ShardOf(uuid.Nil, 3) != 0 || usage.ShardOf(uuid.New(), 1) != 0 {
		t.Error("a project without an id, or one shard, is not shard 0")
	}
}
