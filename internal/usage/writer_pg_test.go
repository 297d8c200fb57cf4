package usage_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/internal/wire"
)

func rec(i int) event.Record {
	return event.Record{
		RequestID: fmt.Sprintf("req-%d", i), At: time.Now(), CredentialKind: snapshot.CredentialRelayKey, CredentialID: uuid.New(),
		Model: "m", Status: 200, Attempts: 1, Usage: wire.Usage{Input: 3, Output: 2},
	}
}

// TestWriter_PostgresGoneRetriesThenLoses points the writer at a database
// that is then dropped under it: batches are retried, then counted as lost,
// and Record never waits for any of it.
func TestWriter_PostgresGoneRetriesThenLoses(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	st, err := store.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := usage.NewWriter(usage.WriterConfig{Sink: st, QueueSize: 64, BatchSize: 10, FlushInterval: 5 * time.Millisecond,
		Attempts: 3, RetryBackoff: 20 * time.Millisecond, RetryBackoffMax: 40 * time.Millisecond, WriteTimeout: 5 * time.Second})
	for i := range 10 {
		w.Record(rec(i))
	}
	poll.Until(t, 30*time.Second, "10 events written", func() bool { return w.Stats().Written == 10 })

	// Drop the database, terminating the writer's connections.
	u, _ := url.Parse(dbURL)
	admin, err := pgx.Connect(t.Context(), pgtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(t.Context(), "DROP DATABASE "+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}

	for i := 10; i < 1010; i++ {
		w.Record(rec(i))
	}
	// Record did not wait for room: with the writer stuck retrying, all but
	// what the queue, the batches in its transactions and the next batch
	// hold were dropped.
	if st := w.Stats(); st.Dropped < 1000-64-10*(usage.DefaultTransactions+1) {
		t.Errorf("while Postgres is gone: %+v", st)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st2 := w.Stats()
	if st2.Written != 10 || st2.Lost == 0 || st2.Retries == 0 || st2.Lost+st2.Dropped != 1000 {
		t.Errorf("stats %+v: want every later event lost or dropped, with retries", st2)
	}
}
