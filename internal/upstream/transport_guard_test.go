package upstream

import (
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/egress"
)

// TestGuardedTransport_RefusesRelaysOwnListener: a host whose base URL
// names Relay's own listener — literally, or through a DNS name that
// resolves to it — is refused at the dial, on both clients (h1 for plain
// HTTP, net/http for TLS); a loopback upstream on another port is dialed.
func TestGuardedTransport_RefusesRelaysOwnListener(t *testing.T) {
	t.Parallel()
	ok := func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }
	relayPlain := httptest.NewServer(http.HandlerFunc(ok)) // stands for Relay's control plane
	defer relayPlain.Close()
	relayTLS := httptest.NewTLSServer(http.HandlerFunc(ok)) // and its inference plane
	defer relayTLS.Close()
	mock := httptest.NewServer(http.HandlerFunc(ok))
	defer mock.Close()
	mockTLS := httptest.NewTLSServer(http.HandlerFunc(ok))
	defer mockTLS.Close()

	g, err := egress.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	g.SetListeners(relayPlain.Listener.Addr(), relayTLS.Listener.Addr())
	roots := x509.NewCertPool()
	roots.AddCert(mockTLS.Certificate())      // httptest's one certificate: Relay's TLS listener's too
	for _, std := range []bool{false, true} { // TLS through h1.go, and through net/http
		tr := New(Options{Guard: g, Roots: roots, HTTP2: std})
		defer tr.CloseIdleConnections()
		refusesOwnListener(t, tr, relayPlain, relayTLS, mock, mockTLS)
	}
}

func refusesOwnListener(t *testing.T, tr *Transport, relayPlain, relayTLS, mock, mockTLS *httptest.Server) {
	t.Helper()

	port := func(s *httptest.Server) string { _, p, _ := net.SplitHostPort(s.Listener.Addr().String()); return p }
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{relayPlain.URL + "/api/hosts", false},
		{"http://localhost:" + port(relayPlain) + "/api/hosts", false}, // a name resolving to Relay's listener
		{relayTLS.URL + "/v1/models", false},
		{"https://localhost:" + port(relayTLS) + "/v1/models", false},
		{mock.URL + "/v1/models", true},
		{"http://localhost:" + port(mock) + "/v1/models", true},
		{mockTLS.URL + "/v1/models", true},
		{"http://169.254.169.254/latest/meta-data/", false},
		{"http://metadata.google.internal/computeMetadata/v1/", false},
	} {
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		if tc.ok != (err == nil) {
			t.Errorf("%s: err = %v, want ok=%v", tc.url, err, tc.ok)
		}
		if err != nil && !tc.ok && !errors.Is(err, egress.ErrRefused) && !strings.Contains(err.Error(), egress.ErrRefused.Error()) {
			t.Errorf("%s: err = %v, want a refusal", tc.url, err)
		}
	}
}
