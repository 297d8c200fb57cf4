package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// countingServer is an httptest server that counts the connections it
// accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func h1Post(t *testing.T, c *h1Client, ctx context.Context, url, body string, hdr http.Header) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	return c.RoundTrip(req)
}

// h1Read posts and reads the whole answer, which must come without error.
func h1Read(t *testing.T, c *h1Client, ctx context.Context, url, body string, hdr http.Header) string {
	t.Helper()
	resp, err := h1Post(t, c, ctx, url, body, hdr)
	return readAllOK(t, resp, err)
}

func readAllOK(t *testing.T, resp *http.Response, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

func TestH1_ReusesOneConnectionAndSendsWhatItIsGiven(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s %s cl=%d ua=%s", r.Method, r.URL.RequestURI(), r.Header.Get("X-Test"), b, r.ContentLength, r.UserAgent())
	})
	c := newH1Client((&net.Dialer{}).DialContext)
	for i := range 5 {
		body := strings.Repeat("x", i*1000)
		got := h1Read(t, c, t.Context(), srv.URL+"/v1/chat?a=b", body, http.Header{"X-Test": {"v"}})
		want := fmt.Sprintf("POST /v1/chat?a=b v %s cl=%d ua=Go-http-client/1.1", body, len(body))
		if got != want {
			t.Fatalf("request %d: server saw %.80q, want %.80q", i, got, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 requests in turn, want 1", n)
	}
}

func TestH1_ChunkedBodyWholeAcrossFlushes(t *testing.T) {
	t.Parallel()
	var want strings.Builder
	for i := range 50 {
		fmt.Fprintf(&want, "data: {\"n\":%d}\n\n", i)
	}
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		s := want.String()
		for i := 0; i < len(s); i += 7 {
			io.WriteString(w, s[i:min(i+7, len(s))])
			if i%3 == 0 {
				w.(http.Flusher).Flush()
			}
		}
	})
	c := newH1Client((&net.Dialer{}).DialContext)
	for range 3 {
		resp, err := h1Post(t, c, t.Context(), srv.URL, "{}", nil)
		if err == nil && (resp.ContentLength != -1 || len(resp.TransferEncoding) != 1) {
			t.Fatalf("length %d, transfer encoding %q", resp.ContentLength, resp.TransferEncoding)
		}
		if got := readAllOK(t, resp, err); got != want.String() {
			t.Fatalf("body %q", got)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

func TestH1_RetriesOnceWhenThePooledConnectionWasClosed(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	c := newH1Client((&net.Dialer{}).DialContext)
	h1Read(t, c, t.Context(), srv.URL, "a", nil)
	srv.CloseClientConnections() // the upstream drops its idle keep-alive
	if got := h1Read(t, c, t.Context(), srv.URL, "b", nil); got != "ok" {
		t.Fatalf("body %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestH1_ConnectionCloseAndEarlyCloseAreNotReused(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, strings.Repeat("y", 100<<10))
	})
	c := newH1Client((&net.Dialer{}).DialContext)
	h1Read(t, c, t.Context(), srv.URL+"/close", "", nil)
	resp, err := h1Post(t, c, t.Context(), srv.URL+"/big", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // most of the body unread
	if got := h1Read(t, c, t.Context(), srv.URL+"/big", "", nil); len(got) != 100<<10 {
		t.Fatalf("third body is %d bytes", len(got))
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
}

func TestH1_CancelInterruptsABlockedBodyRead(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	c := newH1Client((&net.Dialer{}).DialContext)
	cause := errors.New("idle timeout")
	ctx, cancel := context.WithCancelCause(t.Context())
	resp, err := h1Post(t, c, ctx, srv.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	if n, err := resp.Body.Read(buf); err != nil || string(buf[:n]) != "data: 1\n\n" {
		t.Fatalf("first read %q, %v", buf[:n], err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(buf)
		done <- err
	}()
	cancel(cause)
	if err := <-done; !errors.Is(err, cause) {
		t.Fatalf("read after cancel: %v, want the cause", err)
	}
	c.mu.Lock()
	idle := len(c.idle[poolKey(&url.URL{Scheme: "http", Host: strings.TrimPrefix(srv.URL, "http://")})])
	c.mu.Unlock()
	if idle != 0 {
		t.Errorf("a canceled connection went back to the pool")
	}
}

// rawServer answers every connection with the bytes answer returns for
// the request it read.
func rawServer(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, answer)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestH1_ResponseShapes(t *testing.T) {
	t.Parallel()
	c := newH1Client((&net.Dialer{}).DialContext)
	for _, tc := range []struct {
		name, answer, body string
		status             int
		err                error
	}{
		{"informational first", "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok", 200, nil},
		{"until close", "HTTP/1.0 200 OK\r\n\r\nwhole body", "whole body", 200, nil},
		{"cut short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "abc", 200, io.ErrUnexpectedEOF},
		{"cut chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n5\r\nde", "abcde", 200, io.ErrUnexpectedEOF},
		{"chunk extension and trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n", "abc", 200, nil},
		{"error status", "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 4\r\n\r\nslow", "slow", 429, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h1Post(t, c, t.Context(), rawServer(t, tc.answer), "q", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(b) != tc.body || !errors.Is(err, tc.err) && (err != nil || tc.err != nil) {
				t.Errorf("%d %q %v, want %d %q %v", resp.StatusCode, b, err, tc.status, tc.body, tc.err)
			}
		})
	}
	t.Run("no response", func(t *testing.T) {
		_, err := h1Post(t, c, t.Context(), rawServer(t, ""), "q", nil)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("err %v, want unexpected EOF", err)
		}
	})
}

func TestH1_RefusesAHeaderValueThatWouldSplitTheRequest(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	c := newH1Client((&net.Dialer{}).DialContext)
	_, err := h1Post(t, c, t.Context(), srv.URL, "", http.Header{"Authorization": {"Bearer k\r\nX-Evil: 1"}})
	if err == nil || conns.Load() != 0 {
		t.Fatalf("err %v, %d connections", err, conns.Load())
	}
}
