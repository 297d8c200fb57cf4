package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// TLS on both listeners: with Options.TLSCertFile and TLSKeyFile set, each
// plane serves HTTPS (HTTP/2 offered by ALPN, HTTP/1.1 kept) from one pair of
// files. The pair is read at Listen and cached; a handshake serves the cached
// pair unless either file's modification time or size has changed, in which
// case the pair is read again first — so a renewed certificate (certbot,
// cert-manager) is served without a restart. A pair that does not load (a
// half-written renewal, a key that does not match) leaves the previous one
// in service and says so once in the log.

// certFiles is the certificate pair behind GetCertificate.
type certFiles struct {
	certFile, keyFile string
	log               *slog.Logger

	mu        sync.Mutex
	cert      *tls.Certificate // guarded by mu: the pair in service
	certStamp fileStamp        // guarded by mu: the files as last read (or tried)
	keyStamp  fileStamp        // guarded by mu
}

// fileStamp is what tells a changed file: modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// loadCertFiles reads the pair once; an error here stops the start.
func loadCertFiles(certFile, keyFile string, log *slog.Logger) (*certFiles, error) {
	c := &certFiles{certFile: certFile, keyFile: keyFile, log: log}
	cs, err := stampOf(certFile)
	if err != nil {
		return nil, fmt.Errorf("read TLS certificate: %w", err)
	}
	ks, err := stampOf(keyFile)
	if err != nil {
		return nil, fmt.Errorf("read TLS key: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate pair: %w", err)
	}
	c.cert, c.certStamp, c.keyStamp = &cert, cs, ks
	return c, nil
}

// GetCertificate is tls.Config's: the cached pair, re-read first when the
// files changed. Two stat calls a handshake are the cost of noticing.
func (c *certFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cs, cerr := stampOf(c.certFile)
	ks, kerr := stampOf(c.keyFile)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cerr != nil || kerr != nil || (cs == c.certStamp && ks == c.keyStamp) {
		// A file gone for a moment (a rename in progress) keeps the pair in service.
		return c.cert, nil
	}
	c.certStamp, c.keyStamp = cs, ks
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		// Tried once for these stamps: the next change of either file tries again.
		c.log.Warn("the TLS certificate files changed but do not load; still serving the previous pair", "err", err)
		return c.cert, nil
	}
	c.cert = &cert
	c.log.Info("reloaded the TLS certificate", "cert_file", c.certFile)
	return c.cert, nil
}

// loadTLS reads the configured pair, if any, into s.tls.
func (s *Server) loadTLS() error {
	o := s.opts
	if o.TLSCertFile == "" && o.TLSKeyFile == "" {
		return nil
	}
	if o.TLSCertFile == "" || o.TLSKeyFile == "" {
		return fmt.Errorf("load TLS certificate pair: want both a certificate and a key file")
	}
	files, err := loadCertFiles(o.TLSCertFile, o.TLSKeyFile, o.Logger)
	if err != nil {
		return err
	}
	s.tls = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: files.GetCertificate,
	}
	return nil
}

// serve serves one plane on ln: HTTPS when a pair is configured (ServeTLS
// adds h2 to ALPN), plain HTTP otherwise.
func (s *Server) serve(srv *http.Server, ln net.Listener) error {
	if s.tls == nil {
		// framed answers net/http's own framing errors in JSON and closes
		// after CL+TE; it needs the plain connection, so TLS goes without.
		return srv.Serve(framed(ln))
	}
	srv.TLSConfig = s.tls.Clone()
	return srv.ServeTLS(ln, "", "")
}

// Scheme is "https" when the listeners serve TLS, else "http".
func (s *Server) Scheme() string {
	if s.tls != nil {
		return "https"
	}
	return "http"
}
