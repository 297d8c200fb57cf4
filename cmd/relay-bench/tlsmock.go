package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// The TLS mock is the same mock upstream behind TLS, as every real provider
// is: one listener that offers HTTP/2 and HTTP/1.1 (ALPN picks h2), one that
// offers HTTP/1.1 only. The harness runs it as a child process of its own
// binary (tlsMockEnv names the directory for its certificate), so its CPU
// is apart from the harness's, and counts the TLS handshakes each listener
// completed, full and resumed, for the harness to read per slice on a plain
// stats listener.
const tlsMockEnv = "RELAY_BENCH_TLS_MOCK_DIR"

var tlsMockUpLine = regexp.MustCompile(`tls mock listening on (https://\S+) and (https://\S+), stats on (http://\S+)`)

// serveTLSMock is the child's whole life: it writes a fresh self-signed
// certificate for 127.0.0.1 to dir/cert.pem (what Relay is told to trust),
// serves the mock on the two TLS listeners and the counts on a third, and
// returns when ctx ends.
func serveTLSMock(ctx context.Context, dir string, stdout io.Writer) error {
	cert, err := selfSigned(filepath.Join(dir, "cert.pem"))
	if err != nil {
		return err
	}
	mock := mockupstream.New(mockupstream.Options{Record: -1})
	var counts [2]handshakeCount // h2-capable, h1 only
	var urls [2]string
	var servers []*http.Server
	for i, protos := range [][]string{{"h2", "http/1.1"}, {"http/1.1"}} {
		c := &counts[i]
		tc := &tls.Config{
			Certificates: []tls.Certificate{cert},
			NextProtos:   protos,
			MinVersion:   tls.VersionTLS12,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if cs.DidResume {
					c.resumed.Add(1)
				} else {
					c.full.Add(1)
				}
				return nil
			},
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: mock, TLSConfig: tc, ReadHeaderTimeout: 10 * time.Second}
		if len(protos) == 1 {
			srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){} // no h2
		}
		servers = append(servers, srv)
		urls[i] = "https://" + ln.Addr().String()
		go func() { _ = srv.ServeTLS(ln, "", "") }() // ends with Shutdown
	}
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	stats := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d %d %d %d\n", counts[0].full.Load(), counts[0].resumed.Load(), counts[1].full.Load(), counts[1].resumed.Load())
	})}
	servers = append(servers, stats)
	go func() { _ = stats.Serve(sln) }() // ends with Shutdown
	fmt.Fprintf(stdout, "tls mock listening on %s and %s, stats on http://%s\n", urls[0], urls[1], sln.Addr())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.Shutdown(sctx))
	}
	return errors.Join(errs...)
}

type handshakeCount struct{ full, resumed atomic.Int64 }

// selfSigned makes a P-256 certificate for 127.0.0.1, valid for a day, and
// writes it (not the key) as PEM to path.
func selfSigned(path string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "relay-bench TLS mock"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// tlsMock is the running child, as the harness sees it.
type tlsMock struct {
	*child
	h2URL, h1URL string // the two listeners' base URLs
	statsURL     string
	certFile     string // what Relay is given as SSL_CERT_FILE
}

// startTLSMock runs this binary again as the TLS mock, with its certificate
// in dir.
func startTLSMock(ctx context.Context, dir string, pin bool, stderr io.Writer) (*tlsMock, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, args := pinned(pin, mockCore, self, nil)
	c, m, err := startChild(ctx, "tls-mock", b, args, append(childEnv(), tlsMockEnv+"="+dir), tlsMockUpLine, stderr)
	if err != nil {
		return nil, err
	}
	return &tlsMock{child: c, h2URL: m[1], h1URL: m[2], statsURL: m[3], certFile: filepath.Join(dir, "cert.pem")}, nil
}

// handshakes reads the TLS mock's handshake count (full and resumed) of one
// listener: h2 for the HTTP/2-capable one; -1 if it cannot be read.
func (m *tlsMock) handshakes(ctx context.Context, h2 bool) int64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.statsURL, nil)
	if err != nil {
		return -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) != 4 {
		return -1
	}
	i := 2
	if h2 {
		i = 0
	}
	full, err1 := strconv.ParseInt(f[i], 10, 64)
	resumed, err2 := strconv.ParseInt(f[i+1], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return full + resumed
}
