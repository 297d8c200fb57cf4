package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pgtest"
)

// TestMain lets the test binary be the harness's TLS mock, as the relay-bench
// binary is when the harness runs itself again (startTLSMock).
func TestMain(m *testing.M) {
	if dir := os.Getenv(tlsMockEnv); dir != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := serveTLSMock(ctx, dir, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRun_Smoke runs the whole harness briefly: it builds relay, starts the
// mock, the TLS mock and Relay, measures every target (direct, Relay plain,
// Relay to TLS over HTTP/2 and HTTP/1.1) in both modes and prints a table
// with no errors.
func TestRun_Smoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds relay and runs two processes")
	}
	cfg := config{
		duration:    300 * time.Millisecond,
		slice:       150 * time.Millisecond,
		warmup:      50 * time.Millisecond,
		concurrency: []int{1, 4},
		modes:       []mode{nonStream, stream},
		databaseURL: pgtest.ServerURL(t), // RELAY_TEST_DATABASE_URL, or pgtest's embedded server
		maxRequests: 100_000,
		timeout:     10 * time.Second,
		heldStreams: 20,
		tls:         true,
	}
	var out bytes.Buffer
	logs := &syncBuffer{}
	rep, err := run(t.Context(), cfg, &out, logs)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, logs)
	}
	t.Logf("\n%s", out.String())

	if got, want := len(rep.rows), 2*2*4; got != want {
		t.Fatalf("%d measurements, want %d", got, want)
	}
	for _, m := range rep.rows {
		if m.errors != 0 || len(m.samples) == 0 {
			t.Errorf("%s ×%d %s: %d ok, %d errors (first: %s)", m.mode, m.conc, m.target, len(m.samples), m.errors, m.firstErr)
		}
		if m.mode == stream && m.stats().ttfb50 <= 0 {
			t.Errorf("%s ×%d %s: no time to first byte", m.mode, m.conc, m.target)
		}
	}
	if len(rep.pairs()) != 12 {
		t.Errorf("%d direct/gateway pairs, want 12", len(rep.pairs()))
	}
	if len(rep.mem) != 4 {
		t.Fatalf("memory of %d targets, want 4", len(rep.mem))
	}
	for _, m := range rep.mem {
		tlsRoute := m.target == targetTLS2 || m.target == targetTLS1
		if m.idle <= 0 || m.peak < m.idle || (m.perStream == -1) != tlsRoute {
			t.Errorf("%s: RSS idle %d, peak %d, per held stream %d", m.target, m.idle, m.peak, m.perStream)
		}
	}
	for _, m := range rep.rows {
		if strings.HasPrefix(m.target, targetRelay) && (m.gw.cpu < 0 || m.gw.writes <= 0) {
			t.Errorf("%s ×%d %s: cpu %v, writes %d", m.mode, m.conc, m.target, m.gw.cpu, m.gw.writes)
		}
		// Every TLS route's handshakes are counted; a handful at most
		// (the warm-up opened the connections), never one per request.
		tlsRoute := m.target == targetTLS2 || m.target == targetTLS1
		if tlsRoute && (m.handshakes < 0 || m.handshakes > int64(m.conc)) || !tlsRoute && m.handshakes != -1 {
			t.Errorf("%s ×%d %s: %d TLS handshakes over %d requests", m.mode, m.conc, m.target, m.handshakes, len(m.samples))
		}
	}
	for _, want := range []string{"| nonstream | 1 | direct |", "| nonstream | 4 | relay |", "| stream | 4 | direct |", "| stream | 1 | relay |", "| relay | ",
		"| nonstream | 4 | relay-tls-h2 |", "| stream | 1 | relay-tls-h1 |", "| CPU / request (plain) | TLS h2 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

func TestParseConfig_Flags(t *testing.T) {
	env := func(k string) string { return map[string]string{"RELAY_TEST_DATABASE_URL": "postgres://t@h/db"}[k] }
	cfg, err := parseConfig([]string{"-duration", "2s", "-concurrency", "1, 8", "-mode", "stream"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.duration != 2*time.Second || !slices.Equal(cfg.concurrency, []int{1, 8}) ||
		!slices.Equal(cfg.modes, []mode{stream}) || cfg.databaseURL != "postgres://t@h/db" {
		t.Fatalf("cfg = %+v", cfg)
	}
	for _, args := range [][]string{
		{"-concurrency", "0"},
		{"-concurrency", "1,x"},
		{"-mode", "batch"},
		{"-duration", "0s"},
		{"extra"},
	} {
		if _, err := parseConfig(args, env, io.Discard); err == nil {
			t.Errorf("parseConfig(%q) accepted", args)
		}
	}
}

func TestParseRedisCPU(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:0.422413\r\nused_cpu_user:1.5\r\nused_cpu_sys_children:0.000000\r\n"
	if got, want := parseRedisCPU(info), 1922413*time.Microsecond; got != want {
		t.Errorf("parseRedisCPU = %v, want %v", got, want)
	}
	if got := parseRedisCPU("# CPU\r\nused_cpu_sys:1\r\n"); got != -1 {
		t.Errorf("without used_cpu_user: %v, want -1", got)
	}
}

func TestPercentile_NearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{0.5: 50, 0.9: 90, 0.99: 99, 1: 100} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%v = %d, want %d", p*100, got, want)
		}
	}
	if got := percentile(d[:1], 0.99); got != 1 {
		t.Errorf("p99 of one = %d", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of none = %d", got)
	}
}

func TestKeepTail_LastBytesAcrossReads(t *testing.T) {
	msg := strings.Repeat("data: {\"x\":1}\n\n", 20) + "data: [DONE]\n\n"
	for size := 1; size <= len(msg); size++ {
		var tail [64]byte
		n := 0
		for b := []byte(msg); len(b) > 0; {
			k := min(size, len(b))
			n = keepTail(&tail, n, b[:k])
			b = b[k:]
		}
		if want := msg[len(msg)-64:]; string(tail[:n]) != want {
			t.Fatalf("reads of %d: tail %q, want %q", size, tail[:n], want)
		}
	}
}

// syncBuffer is a bytes.Buffer the harness's goroutines and the children's
// output copiers may write to at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
