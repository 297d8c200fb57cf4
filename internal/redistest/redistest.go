// Package redistest gives tests a real Redis: the one RELAY_TEST_REDIS_URL
// names (CI), else a private redis-server on a free port when the binary is
// installed, else miniredis (pure Go, runs Lua). Tests share a server only
// through RELAY_TEST_REDIS_URL, so every test keeps its keys under its own
// Prefix and never flushes. StartCluster gives a test a 3-master Redis
// Cluster of its own (cluster.go).
//
// It is test support: nothing outside _test.go files imports it.
package redistest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// EnvURL names the shared Redis that CI provides.
const EnvURL = "RELAY_TEST_REDIS_URL"

// URL returns a Redis URL for t: RELAY_TEST_REDIS_URL when set, else a
// server of t's own (see Start). Keep keys under Prefix(t).
func URL(t testing.TB) string {
	t.Helper()
	if u := strings.TrimSpace(os.Getenv(EnvURL)); u != "" {
		return u
	}
	return Start(t).URL()
}

// Prefix returns a key prefix no other test uses: "test:<name>:<random>:".
func Prefix(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if r == ' ' || r == '{' || r == '}' || r == ':' {
			return '_'
		}
		return r
	}, t.Name())
	prefix := "test:" + name + ":" + hex.EncodeToString(b[:]) + ":"
	if u := strings.TrimSpace(os.Getenv(EnvURL)); u != "" {
		// The shared Redis outlives the test: leave none of its keys behind.
		t.Cleanup(func() { deleteKeys(u, prefix) })
	}
	return prefix
}

// deleteKeys deletes every key under prefix on the Redis at url.
func deleteKeys(url, prefix string) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pattern strings.Builder
	for _, r := range prefix {
		if strings.ContainsRune(`*?[]\`, r) {
			pattern.WriteByte('\\')
		}
		pattern.WriteRune(r)
	}
	pattern.WriteByte('*')
	var keys []string
	it := c.Scan(ctx, 0, pattern.String(), 1000).Iterator()
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		c.Del(ctx, keys[:n]...)
		keys = keys[n:]
	}
}

// Client returns a go-redis client for url, closed when t ends.
func Client(t testing.TB, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("redistest: parse %q: %v", url, err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Server is a Redis that one test owns: it may stop, restart and pause it.
type Server struct {
	t     testing.TB
	port  int
	mini  *miniredis.Miniredis
	extra []string // more redis-server arguments (a cluster node's)

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil while stopped, and for miniredis
	exited chan struct{} // closed when cmd has exited
}

// Start returns a Redis for t alone: a redis-server on a free port when
// the binary is on PATH, else miniredis. It is stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t}
	if _, err := exec.LookPath("redis-server"); err != nil {
		s.mini = miniredis.NewMiniRedis()
		if err := s.mini.Start(); err != nil {
			t.Fatalf("redistest: start miniredis: %v", err)
		}
		t.Cleanup(s.mini.Close)
		return s
	}
	var err error
	for range 5 { // another process may take the free port first
		if s.port, err = freePort(); err != nil {
			continue
		}
		if err = s.launch(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: start redis-server: %v", err)
	}
	t.Cleanup(s.kill)
	return s
}

// Real reports whether s is a redis-server (not miniredis).
func (s *Server) Real() bool { return s.mini == nil }

// Addr is host:port.
func (s *Server) Addr() string {
	if s.mini != nil {
		return s.mini.Addr()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop shuts the server down without saving (SHUTDOWN NOSAVE); clients see
// connections refused until Restart.
func (s *Server) Stop() {
	s.t.Helper()
	if s.mini != nil {
		s.mini.Close()
		return
	}
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	_ = c.Do(context.Background(), "SHUTDOWN", "NOSAVE").Err() // the connection drops: no reply
	_ = c.Close()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Restart starts the server again on the same address, empty.
func (s *Server) Restart() {
	s.t.Helper()
	if s.mini != nil {
		if err := s.mini.Restart(); err != nil {
			s.t.Fatalf("redistest: restart miniredis: %v", err)
		}
		return
	}
	if err := s.launch(); err != nil {
		s.t.Fatalf("redistest: restart redis-server: %v", err)
	}
}

// Pause makes the server hold every client's commands for d (CLIENT
// PAUSE): Redis alive but too slow. miniredis cannot; the test is skipped.
func (s *Server) Pause(d time.Duration) {
	s.t.Helper()
	if s.mini != nil {
		s.t.Skip("redistest: miniredis cannot CLIENT PAUSE")
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	if err := c.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
		s.t.Fatalf("redistest: CLIENT PAUSE: %v", err)
	}
}

func (s *Server) launch() error {
	var out bytes.Buffer
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning"}, s.extra...)
	cmd := exec.Command("redis-server", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited: %s", strings.TrimSpace(out.String()))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("redis-server did not answer: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-exited
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
