package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/client"
)

// relayBin is built once by TestMain so tests can run real relay processes.
var relayBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "relay-bin-")
	if err != nil {
		panic(err)
	}
	relayBin = filepath.Join(dir, "relay")
	out, err := exec.Command("go", "build", "-o", relayBin, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running `relay serve`.
type proc struct {
	cmd                *exec.Cmd
	inference, control string // http://host:port
	relayKey           string // printed demo key, when it seeded
	stdout             chan string
}

var upLine = regexp.MustCompile(`Relay is up: inference on (\S+), control on (\S+)`)
var keyLine = regexp.MustCompile(`Demo relay key .*: (sk-wr-\S+)`)

func startRelay(t testing.TB, dbURL string, seeds bool, extraEnv ...string) *proc {
	t.Helper()
	cmd := exec.Command(relayBin, "serve", "--port", "0", "--control-port", "0", "--log-format", "text")
	dataDir, err := os.MkdirTemp("", "relay-data-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dataDir, 0o755) // the embedded Postgres runs as an unprivileged user under root
	t.Cleanup(func() { os.RemoveAll(dataDir) })
	cmd.Env = append(os.Environ(), "RELAY_DATABASE_URL="+dbURL, "RELAY_SNAPSHOT_DEBOUNCE=100ms", "RELAY_DATA_DIR="+dataDir, "RELAY_DRAIN_DELAY=0")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdout: make(chan string, 100)}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.stdout <- sc.Text()
		}
		close(p.stdout)
	}()
	deadline := time.After(60 * time.Second)
	for p.inference == "" {
		select {
		case line, ok := <-p.stdout:
			if !ok {
				t.Fatal("relay exited before it was up")
			}
			if m := upLine.FindStringSubmatch(line); m != nil {
				p.inference = "http://" + strings.Replace(m[1], "[::]", "127.0.0.1", 1)
				p.control = "http://" + strings.Replace(m[2], "[::]", "127.0.0.1", 1)
			}
		case <-deadline:
			t.Fatal("relay did not come up within 60s")
		}
	}
	// The key line follows the up line when the demo was seeded.
	for seeds && p.relayKey == "" {
		select {
		case line, ok := <-p.stdout:
			if !ok {
				t.Fatal("relay exited before printing the demo key")
			}
			if m := keyLine.FindStringSubmatch(line); m != nil {
				p.relayKey = m[1]
			}
		case <-deadline:
			t.Fatal("no demo key within 60s")
		}
	}
	go func() {
		for range p.stdout { // keep the pipe drained
		}
	}()
	return p
}

