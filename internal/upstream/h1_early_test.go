package upstream

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync/atomic"
	"testing"
	"time"
)

// An upstream may answer before it has read the whole request body (a 413
// for a body too big, a 401) and stop reading: the answer is what the
// caller gets, at once, as with net/http, not a write blocked until the
// attempt times out.
func TestH1_ResponseBeforeTheWholeBodyIsRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tp := textproto.NewReader(bufio.NewReader(c))
				if _, err := tp.ReadLine(); err != nil {
					return
				}
				if _, err := tp.ReadMIMEHeader(); err != nil {
					return
				}
				_, _ = io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbig!")
				time.Sleep(3 * time.Second) // neither reads on nor closes, like a server that stops reading
			}()
		}
	}()
	body := bytes.Repeat([]byte("x"), 8<<20) // streamed after the head (over h1MaxInMemoryBody)
	for name, rt := range map[string]http.RoundTripper{
		"net/http": &http.Transport{},
		"h1":       newH1Client((&net.Dialer{}).DialContext),
	} {
		// WroteRequest says the transport is done with the body (Relay
		// reuses its buffers after it): no read may come after it.
		var wrote atomic.Bool
		ctx, cancel := context.WithTimeout(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
		}), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ln.Addr().String()+"/v1/chat/completions",
			&afterWrote{t: t, r: bytes.NewReader(body), wrote: &wrote})
		req.ContentLength = int64(len(body))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Errorf("%s: %v, want the upstream's 413", name, err)
			cancel()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if name == "h1" && !wrote.Load() {
			// The body's writer is let go once the connection is closed.
			deadline := time.Now().Add(2 * time.Second)
			for !wrote.Load() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if !wrote.Load() {
				t.Errorf("h1: WroteRequest never came after the body was given up on")
			}
		}
		if resp.StatusCode != 413 || string(b) != "big!" {
			t.Errorf("%s: %d %q, want 413 \"big!\"", name, resp.StatusCode, b)
		}
	}
}

type afterWrote struct {
	t     *testing.T
	r     io.Reader
	wrote *atomic.Bool
}

func (a *afterWrote) Read(p []byte) (int, error) {
	if a.wrote.Load() {
		a.t.Errorf("the request body read after WroteRequest")
	}
	return a.r.Read(p)
}
