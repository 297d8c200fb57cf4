package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-llm/relay/internal/natstest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/usage/usagetest"
)

// startConsumer starts a `relay usage-consume` process on the cluster's
// ledger and the usage stream; it is stopped when the test ends unless the
// test killed it first.
func startConsumer(t *testing.T, dbURL string, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(relayBin, "usage-consume", "--log-format", "text")
	cmd.Env = append(append(os.Environ(), "RELAY_DATABASE_URL="+dbURL), env...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
	})
	return cmd
}

// TestMultipod_UsageThroughJetStream runs three `relay serve` processes
// whose usage sink is a JetStream stream (RELAY_USAGE_SINK=jetstream) and
// two `relay usage-consume` processes loading it into the ledger. While the
// pods answer, one consumer is SIGKILLed and started again (what it held
// unacknowledged goes to the other after RELAY_USAGE_ACK_WAIT) and the NATS
// server is killed and restarted (the pods spool and replay). Every request
// the pods answered is in the ledger exactly once, and the rollups sum to
// the ledger.
func TestMultipod_UsageThroughJetStream(t *testing.T) {
	t.Parallel()
	nats := natstest.Start(t)
	stream := fmt.Sprintf("MP_USAGE_%d", time.Now().UnixNano())
	streamEnv := []string{"RELAY_NATS_URL=" + nats.URL(), "RELAY_USAGE_STREAM=" + stream}
	c := newCluster(t, 3, redistest.URL(t), "100ms", append([]string{"RELAY_USAGE_SINK=jetstream"}, streamEnv...)...)
	consumerEnv := append([]string{"RELAY_USAGE_ACK_WAIT=2s"}, streamEnv...)
	first := startConsumer(t, c.db, consumerEnv)
	startConsumer(t, c.db, consumerEnv)
	key := c.mint("load")

	var (
		mu  sync.Mutex
		ids = map[string]bool{}
	)
	// send sends n requests, spread over the pods by 8 callers, and keeps
	// the request ids of those answered.
	send := func(n int) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range next {
					status, id := podChat(c.pods[i%len(c.pods)].inference, key, "mp-chat")
					if status == 200 && id != "" {
						mu.Lock()
						ids[id] = true
						mu.Unlock()
					}
				}
			})
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	conn, err := pgx.Connect(t.Context(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ledgerRows := func() (n int) {
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM usage_events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const perPhase = 150
	send(perPhase)
	// A consumer killed while the stream is being loaded, started again.
	poll.Until(t, time.Minute, "the consumers loading the stream", func() bool { return ledgerRows() > 0 })
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	send(perPhase)
	startConsumer(t, c.db, consumerEnv)
	// The NATS server killed while the pods answer, until every pod has
	// spooled a batch it could not publish; then back.
	nats.Kill()
	poll.Until(t, 2*time.Minute, "every pod spooling while NATS is away", func() bool {
		send(30)
		for _, p := range c.pods {
			if scrapeGauge(t, p.control, "relay_usage_events_spilled_total") <= 0 {
				return false
			}
		}
		return true
	})
	nats.Restart()
	send(perPhase)
	if len(ids) < 3*perPhase {
		t.Fatalf("only %d requests answered 200", len(ids))
	}
	want := make([]string, 0, len(ids))
	for id := range ids {
		want = append(want, id)
	}
	var found, rows, distinct int
	poll.Until(t, 2*time.Minute, "every answered request in the ledger", func() bool {
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE request_id = ANY($1)), count(*), count(DISTINCT request_id) FROM usage_events`,
			want).Scan(&found, &rows, &distinct); err != nil {
			t.Fatal(err)
		}
		return found == len(want)
	})
	if rows != distinct {
		t.Errorf("the ledger holds %d rows for %d request ids: an event landed twice", rows, distinct)
	}
	usagetest.RollupsMatchLedger(t, c.db)
	t.Logf("%d requests answered, all in the ledger once (%d rows)", len(want), rows)
}
