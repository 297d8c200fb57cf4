package upstream

import "crypto/x509"

// NewTransportTrusting is NewTransport verifying TLS upstreams against
// roots instead of the system pool: a private CA in front of a self-hosted
// model server, or a test's TLS mock. HTTP/2 is still negotiated where the
// upstream offers it, and sessions are resumed as NewTransport resumes them.
func NewTransportTrusting(roots *x509.CertPool) *Transport {
	t := NewTransport()
	t.std.TLSClientConfig = clientTLS(roots)
	return t
}