// waitReady polls /readyz until 200 or the deadline.
func waitReady(t testing.TB, base string) {
	t.Helper()
	poll.Until(t, 30*time.Second, base+" is ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func listModels(t *testing.T, base, key string) []string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data []struct{ ID string } `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range body.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// TestServe_SecondProcessFollowsAWrite runs two relay processes on one
// database: the first seeds the demo, the second serves the same key, and a
// row written straight into Postgres reaches the second's snapshot.
func TestServe_SecondProcessFollowsAWrite(t *testing.T) {
	db := pgtest.NewDB(t)
	// Both pods share the master key, as a deployment's pods would.
	mk := "RELAY_MASTER_KEY=" + secret.NewKey()
	const adminToken = "e2e-admin-token-0123456789abcdef"
	first := startRelay(t, db, true, "RELAY_DEMO=true", mk, "RELAY_ADMIN_TOKEN="+adminToken)
	if first.relayKey == "" {
		t.Fatal("the first process did not print a demo relay key")
	}
	second := startRelay(t, db, false, "RELAY_DEMO=false", mk, "RELAY_ADMIN_TOKEN="+adminToken)
	waitReady(t, first.inference)
	waitReady(t, second.inference)
	if got := listModels(t, second.inference, first.relayKey); len(got) == 0 {
		t.Fatal("second process does not know the demo key's models")
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	if _, err := st.Pool().Exec(context.Background(), `WITH m AS (INSERT INTO models (name) VALUES ('fresh-model') RETURNING id)
		INSERT INTO bindings (model_id, host_id, shape, upstream_model)
		SELECT m.id, h.id, 'openai', 'gpt-fresh' FROM m, hosts h WHERE h.slug = 'relay-mock'`); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the write reaches the second process", func() bool {
		ids := listModels(t, second.inference, first.relayKey)
		return strings.Contains(strings.Join(ids, ","), "fresh-model")
	})
	t.Logf("write visible in the second process after %s", time.Since(start))

	// A request through the second process lands in the usage ledger, in the
	// control API's usage endpoints and in its /metrics.
	asked := time.Now().UTC()
	req, _ := http.NewRequest("POST", second.inference+"/v1/chat/completions",
		strings.NewReader(`{"model":"demo-gpt","messages":[{"role":"user","content":"count me"}]}`))
	req.Header.Set("Authorization", "Bearer "+first.relayKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat through the second process: %d", resp.StatusCode)
	}
	poll.Until(t, 15*time.Second, "the usage event is written", func() bool {
		var n int
		var tokens int64
		err := st.Pool().QueryRow(context.Background(),
			`SELECT count(*), coalesce(sum(input_tokens + output_tokens), 0) FROM usage_events WHERE model = 'demo-gpt' AND status = 200`).Scan(&n, &tokens)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1 && tokens > 0
	})
	checkUsageAPI(t, first.control, adminToken, asked, resp.Header.Get("X-Relay-Request-Id"))
	mresp, err := http.Get(second.control + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mbody, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if mresp.StatusCode != 200 || !strings.Contains(string(mbody), "relay_requests_total") {
		t.Fatalf("/metrics: %d, no relay_requests_total", mresp.StatusCode)
	}

	// SIGTERM drains and exits cleanly.
	second.cmd.Process.Signal(syscall.SIGTERM)
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("second process exit: %v", err)
	}
}

// TestServe_EmbeddedDefault is `make run` on a fresh machine: no database
// URL, so Relay starts its own Postgres, seeds the demo and prints a key that
// works; the curl it prints is the request made here.
func TestServe_EmbeddedDefault(t *testing.T) {
	p := startRelay(t, "", true)
	waitReady(t, p.inference)
	req, _ := http.NewRequest("POST", p.inference+"/v1/chat/completions",
		strings.NewReader(`{"model":"demo-gpt","messages":[{"role":"user","content":"Hello, Relay"}]}`))
	req.Header.Set("Authorization", "Bearer "+p.relayKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "chat.completion") {
		t.Fatalf("demo curl: %d %s", resp.StatusCode, body)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

func TestRun_InvalidConfigIsOneLine(t *testing.T) {
	err := run(context.Background(), []string{"serve"}, func(k string) string {
		return map[string]string{"RELAY_PORT": "eighty"}[k]
	}, io.Discard, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "RELAY_PORT:") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
}

func TestRun_Version(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"version"}, os.Getenv, &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "relay ") {
		t.Fatalf("version: %q %v", out.String(), err)
	}
}

// checkUsageAPI reads the one demo-gpt request back through the generated
// control API client: in the summary by model, and as an event, in JSON and CSV.
func checkUsageAPI(t *testing.T, control, token string, asked time.Time, requestID string) {
	t.Helper()
	ctx := t.Context()
	c, err := client.NewClientWithResponses(control, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	from, model := asked.Add(-time.Minute), "demo-gpt"
	by := []models.UsageGroupBy{models.UsageGroupByModel, models.UsageGroupByStatus}
	sum, err := c.GetUsageSummaryWithResponse(ctx, &models.GetUsageSummaryParams{From: &from, GroupBy: &by})
	if err != nil || sum.JSON200 == nil {
		t.Fatalf("usage summary: %v %s", err, sum.Body)
	}
	var found bool
	for _, r := range sum.JSON200.Rows {
		if *r.Group.Model == model {
			found = true
			if *r.Group.Status != 200 || r.Totals.Requests != 1 || r.Totals.InputTokens == 0 || r.Totals.OutputTokens == 0 || r.Totals.Errors != 0 {
				t.Errorf("usage summary row = %+v", r)
			}
		}
	}
	if !found {
		t.Errorf("usage summary has no %s row: %+v", model, sum.JSON200.Rows)
	}
	ev, err := c.ListUsageEventsWithResponse(ctx, &models.ListUsageEventsParams{From: &from, Model: &model})
	if err != nil || ev.JSON200 == nil {
		t.Fatalf("usage events: %v %s", err, ev.Body)
	}
	if items := ev.JSON200.Items; len(items) != 1 || items[0].RequestID != requestID || items[0].Status != 200 ||
		items[0].InboundShape != "openai_chat" || items[0].RelayKeyID == nil || items[0].ProjectID == nil || items[0].HostID == nil {
		t.Errorf("usage events = %+v, want the request %s", items, requestID)
	}
	resp, err := c.ListUsageEvents(ctx, &models.ListUsageEventsParams{From: &from, Model: &model, Format: ptrTo(models.UsageEventsFormatCsv)})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(rows) != 2 || rows[0][0] != "request_id" || rows[1][0] != requestID {
		t.Errorf("usage csv = %v, %v", rows, err)
	}
}

func ptrTo[T any](v T) *T { return &v }
