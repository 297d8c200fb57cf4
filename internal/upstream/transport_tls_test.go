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
// than paying a full handshake, on HTTP/2 and on HTTP/1.1, and keeps the
// protocol the upstream offers.
func TestTransport_TLSResumesSessions(t *testing.T) {
	t.Parallel()
	for _, h2 := range []bool{true, false} {
		name := map[bool]string{true: "h2", false: "h1"}[h2]
		t.Run(name, func(t *testing.T) {
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
			tr := NewTransportTrusting(roots)
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
			want := map[bool]int{true: 2, false: 1}[h2]
			if protos[want].Load() != 3 {
				t.Errorf("HTTP/%d requests: %d of 3", want, protos[want].Load())
			}
		})
	}
}
