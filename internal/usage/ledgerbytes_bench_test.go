package usage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
)

// BenchmarkLedgerBytes writes routed events (a realistic decision of three
// candidates, one in seven a failure, as routedRecord makes them; in
// trimmed-successes every one a plain routed success)
// through the Writer into a fresh ledger, with every decision stored in
// full and with TrimRouteDetail (a 1% sample kept in full), and reports
// what an event costs Postgres: bytes on disk (the ledger's partitions and
// the rollups, indexes and TOAST included) and WAL (pg_current_wal_lsn
// before and after; the WAL is the server's, so other sessions' writes
// meanwhile count too: take the lower of a few runs), and the rate the
// writer reached (Record of all the events, then Close: batches of 1000,
// one transaction at a time).
//
//	RELAY_TEST_DATABASE_URL=… go test ./internal/usage -run '^$' -bench LedgerBytes -benchtime 1x
func BenchmarkLedgerBytes(b *testing.B) {
	const events = 20000
	for _, mode := range []struct {
		name      string
		trim      bool
		successes bool // every event a plain routed success (no failure's decision kept)
	}{{"full", false, false}, {"trimmed", true, false}, {"trimmed-successes", true, true}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				dbURL := pgtest.NewDB(b)
				st, err := store.Open(context.Background(), dbURL)
				if err != nil {
					b.Fatal(err)
				}
				conn, err := pgx.Connect(context.Background(), dbURL)
				if err != nil {
					b.Fatal(err)
				}
				size := func() (bytes int64) {
					if err := conn.QueryRow(context.Background(), `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)
						FROM pg_class c WHERE c.relkind = 'r' AND (c.relname LIKE 'usage_events%' OR c.relname LIKE 'usage_rollups%')`).Scan(&bytes); err != nil {
						b.Fatal(err)
					}
					return bytes
				}
				lsn := func() (at int64) {
					if err := conn.QueryRow(context.Background(), `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&at); err != nil {
						b.Fatal(err)
					}
					return at
				}
				size0, wal0 := size(), lsn()
				w := usage.NewWriter(usage.WriterConfig{Sink: st, QueueSize: events, TrimRouteDetail: mode.trim, RouteDetailSample: 0.01})
				project := uuid.New()
				b.ResetTimer()
				start := time.Now()
				for i := range events {
					rec := routedRecord(i, project)
					if mode.successes {
						rec.Status = 200
					}
					w.Record(rec)
				}
				if err := w.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				took := time.Since(start)
				b.StopTimer()
				if _, err := conn.Exec(context.Background(), `CHECKPOINT`); err != nil {
					b.Fatal(err)
				}
				wal := lsn() - wal0
				if s := w.Stats(); s.Written != events {
					b.Fatalf("stats %+v: want %d written", s, events)
				}
				b.ReportMetric(float64(size()-size0)/events, "disk-B/event")
				b.ReportMetric(float64(wal)/events, "WAL-B/event")
				b.ReportMetric(events/took.Seconds(), "events/s")
				b.ReportMetric(0, "ns/op")
				conn.Close(context.Background())
				st.Close()
			}
		})
	}
}

// BenchmarkWriterTransactions drains 20 000 routed events of two projects
// and three models (sharedRecord) through the Writer into a fresh ledger
// with 1, 2 and 4 transactions in flight, and reports the rate: Record of
// all the events, then Close (batches of 1000, no spool).
//
//	RELAY_TEST_DATABASE_URL=… go test ./internal/usage -run '^$' -bench WriterTransactions -benchtime 1x
func BenchmarkWriterTransactions(b *testing.B) {
	const events = 20000
	for _, txs := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("transactions=%d", txs), func(b *testing.B) {
			for range b.N {
				dbURL := pgtest.NewDB(b)
				st, err := store.Open(context.Background(), dbURL)
				if err != nil {
					b.Fatal(err)
				}
				w := usage.NewWriter(usage.WriterConfig{Sink: st, QueueSize: events, TrimRouteDetail: true, RouteDetailSample: 0.01, Transactions: txs})
				projects := []uuid.UUID{uuid.New(), uuid.New()}
				b.ResetTimer()
				start := time.Now()
				for i := range events {
					w.Record(sharedRecord(i, projects))
				}
				if err := w.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				took := time.Since(start)
				b.StopTimer()
				if s := w.Stats(); s.Written != events {
					b.Fatalf("stats %+v: want %d written", s, events)
				}
				b.ReportMetric(events/took.Seconds(), "events/s")
				b.ReportMetric(0, "ns/op")
				st.Close()
			}
		})
	}
}
