// Package natstest gives tests a real NATS server with JetStream: a private
// `nats-server -js` on a free port with its own store directory, which a
// test may stop and start again (same port, same store: what the stream held
// survives, as it does on a real restart). Without the nats-server binary
// the test is skipped, loudly, except on CI (CI set), where it fails: CI
// installs Debian's nats-server package.
//
// It is test support: nothing outside _test.go files imports it.
package natstest

import (
	"bytes"
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
)

// Server is a nats-server one test owns.
type Server struct {
	t    testing.TB
	port int
	dir  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// logBuffer is the server's output, written by exec's copying goroutine and
// read by launch.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start runs a nats-server with JetStream for t; it is killed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("nats-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("natstest: nats-server is not installed (apt-get install nats-server); CI must have it")
		}
		t.Skip("SKIP natstest: nats-server is not installed (apt-get install nats-server): the JetStream usage sink is not tested")
	}
	s := &Server{t: t, dir: t.TempDir()}
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
		t.Fatalf("natstest: start nats-server: %v", err)
	}
	t.Cleanup(s.Kill)
	return s
}

// URL is the server's nats:// URL.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// Kill stops the server at once (SIGKILL): what it had not written to its
// store is lost, as in a crash. Clients see connections refused until
// Restart.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Stop shuts the server down cleanly (SIGTERM, then SIGKILL after 10 s).
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Restart starts the server again on the same port over the same store.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.launch(); err != nil {
		s.t.Fatalf("natstest: restart nats-server: %v", err)
	}
}

func (s *Server) launch() error {
	out := &logBuffer{}
	cmd := exec.Command("nats-server", "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-sd", s.dir)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("nats-server exited: %s", strings.TrimSpace(out.String()))
		default:
		}
		// Ready once it logs that it accepts clients (JetStream is up
		// before that line) — a bare port probe would race JetStream's start.
		if strings.Contains(out.String(), "Server is ready") {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("nats-server did not become ready: %s", strings.TrimSpace(out.String()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
