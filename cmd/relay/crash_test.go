package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
)

// TestServe_SIGKILLLosesNoAnsweredUsage answers requests through a real
// `relay serve`, kills it with SIGKILL the moment the last answer is read,
// and starts another process on the same data directory: the ledger then
// holds one row for every request that was answered, none twice. Before
// the journal, the events of the last second (the queue and the partial
// batch, in memory only) were lost.
func TestServe_SIGKILLLosesNoAnsweredUsage(t *testing.T) {
	t.Parallel()
	up := mockupstream.New(mockupstream.Options{})
	ts := httptest.NewServer(up)
	t.Cleanup(ts.Close)
	dataDir, err := os.MkdirTemp("", "relay-crash-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dataDir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dataDir) })
	c := &cluster{t: t, db: pgtest.NewDB(t), env: []string{
		"RELAY_DEMO=false",
		"RELAY_MASTER_KEY=" + secret.NewKey(),
		"RELAY_ADMIN_TOKEN=" + e2eAdminToken,
		"RELAY_DATA_DIR=" + dataDir, // after startRelay's own: this one wins
		"RELAY_SECRET_MULTIPOD_GOOD_KEY=" + multipodGoodKey,
		"RELAY_SECRET_MULTIPOD_REFUSED_KEY=" + multipodRefusedKey,
	}}
	victim := c.start()
	c.apply(fmt.Sprintf(multipodCatalog, ts.URL, multipodOutputPrice, multipodBudget))
	key := c.mint("load")

	const callers, each = 8, 60
	var mu sync.Mutex
	var answered []string
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				if status, id := podChat(victim.inference, key, "mp-chat"); status == 200 && id != "" {
					mu.Lock()
					answered = append(answered, id)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.cmd.Wait()
	if len(answered) < callers*each*9/10 {
		t.Fatalf("only %d of %d requests answered", len(answered), callers*each)
	}

	st, err := store.Open(t.Context(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	count := func() (rows, distinct int) {
		if err := st.Pool().QueryRow(t.Context(), `SELECT count(*), count(DISTINCT request_id) FROM usage_events WHERE request_id = ANY($1)`,
			answered).Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		return rows, distinct
	}
	atKill, _ := count()

	c.pods = nil
	c.start() // the same data directory: it replays what the killed one journaled
	start := time.Now()
	poll.Until(t, 30*time.Second, "every answered request in usage_events", func() bool {
		rows, _ := count()
		return rows >= len(answered)
	})
	rows, distinct := count()
	t.Logf("%d requests answered; %d in the ledger at the kill, %d after the restart (%s)", len(answered), atKill, rows, time.Since(start).Round(time.Millisecond))
	if rows != len(answered) || distinct != rows {
		t.Errorf("ledger: %d rows, %d distinct, for %d answered requests", rows, distinct, len(answered))
	}
}
