package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns a client that trusts it (and speaks h2 when offered).
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, c *http.Client) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
}

// relay serve with RELAY_TLS_CERT_FILE/KEY_FILE: both planes over TLS with
// h2, the console's session cookie Secure, /metrics behind its token.
func TestServe_TLSOnBothPlanes(t *testing.T) {
	t.Parallel()
	certFile, keyFile, c := selfSigned(t, t.TempDir())
	const metricsToken = "metrics-token-0123456789"
	p := startRelay(t, pgtest.NewDB(t), false, "RELAY_DEMO=false", "RELAY_TLS_CERT_FILE="+certFile, "RELAY_TLS_KEY_FILE="+keyFile,
		"RELAY_METRICS_TOKEN="+metricsToken, "RELAY_ADMIN_EMAIL=ada@example.com", "RELAY_ADMIN_PASSWORD=correct horse battery")
	in, ctl := strings.Replace(p.inference, "http://", "https://", 1), strings.Replace(p.control, "http://", "https://", 1)
	for _, base := range []string{in, ctl} {
		poll.Until(t, 30*time.Second, base+" is ready over TLS", func() bool {
			resp, err := c.Get(base + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Fatalf("%s answered over %s, want HTTP/2", base, resp.Proto)
			}
			return resp.StatusCode == http.StatusOK
		})
	}
	resp, err := c.Post(ctl+"/api/auth/login", "application/json", strings.NewReader(`{"email":"ada@example.com","password":"correct horse battery"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	var secure bool
	for _, ck := range resp.Cookies() {
		if ck.Name == "relay_session" {
			secure = ck.Secure
		}
	}
	if !secure {
		t.Errorf("the session cookie over TLS is not Secure: %q", resp.Header["Set-Cookie"])
	}
	for _, tc := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer wrong-token-0123456789", http.StatusUnauthorized}, {"Bearer " + metricsToken, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, ctl+"/metrics", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("/metrics with %q: %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
}

func TestWarnUnknownVariables_NamesTheNearestSetting(t *testing.T) {
	var buf bytes.Buffer
	warnUnknownVariables(slog.New(slog.NewTextHandler(&buf, nil)), []string{
		"RELAY_REDIS_ADDR=relay-redis:6379", "RELAY_STORAGE_DRIVER=redis", "RELAY_CONTROL_API_PORT=9090", "RELAY_PORT=8080",
	})
	out := buf.String()
	for _, want := range []string{
		"unknown setting RELAY_REDIS_ADDR is ignored; did you mean RELAY_REDIS_URL?",
		"unknown setting RELAY_STORAGE_DRIVER is ignored; did you mean RELAY_DATABASE_URL?",
		"unknown setting RELAY_CONTROL_API_PORT is ignored; did you mean RELAY_CONTROL_PORT?",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "RELAY_PORT ") || strings.Count(out, "\n") != 3 {
		t.Errorf("warned about more than the three:\n%s", out)
	}
}
