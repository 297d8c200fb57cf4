package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/config"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/secret"
)

// tcpProxy forwards connections to target until cut, after which it
// refuses new ones and has closed the old: a database that went away.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []net.Conn // guarded by mu
	cut   bool       // guarded by mu
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	t.Cleanup(p.Cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(c, up) {
				return
			}
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	p.conns = append(p.conns, cs...)
	return true
}

// Cut closes the listener and every connection through it.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// throughProxy rewrites a postgres URL to go through p.
func throughProxy(t *testing.T, dbURL string, p *tcpProxy) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

func getJSON(t *testing.T, url, token string, into any) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if into != nil {
		json.NewDecoder(resp.Body).Decode(into)
	}
	return resp.StatusCode, resp.Header
}

func chat(t *testing.T, base, key string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"demo-gpt","messages":[{"role":"user","content":"still there?"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestServe_PostgresDown cuts the connection to Postgres under a running
// relay: the control API answers 503 database_unavailable with Retry-After
// (not 500 internal), the control plane's /readyz says why, and the
// inference plane keeps serving from its snapshot.
func TestServe_PostgresDown(t *testing.T) {
	const token = "limits-admin-token-0123456789"
	db := pgtest.NewDB(t)
	u, _ := url.Parse(db)
	pg := newTCPProxy(t, u.Host)
	p := startRelay(t, throughProxy(t, db, pg), true, "RELAY_DEMO=true", "RELAY_ADMIN_TOKEN="+token,
		"RELAY_MASTER_KEY="+secret.NewKey(), "RELAY_SHUTDOWN_TIMEOUT=2s")
	waitReady(t, p.inference)
	waitReady(t, p.control)
	if code, _ := getJSON(t, p.control+"/api/teams", token, nil); code != 200 {
		t.Fatalf("teams with Postgres up = %d", code)
	}

	pg.Cut()
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	var code int
	var hdr http.Header
	deadline := time.Now().Add(20 * time.Second)
	poll.Until(t, time.Until(deadline), "the control API answers 503 with Postgres down", func() bool {
		code, hdr = getJSON(t, p.control+"/api/teams", token, &body)
		if code != 503 && code != 200 {
			t.Fatalf("teams with Postgres down = %d %+v, want 503", code, body)
		}
		return code == 503
	})
	if code != 503 || body.Error.Code != "database_unavailable" || hdr.Get("Retry-After") == "" {
		t.Fatalf("teams with Postgres down = %d %+v Retry-After %q", code, body, hdr.Get("Retry-After"))
	}
	// /readyz checks at most once a second: poll.
	var ready struct{ Status, Reason string }
	poll.Until(t, time.Until(deadline), "the control plane's /readyz answers 503", func() bool {
		code, _ = getJSON(t, p.control+"/readyz", "", &ready)
		return code == 503
	})
	if code != 503 || ready.Status != "database_unavailable" || ready.Reason == "" {
		t.Fatalf("control readyz with Postgres down = %d %+v", code, ready)
	}
	if code, _ := getJSON(t, p.inference+"/readyz", "", nil); code != 200 {
		t.Fatalf("inference readyz with Postgres down = %d", code)
	}
	if code := chat(t, p.inference, p.relayKey); code != 200 {
		t.Fatalf("inference with Postgres down = %d", code)
	}
}

// TestServe_SIGTERMDrains: after SIGTERM /readyz answers 503 while the
// listener still accepts and serves, for the drain delay; a second signal
// ends the process at once.
func TestServe_SIGTERMDrains(t *testing.T) {
	p := startRelay(t, pgtest.NewDB(t), true, "RELAY_DEMO=true", "RELAY_MASTER_KEY="+secret.NewKey(), "RELAY_DRAIN_DELAY=10m")
	waitReady(t, p.inference)
	p.cmd.Process.Signal(syscall.SIGTERM)
	poll.Until(t, 20*time.Second, "/readyz answers 503 after SIGTERM", func() bool {
		code, _ := getJSON(t, p.inference+"/readyz", "", nil)
		return code == 503
	})
	if code := chat(t, p.inference, p.relayKey); code != 200 {
		t.Fatalf("a request on a new connection during the drain delay = %d", code)
	}
	if code, _ := getJSON(t, p.control+"/readyz", "", nil); code != 503 {
		t.Fatalf("control readyz while draining = %d", code)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("a second SIGTERM did not end the process")
	}
}

func TestRun_HelpListsTheCommands(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		var out, errOut strings.Builder
		if err := run(context.Background(), []string{arg}, os.Getenv, &out, &errOut); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		for _, cmd := range []string{"serve", "migrate", "mock-upstream", "apply", "export", "keys", "token", "rotate-master-key", "version"} {
			if !strings.Contains(out.String(), "\n  "+cmd+" ") {
				t.Fatalf("relay %s does not list %s:\n%s", arg, cmd, out.String())
			}
		}
	}
	var errOut strings.Builder
	if err := run(context.Background(), []string{"serve", "--help"}, os.Getenv, io.Discard, &errOut); err != nil ||
		!strings.Contains(errOut.String(), "RELAY_MAX_CONNECTIONS") {
		t.Fatalf("serve --help: %v\n%s", err, errOut.String())
	}
}

func TestLimits_RedisBuildsNothingInProcess(t *testing.T) {
	redisURL := os.Getenv("RELAY_TEST_REDIS_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	svcs := &services{log: log}
	cfg := &config.Config{RedisURL: redisURL, RedisPrefix: "relay-limits-test:", RedisTimeout: time.Second}
	limiter, _, err := limits(cfg, svcs, log)
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.stop(context.Background())
	if strings.Contains(logs.String(), "process memory") || strings.Contains(logs.String(), "no RELAY_REDIS_URL") {
		t.Fatalf("built an in-process limiter beside Redis:\n%s", logs.String())
	}
	if !limiter.Stats().RedisAvailable {
		t.Fatal("the limiter is not on Redis")
	}
	var names []string
	for _, s := range svcs.list {
		names = append(names, s.name)
	}
	if !slices.Equal(names, []string{"redis client", "rate limiter", "breakers"}) {
		t.Fatalf("components %v", names)
	}
}

func TestServices_StopInReverseWithinTheDeadline(t *testing.T) {
	var stopped []string
	svcs := &services{log: slog.New(slog.DiscardHandler)}
	for _, name := range []string{"database", "ledger", "stuck", "loader"} {
		svcs.add(name, func(ctx context.Context) error {
			stopped = append(stopped, name)
			if name == "stuck" {
				<-ctx.Done() // a component that will not stop in time
				return ctx.Err()
			}
			return nil
		})
	}
	ran := make(chan struct{})
	svcs.goRun(context.Background(), "runner", func(ctx context.Context) error {
		close(ran)
		<-ctx.Done()
		stopped = append(stopped, "runner")
		return nil
	})
	<-ran
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	svcs.stop(ctx)
	if want := []string{"runner", "loader", "stuck", "ledger", "database"}; !slices.Equal(stopped, want) {
		t.Fatalf("stopped %v, want %v", stopped, want)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
