package usage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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

// outageEnv sets the length of the Postgres outage in
// TestWriter_PostgresOutageLosesNothing (a Go duration); CI runs the
// default, the figure is RELAY_TEST_USAGE_OUTAGE=60s.
const outageEnv = "RELAY_TEST_USAGE_OUTAGE"

// cutProxy forwards TCP connections to a Postgres server until it is cut:
// then it closes every connection it holds and every new one at once, as a
// server that went away does, until it is restored. The machine's Postgres
// itself is never touched.
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
	})
	go p.serve()
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil || !p.track(up) {
			c.Close()
			if up != nil {
				up.Close()
			}
			continue
		}
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// track holds c so that a cut can close it; false while cut.
func (p *cutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// url is dbURL with its host replaced by the proxy's address.
func (p *cutProxy) url(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

func pgTarget(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5432")
	}
	return u.Host
}

// loadRecord is one request of the steady load: a project, one of eight
// relay keys, two statuses and some tokens, so that the rollups have
// something to disagree about.
func loadRecord(i int, project uuid.UUID) event.Record {
	return event.Record{
		RequestID: fmt.Sprintf("req_load_%08d", i), ClientRequestID: "same-client-id", At: time.Now(),
		CredentialKind: snapshot.CredentialRelayKey, CredentialID: uuid.NewSHA1(project, []byte{byte(i % 8)}), ProjectID: project,
		Model: "m", Status: 200 + 300*(i%7/6), Attempts: 1, Usage: wire.Usage{Input: int64(i%13 + 1), Output: int64(i%5 + 1)},
	}
}

// ledgerCheck compares the ledger of dbURL with want recorded events: one
// row per event, no duplicate, and every rollup (hour and day, detailed
// and coarse) summing to the ledger.
func ledgerCheck(t *testing.T, dbURL string, want int) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows, distinct, input, output int64
	if err := conn.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT request_id),
		coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) FROM usage_events`).Scan(&rows, &distinct, &input, &output); err != nil {
		t.Fatal(err)
	}
	if rows != int64(want) || distinct != rows {
		t.Errorf("usage_events holds %d rows (%d distinct request ids), want %d recorded events", rows, distinct, want)
	}
	q, err := conn.Query(t.Context(), `SELECT grain, detailed, sum(requests), sum(input_tokens), sum(output_tokens)
		FROM usage_rollups GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for q.Next() {
		var grain string
		var detailed bool
		var req, in, out int64
		if err := q.Scan(&grain, &detailed, &req, &in, &out); err != nil {
			t.Fatal(err)
		}
		seen++
		if req != rows || in != input || out != output {
			t.Errorf("rollups %s detailed=%v: %d requests, %d/%d tokens; the ledger: %d, %d/%d", grain, detailed, req, in, out, rows, input, output)
		}
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != 4 && want > 0 {
		t.Errorf("%d rollup sets, want 4", seen)
	}
}

