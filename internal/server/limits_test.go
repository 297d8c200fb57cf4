package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// running is a Server serving in the background for one test.
type running struct {
	srv       *Server
	inference net.Addr
	control   net.Addr
	cancel    context.CancelFunc
	done      chan error
}

func start(t *testing.T, opts Options) *running {
	t.Helper()
	if opts.Status == nil {
		st := &fakeStatus{}
		st.ready.Store(true)
		opts.Status = st
	}
	opts.InferenceAddr, opts.ControlAddr = "127.0.0.1:0", "127.0.0.1:0"
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 10 * time.Second
	}
	addrs := make(chan [2]net.Addr, 1)
	opts.OnListening = func(in, ctl net.Addr) { addrs <- [2]net.Addr{in, ctl} }
	srv := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- srv.Run(ctx) }()
	a := <-addrs
	r.inference, r.control = a[0], a[1]
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// eventually polls cond until it holds, failing after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

// rawGet sends one keep-alive GET on c and returns the response status.
func rawGet(t *testing.T, c net.Conn, br *bufio.Reader, path string) int {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: relay\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// closedByServer reports whether the server closes c within the deadline:
// reading what it still sends ends in EOF or a reset, not the client's own
// timeout.
func closedByServer(t *testing.T, c net.Conn, br *bufio.Reader) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, br)
	if err == nil {
		return true // EOF
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

func TestServer_ClosesIdleAndSilentConnections(t *testing.T) {
	r := start(t, Options{Limits: Limits{IdleTimeout: 100 * time.Millisecond, ReadHeaderTimeout: 100 * time.Millisecond}})
	for _, addr := range []net.Addr{r.inference, r.control} {
		// A keep-alive connection after one request.
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if code := rawGet(t, c, br, "/healthz"); code != 200 {
			t.Fatalf("healthz = %d", code)
		}
		if !closedByServer(t, c, br) {
			t.Fatalf("%s: an idle keep-alive connection stayed open past the idle timeout", addr)
		}
		// A connection that never sends its headers.
		c2, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		io.WriteString(c2, "GET /healthz HTTP/1.1\r\n")
		if !closedByServer(t, c2, bufio.NewReader(c2)) {
			t.Fatalf("%s: a connection that never finished its headers stayed open", addr)
		}
	}
	eventually(t, "both planes hold no connection", func() bool {
		in, ctl := r.srv.Connections()
		return in == 0 && ctl == 0
	})
}

func TestServer_SlowBodyTimesOutButAStreamDoesNot(t *testing.T) {
	const bodyTimeout = 200 * time.Millisecond
	readErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if r.URL.Path == "/slow-body" {
			readErr <- err
			return
		}
		// The body is in; the response streams for longer than the body
		// timeout, and the request must stay alive.
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(3 * bodyTimeout): // the stream's own pace, the thing under test
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "end")
	})
	r := start(t, Options{Inference: h, Limits: Limits{BodyTimeout: bodyTimeout}})

	c, err := net.Dial("tcp", r.inference.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /slow-body HTTP/1.1\r\nHost: relay\r\nContent-Length: 33554432\r\n\r\n{")
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("a stalled body read to the end")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled body was still being read after 10s")
	}
	if !closedByServer(t, c, bufio.NewReader(c)) {
		t.Fatal("the connection of a stalled body stayed open")
	}

	resp, err := http.Post("http://"+r.inference.String()+"/stream", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "end" {
		t.Fatalf("a stream outliving the body timeout was cut: %q, %v", b, err)
	}
}

func TestServer_ConnectionCapSparesTheControlPlane(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	r := start(t, Options{Inference: ok, Control: ok, Limits: Limits{MaxConnections: 2}})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", r.inference.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if code := rawGet(t, c, bufio.NewReader(c), "/v1/models"); code != 200 {
			t.Fatalf("status %d", code)
		}
		held = append(held, c)
	}
	eventually(t, "the inference plane holds 2 connections", func() bool {
		in, _ := r.srv.Connections()
		return in == 2
	})
	// A third waits in the accept queue ...
	third, err := net.Dial("tcp", r.inference.String())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	io.WriteString(third, "GET /v1/models HTTP/1.1\r\nHost: relay\r\n\r\n")
	// ... while the control plane answers.
	for _, path := range []string{"/readyz", "/api/anything"} {
		resp, err := http.Get("http://" + r.control.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("control %s = %d with the inference plane full", path, resp.StatusCode)
		}
	}
	third.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := third.Read(make([]byte, 1)); n > 0 || err == nil {
		t.Fatal("a connection above the cap was served")
	}
	// One closes; the waiting one is served.
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("the queued connection was not served after a slot freed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("queued request = %d", resp.StatusCode)
	}
}

func TestServer_ControlReadyzReportsTheDatabase(t *testing.T) {
	down := errors.New("postgres unreachable")
	r := start(t, Options{ControlCheck: func(context.Context) error { return down }})
	get := func(addr net.Addr) (int, readiness, string) {
		resp, err := http.Get("http://" + addr.String() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body readiness
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body, resp.Header.Get("Retry-After")
	}
	if code, body, retry := get(r.control); code != 503 || body.Status != "database_unavailable" || body.Reason == "" || retry == "" {
		t.Fatalf("control readyz = %d %+v Retry-After %q", code, body, retry)
	}
	if code, body, _ := get(r.inference); code != 200 {
		t.Fatalf("inference readyz = %d %+v: it serves from the snapshot", code, body)
	}
}

func TestServer_DrainDelayKeepsServingWhileNotReady(t *testing.T) {
	delayed := make(chan time.Time)
	asked := make(chan time.Duration, 1)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	r := start(t, Options{Inference: ok, DrainDelay: time.Hour, After: func(d time.Duration) <-chan time.Time {
		asked <- d
		return delayed
	}})
	r.cancel()
	if d := <-asked; d != time.Hour {
		t.Fatalf("drain delay %s", d)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, addr := range []net.Addr{r.inference, r.control} {
		resp, err := client.Get("http://" + addr.String() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Fatalf("readyz during the drain delay = %d", resp.StatusCode)
		}
	}
	// New connections are still accepted and served.
	resp, err := client.Get("http://" + r.inference.String() + "/v1/models")
	if err != nil {
		t.Fatalf("a request during the drain delay failed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("request during the drain delay = %d", resp.StatusCode)
	}
	select {
	case err := <-r.done:
		t.Fatalf("Run returned during the drain delay: %v", err)
		return
	default:
	}
	close(delayed)
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
	r.done <- nil // for the cleanup
	if _, err := client.Get("http://" + r.inference.String() + "/v1/models"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}
