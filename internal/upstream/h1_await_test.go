package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/poll"
)

// TestH1Body_AwaitHoldsNoReadBuffer: a stream whose upstream is quiet,
// waited on with Await, gives its connection's read buffer back while it
// waits, and takes one again when bytes come; they read as they were sent.
func TestH1Body_AwaitHoldsNoReadBuffer(t *testing.T) {
	next := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: 2\n\n")
	})
	c := newH1Client((&net.Dialer{}).DialContext)
	resp, err := h1Post(t, c, context.Background(), srv.URL, "{}", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 9)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "data: 1\n\n" {
		t.Fatalf("first event %q, %v", first, err)
	}
	if n := c.readersLent.Load(); n != 1 {
		t.Fatalf("read buffers lent while the body reads: %d, want 1", n)
	}
	aw, ok := resp.Body.(interface{ Await() bool })
	if !ok {
		t.Fatal("the h1 body has no Await")
	}
	awaited := make(chan bool)
	go func() { awaited <- aw.Await() }()
	poll.Until(t, 5*time.Second, "the waiting stream gives its read buffer back", func() bool { return c.readersLent.Load() == 0 })
	close(next)
	if !<-awaited {
		t.Fatal("Await did not wait on a plain connection")
	}
	if n := c.readersLent.Load(); n != 1 {
		t.Fatalf("read buffers lent once bytes came: %d, want 1", n)
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: 2\n\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

// TestH1Body_AwaitEndsWithTheContext: a wait the request's context ends
// returns, and the next Read reports the context's error.
func TestH1Body_AwaitEndsWithTheContext(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c := newH1Client((&net.Dialer{}).DialContext)
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := h1Post(t, c, ctx, srv.URL, "{}", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 9)); err != nil {
		t.Fatal(err)
	}
	awaited := make(chan bool)
	go func() { awaited <- resp.Body.(interface{ Await() bool }).Await() }()
	poll.Until(t, 5*time.Second, "the stream waits", func() bool { return c.readersLent.Load() == 0 })
	cancel()
	<-awaited
	if _, err := resp.Body.Read(make([]byte, 16)); err == nil || ctx.Err() == nil {
		t.Fatalf("read after a canceled wait: %v", err)
	}
}