// TestWriter_PostgresOutageLosesNothing records a steady load through a
// writer whose Postgres goes away (a proxy in front of it is cut) and comes
// back: every event recorded is in the ledger exactly once, and the rollups
// agree with it. Before the spool, batches were dropped after six tries.
func TestWriter_PostgresOutageLosesNothing(t *testing.T) {
	t.Parallel()
	outage := 5 * time.Second
	if v := os.Getenv(outageEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", outageEnv, err)
		}
		outage = d
	}
	dbURL := pgtest.NewDB(t)
	px := newCutProxy(t, pgTarget(t, dbURL))
	st, err := store.Open(t.Context(), px.url(t, dbURL))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := usage.NewWriter(usage.WriterConfig{Sink: st, SpoolDir: filepath.Join(t.TempDir(), "spool", "usage"),
		BatchSize: 200, FlushInterval: 50 * time.Millisecond, RetryBackoff: 50 * time.Millisecond,
		RetryBackoffMax: 500 * time.Millisecond, WriteTimeout: 5 * time.Second, Logger: testLogger(t)})

	// The steady load: one event a millisecond until stopped.
	project := uuid.New()
	var recorded atomic.Int64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				w.Record(loadRecord(int(recorded.Add(1)), project))
			}
		}
	}()
	poll.Until(t, 30*time.Second, "500 events written", func() bool { return w.Stats().Written >= 500 })

	px.setCut(true)
	cutAt := time.Now()
	poll.Until(t, 30*time.Second, "a batch spilled", func() bool { return w.Stats().Spilled > 0 })
	// The outage lasts its length, whatever the load does meanwhile.
	<-time.After(time.Until(cutAt.Add(outage)))
	during := w.Stats()
	px.setCut(false)
	restoredAt := time.Now()
	// Replaying takes a fraction of the outage (more on a loaded machine).
	poll.Until(t, 30*time.Second+3*outage, "the spool replayed", func() bool { return w.Stats().SpoolEvents == 0 })
	replay := time.Since(restoredAt)
	after := recorded.Load()
	poll.Until(t, 30*time.Second, "500 more events recorded", func() bool { return recorded.Load() >= after+500 })
	close(stop)
	<-stopped

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s := w.Stats()
	t.Logf("outage %v: %d events recorded, %d spilled (spool %d bytes at the end of the outage), %d replayed in %v, %d written, %d duplicates, %d lost, %d dropped",
		outage, recorded.Load(), s.Spilled, during.SpoolBytes, s.Replayed, replay.Round(time.Millisecond), s.Written, s.Duplicates, s.Lost, s.Dropped)
	if s.Lost != 0 || s.Dropped != 0 || s.Spilled == 0 || s.Replayed < s.Spilled || s.SpoolEvents != 0 || s.SpoolBytes != 0 {
		t.Errorf("stats %+v: want nothing lost or dropped, and everything spilled replayed", s)
	}
	if s.Written != uint64(recorded.Load()) {
		t.Errorf("written %d of %d recorded", s.Written, recorded.Load())
	}
	ledgerCheck(t, dbURL, int(recorded.Load()))
}

// failingSink is a Postgres that never answers.
type failingSink struct{}

func (failingSink) IngestUsageEvents(context.Context, []store.UsageEvent) (int64, error) {
	return 0, errors.New("dial tcp: connection refused")
}

// TestWriter_ReplaysSpoolOfKilledProcess: a writer that could not reach
// Postgres spilled its batches and was then dropped without Close (what a
// SIGKILL leaves: whole segments and perhaps a half-written temporary
// file). The next writer on the same spool replays every event on start,
// once, even those of a segment whose batch had already been committed.
func TestWriter_ReplaysSpoolOfKilledProcess(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "spool", "usage")
	dead := usage.NewWriter(usage.WriterConfig{Sink: failingSink{}, SpoolDir: dir, BatchSize: 50,
		FlushInterval: 10 * time.Millisecond, RetryBackoff: time.Hour, RetryBackoffMax: time.Hour})
	project := uuid.New()
	const n = 420
	recs := make([]event.Record, n)
	for i := range recs {
		recs[i] = loadRecord(i, project)
		dead.Record(recs[i])
	}
	poll.Until(t, 30*time.Second, "every event spilled", func() bool { return dead.Stats().Spilled == n })
	// A spill the kill interrupted: never renamed into place.
	if err := os.WriteFile(filepath.Join(dir, "99999999999999999999-7.usage.tmp"), []byte("half a segm"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The first batch had been committed, but the process died before
	// removing its segment.
	dbURL := pgtest.NewDB(t)
	st, err := store.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first := make([]store.UsageEvent, 0, 50)
	for i := range 50 {
		ev := usage.NewEvent(&recs[i], nil)
		first = append(first, ev.Row())
	}
	if _, err := st.IngestUsageEvents(t.Context(), first); err != nil {
		t.Fatal(err)
	}

	next := usage.NewWriter(usage.WriterConfig{Sink: st, SpoolDir: dir, FlushInterval: 10 * time.Millisecond})
	poll.Until(t, 30*time.Second, "the next writer replays the spool", func() bool { return next.Stats().SpoolEvents == 0 })
	if err := next.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := next.Stats()
	if s.Replayed != n || s.Duplicates != 50 || s.Lost != 0 || s.SpoolBytes != 0 {
		t.Errorf("stats %+v: want %d replayed, the 50 committed ones found there", s, n)
	}
	ledgerCheck(t, dbURL, n)
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left in the spool: %v", left)
	}

	// The dropped writer is stopped only now, so that it could not have
	// flushed anything at Close.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_ = dead.Close(ctx)
}

// testLogger logs the writer's warnings to t when RELAY_TEST_USAGE_LOG is set.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("RELAY_TEST_USAGE_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}
