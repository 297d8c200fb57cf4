package upstream

import "crypto/x509"

// NewTransportTrusting is NewTransport verifying TLS upstreams against
// roots instead of the system pool: a private CA in front of a self-hosted
// model server, or a test's TLS mock. Sessions are resumed as NewTransport
// resumes them.
func NewTransportTrusting(roots *x509.CertPool) *Transport {
	return New(Options{Roots: roots})
}
