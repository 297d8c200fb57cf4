package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/poll"
)

// tlsH1 is an h1Client that dials srv whatever the URL names, verifying
// TLS against srv's certificate (httptest's: example.com, 127.0.0.1, ::1).
func tlsH1(srv *httptest.Server) *h1Client {
	c := newH1Client(func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	})
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c.tls = clientTLS(roots, tls.NewLRUClientSessionCache(4))
	return c
}

// TestH1TLS_VerifiesTheNameDialed: the certificate is checked against the
// URL's host, not just against the roots — a name the certificate does not
// carry is refused before a byte of the request is sent.
func TestH1TLS_VerifiesTheNameDialed(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := tlsH1(srv)
	defer c.CloseIdleConnections()

	if got := h1Read(t, c, t.Context(), "https://example.com/v1/models", "", nil); got != "ok" {
		t.Fatalf("a name the certificate carries: %q", got)
	}
	_, err := h1Post(t, c, t.Context(), "https://api.openai.invalid/v1/models", "", nil)
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Fatalf("a name the certificate does not carry: err = %v, want a certificate verification error", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the server saw %d requests, want 1", n)
	}
}

// TestH1TLS_IdleConnectionClosedByTheUpstreamIsNotReused: a pooled TLS
// connection the upstream has since closed is seen through the socket
// beneath the TLS layer and dropped, so the next request goes on a fresh
// connection and succeeds, instead of failing on the dead one.
func TestH1TLS_IdleConnectionClosedByTheUpstreamIsNotReused(t *testing.T) {
	t.Parallel()
	var conns, closed atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	c := tlsH1(srv)
	defer c.CloseIdleConnections()

	// A request body too big to go in the head's write: had the dead
	// connection been taken, the write could land in its socket buffer and
	// the failure show only on the read, too late to retry.
	body := string(make([]byte, 64<<10))
	for i := range 3 {
		if got := h1Read(t, c, t.Context(), "https://example.com/v1/chat/completions", body, nil); got != "ok" {
			t.Fatalf("request %d: %q", i, got)
		}
		srv.CloseClientConnections()
		poll.Until(t, 5*time.Second, "the server closed the connection", func() bool { return closed.Load() == int32(i+1) })
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 requests, each after the upstream closed the last: want 3", n)
	}
}

// TestH1TLS_ReadsTogetherWhatArrivedTogether: stream events the upstream
// flushed one by one — each its own TLS record — that have all arrived are
// returned by one Read, as over plain TCP, not one record per Read (which
// would make each event its own write to the caller).
func TestH1TLS_ReadsTogetherWhatArrivedTogether(t *testing.T) {
	t.Parallel()
	const events = 20
	event := "data: {\"choices\":[{\"delta\":{\"content\":\"tok\"}}]}\n\n"
	sent := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", strconv.Itoa(events*len(event)))
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for range events {
			io.WriteString(w, event)
			w.(http.Flusher).Flush()
		}
		close(sent)
		<-release
	}))
	defer srv.Close()
	defer close(release)
	c := tlsH1(srv)
	defer c.CloseIdleConnections()

	resp, err := h1Post(t, c, t.Context(), "https://example.com/v1/chat/completions", "{}", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-sent
	// Each record is on the loopback socket once the server's write of it
	// returned: all of them are there now.
	// What the head's read took with it comes first, then the rest.
	buf := make([]byte, 32<<10)
	reads, total := 0, 0
	for total < events*len(event) {
		n, err := resp.Body.Read(buf)
		reads++
		total += n
		if err != nil && (err != io.EOF || total != events*len(event)) {
			t.Fatalf("after %d of %d bytes: %v", total, events*len(event), err)
		}
	}
	if reads > 3 {
		t.Errorf("%d Reads for %d events that had all arrived, want them together (at most 3)", reads, events)
	}
}

// TestH1TLS_ReusesItsConnection: sequential requests to a TLS upstream go
// on one kept connection — the session tickets a TLS 1.3 server sends after
// the handshake do not make the idle connection look closed.
func TestH1TLS_ReusesItsConnection(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	c := tlsH1(srv)
	defer c.CloseIdleConnections()
	for i := range 5 {
		if got := h1Read(t, c, t.Context(), "https://example.com/v1/models", "", nil); got != "ok" {
			t.Fatalf("request %d: %q", i, got)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 sequential requests, want 1", n)
	}
}

// TestH1TLS_CloseNotifyEndsTheConnection: an upstream that ends its side
// with close_notify after an answer, keeping TCP open, has that connection
// left, not reused: the next request succeeds on a fresh one.
func TestH1TLS_CloseNotifyEndsTheConnection(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS() // for its certificate and listener
	srv.Close()
	cert := srv.TLS.Certificates
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: cert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func(tc *tls.Conn) {
				defer tc.Close()
				br := make([]byte, 4096)
				if _, err := tc.Read(br); err != nil { // the request (small, one read)
					return
				}
				io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				tc.CloseWrite() // close_notify, TCP stays open
				io.Copy(io.Discard, tc)
			}(nc.(*tls.Conn))
		}
	}()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c := newH1Client(func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, ln.Addr().String())
	})
	c.tls = clientTLS(roots, tls.NewLRUClientSessionCache(4))
	defer c.CloseIdleConnections()
	for i := range 3 {
		if got := h1Read(t, c, t.Context(), "https://example.com/v1/models", "", nil); got != "ok" {
			t.Fatalf("request %d: %q", i, got)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 requests, each ended by close_notify: want 3", n)
	}
}
