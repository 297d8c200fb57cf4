package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

type fakeStatus struct{ ready atomic.Bool }

func (f *fakeStatus) Ready() bool        { return f.ready.Load() }
func (f *fakeStatus) Version() uint64    { return 7 }
func (f *fakeStatus) Age() time.Duration { return time.Second }

func TestServer_ReadyzFlipsWithTheSnapshotAndDrains(t *testing.T) {
	st := &fakeStatus{}
	addrs := make(chan [2]net.Addr, 1)
	release := make(chan struct{})
	inFlight := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		<-release
		w.Write([]byte("done"))
	})
	srv := New(Options{
		InferenceAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", Inference: slow, Status: st,
		ShutdownTimeout: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnListening: func(in, ctl net.Addr) { addrs <- [2]net.Addr{in, ctl} },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	a := <-addrs
	get := func(addr net.Addr, path string) int {
		resp, err := http.Get("http://" + addr.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, addr := range a {
		if c := get(addr, "/healthz"); c != 200 {
			t.Fatalf("healthz = %d", c)
		}
		if c := get(addr, "/readyz"); c != 503 {
			t.Fatalf("readyz before load = %d", c)
		}
	}
	st.ready.Store(true)
	if c := get(a[0], "/readyz"); c != 200 {
		t.Fatalf("readyz after load = %d", c)
	}

	// An in-flight request survives shutdown: it drains, then Run returns.
	body := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + a[0].String() + "/v1/slow")
		if err != nil {
			body <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body <- string(b)
	}()
	<-inFlight
	cancel()
	// Readiness says draining while the request is still running.
	deadline := time.Now().Add(5 * time.Second)
	for srv.draining.Load() == false && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a flag with a deadline, not waiting on a goroutine's timing
	}
	if !srv.draining.Load() {
		t.Fatal("not draining after cancel")
	}
	close(release)
	if got := <-body; got != "done" {
		t.Fatalf("in-flight request got %q", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
