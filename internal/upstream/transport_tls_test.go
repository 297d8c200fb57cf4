package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestTransport_TLSResumesSessions: a second connection to a TLS upstream
// (here after the pool was emptied) resumes the first one's session rather
// than paying a full handshake, on each TLS client: Relay's own, which
// speaks HTTP/1.1 to an upstream that offers HTTP/2 too, and net/http
// (Options.HTTP2), which keeps the protocol the upstream offers.
func TestTransport_TLSResumesSessions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		h2, std   bool
		wantProto int
	}{{"own", true, false, 1}, {"std-h2", true, true, 2}, {"std-h1", false, true, 1}} {
		h2 := c.h2
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var full, resumed atomic.Int32
			var protos [3]atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				protos[r.ProtoMajor].Add(1)
				io.WriteString(w, "ok")
			}))
			srv.EnableHTTP2 = h2
			srv.TLS = &tls.Config{VerifyConnection: func(cs tls.ConnectionState) error {
				if cs.DidResume {
					resumed.Add(1)
				} else {
					full.Add(1)
				}
				return nil
			}}
			srv.StartTLS()
			defer srv.Close()
			roots := x509.NewCertPool()
			roots.AddCert(srv.Certificate())
			tr := New(Options{Roots: roots, HTTP2: c.std})
			defer tr.CloseIdleConnections()

			for i := range 3 {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v1/models", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "ok" {
					t.Fatalf("request %d: %q %v", i, b, err)
				}
				resp.Body.Close()
				tr.CloseIdleConnections() // the next request needs a new connection
			}
			if full.Load() != 1 || resumed.Load() != 2 {
				t.Errorf("%d full and %d resumed handshakes for 3 connections, want 1 and 2", full.Load(), resumed.Load())
			}
			want := c.wantProto
			if protos[want].Load() != 3 {
				t.Errorf("HTTP/%d requests: %d of 3", want, protos[want].Load())
			}
		})
	}
}
