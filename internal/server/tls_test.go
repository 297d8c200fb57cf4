package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCert writes a self-signed pair for 127.0.0.1 with the given serial to
// certFile and keyFile, and returns the certificate.
func testCert(t testing.TB, serial int64, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "relay test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// client trusts exactly the given certificates and keeps no connections, so
// every request shakes hands anew.
func tlsClient(certs ...*x509.Certificate) *http.Client {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, DisableKeepAlives: true,
	}}
}

func TestServer_ServesBothPlanesOverTLSWithHTTP2(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	cert := testCert(t, 1, certFile, keyFile)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(r.Proto)) })
	r := start(t, Options{Inference: ok, Control: ok, TLSCertFile: certFile, TLSKeyFile: keyFile})
	if got := r.srv.Scheme(); got != "https" {
		t.Fatalf("Scheme() = %q", got)
	}
	c := tlsClient(cert)
	for _, plane := range []struct {
		name string
		addr net.Addr
	}{{"inference", r.inference}, {"control", r.control}} {
		for _, path := range []string{"/healthz", "/v1/anything"} {
			resp, err := c.Get("https://" + plane.addr.String() + path)
			if err != nil {
				t.Fatalf("%s %s: %v", plane.name, path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "h2" {
				t.Errorf("%s %s: status %d, proto %s, want 200 over h2", plane.name, path, resp.StatusCode, resp.Proto)
			}
		}
		// Plain HTTP on a TLS listener is refused, not served in the clear.
		if resp, err := http.Get("http://" + plane.addr.String() + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("%s: plain HTTP answered 200 on the TLS listener", plane.name)
			}
		}
	}
	// HTTP/1.1 clients are still served.
	h1 := tlsClient(cert)
	h1.Transport.(*http.Transport).ForceAttemptHTTP2 = false
	h1.Transport.(*http.Transport).TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	resp, err := h1.Get("https://" + r.inference.String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Errorf("an HTTP/1.1 client got %s", resp.Proto)
	}
}

func TestServer_ServesACertificateSwappedOnDiskWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := testCert(t, 1, certFile, keyFile)
	r := start(t, Options{TLSCertFile: certFile, TLSKeyFile: keyFile})
	serial := func(c *http.Client, addr net.Addr) int64 {
		t.Helper()
		resp, err := c.Get("https://" + addr.String() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	if got := serial(tlsClient(first), r.control); got != 1 {
		t.Fatalf("serial before the swap = %d", got)
	}

	second := testCert(t, 2, certFile, keyFile)
	// Same-length files written within the clock's tick would look unchanged; a
	// renewal is never that quick, so date it like one.
	later := time.Now().Add(time.Minute)
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
	c := tlsClient(first, second)
	for _, addr := range []net.Addr{r.inference, r.control} {
		if got := serial(c, addr); got != 2 {
			t.Errorf("%s: serial after the swap = %d, want 2", addr, got)
		}
	}

	// A broken renewal (a key that does not match) keeps the second pair in service.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := serial(c, r.inference); got != 2 {
		t.Errorf("serial after a broken renewal = %d, want 2", got)
	}
}

func TestServer_RefusesToStartWithABrokenPair(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	testCert(t, 1, certFile, keyFile)
	for _, tc := range []struct {
		name      string
		cert, key string
	}{
		{"key missing", certFile, ""},
		{"cert missing", "", keyFile},
		{"no such file", filepath.Join(dir, "nope.crt"), keyFile},
		{"key is the cert", certFile, certFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := New(Options{InferenceAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", TLSCertFile: tc.cert, TLSKeyFile: tc.key})
			if _, _, err := srv.Listen(); err == nil {
				t.Fatal("Listen succeeded")
			}
		})
	}
}

// What noticing a renewal costs a handshake: two stat calls.
func BenchmarkCertFiles_GetCertificate(b *testing.B) {
	dir := b.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	testCert(b, 1, certFile, keyFile)
	files, err := loadCertFiles(certFile, keyFile, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := files.GetCertificate(nil); err != nil {
			b.Fatal(err)
		}
	}
}
