package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/relay-llm/relay/internal/egress"
)

// Client is what the proxy sends an upstream request through: a
// *Transport, or in a test anything that answers as one does. The request's
// context carries what Attempt put in it.
type Client interface {
	RoundTrip(*http.Request) (*http.Response, error)
}

var _ Client = (*Transport)(nil)

// Transport carries Relay's upstream requests. HTTP/1.1 upstreams, plain
// (a sidecar, a self-hosted model server, the mock) or over TLS (every
// provider, offered only http/1.1 in ALPN), go through h1Client, a minimal
// HTTP/1.1 client that does the exchange on the caller's goroutine;
// through net/http go HTTP/2 (TLS upstreams when Options.HTTP2 is set) and
// every request when the environment names a proxy for its scheme. Both
// keep connections alive, resume TLS sessions and dial with each host's
// connect timeout.
type Transport struct {
	h1  *h1Client
	std *http.Transport
	// tlsOnStd: https:// goes through net/http (Options.HTTP2).
	tlsOnStd bool
	// A proxy is set in the environment: ask net/http per request.
	envProxy bool
	dialer   *net.Dialer
	guard    *egress.Guard // nil: dial anything
}

// Options are what a Transport is built with; the zero value is
// NewTransport's.
type Options struct {
	// Guard refuses the addresses it refuses (Relay's own listeners,
	// metadata addresses, what RELAY_UPSTREAM_ALLOW leaves out), checked
	// on the address actually dialed, after DNS; nil refuses nothing.
	Guard *egress.Guard
	// Roots verify TLS upstreams instead of the system pool: a private CA
	// in front of a self-hosted model server, or a test's TLS mock.
	Roots *x509.CertPool
	// HTTP2 sends TLS upstreams through net/http, which negotiates HTTP/2
	// where the upstream offers it (RELAY_UPSTREAM_HTTP2), instead of
	// h1Client over HTTP/1.1.
	HTTP2 bool
	// Resolver looks names up instead of the system's: a test's DNS,
	// which may answer the dial otherwise than a write-time check
	// (rebinding).
	Resolver *net.Resolver
}

// NewTransport returns the transport Relay shares across every upstream
// request: keep-alives with room for 256 concurrent callers per host, no
// transparent compression (bytes pass through as sent), and a dialer that
// honours each host's connect timeout.
func NewTransport() *Transport { return New(Options{}) }

// NewGuardedTransport is NewTransport whose dialer refuses the addresses g
// refuses; a nil g refuses nothing.
func NewGuardedTransport(g *egress.Guard) *Transport { return New(Options{Guard: g}) }

// New returns a transport built with o.
func New(o Options) *Transport {
	t := &Transport{
		guard:    o.Guard,
		dialer:   &net.Dialer{KeepAlive: 30 * time.Second, Resolver: o.Resolver},
		tlsOnStd: o.HTTP2,
	}
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		t.envProxy = t.envProxy || os.Getenv(k) != ""
	}
	sessions := tls.NewLRUClientSessionCache(tlsSessions)
	t.h1 = newH1Client(t.DialContext)
	t.h1.tls = clientTLS(o.Roots, sessions)
	t.std = &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           t.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   h1TLSHandshake,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		WriteBufferSize:       32 << 10,
		ReadBufferSize:        32 << 10,
		TLSClientConfig:       clientTLS(o.Roots, sessions),
		// A provider's HTTP/2 connection carries every caller's streams:
		// one that went silent (a NAT or load balancer dropped it) is
		// found by a ping and closed, not waited on by each new request.
		HTTP2: &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second},
	}
	return t
}

// tlsSessions is how many upstream TLS sessions the client keeps to resume:
// one per host and then some.
const tlsSessions = 1024

// clientTLS is the TLS every upstream connection starts from: verified
// against roots (nil: the system's), TLS 1.2 at least, and the one session
// cache of the transport, so a connection opened after the first to a
// host (more callers than the pool holds, a connection the upstream
// closed) resumes its session instead of paying a full handshake with
// certificate verification. Each client gets its own Config (net/http
// writes its ALPN list into the one it is given); they share the cache.
func clientTLS(roots *x509.CertPool, sessions tls.ClientSessionCache) *tls.Config {
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, ClientSessionCache: sessions}
}

// RoundTrip sends req on the client that suits its scheme.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.URL.Scheme {
	case "http":
	case "https":
		if t.tlsOnStd {
			return t.std.RoundTrip(req)
		}
	default:
		return t.std.RoundTrip(req)
	}
	if t.proxied(req) {
		return t.std.RoundTrip(req)
	}
	return t.h1.RoundTrip(req)
}

// proxied reports whether the environment names a proxy for req.
func (t *Transport) proxied(req *http.Request) bool {
	if !t.envProxy {
		return false
	}
	u, err := http.ProxyFromEnvironment(req)
	return err != nil || u != nil
}

// DialContext dials with the connect timeout Attempt put in ctx.
func (t *Transport) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if d, ok := ctx.Value(connectTimeoutKey).(time.Duration); ok && d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if t.guard == nil {
		return t.dialer.DialContext(ctx, network, addr)
	}
	// The name is checked before the look-up, each address it resolves to
	// just before the connect: a name that resolves to Relay's own
	// listener is refused, whatever it is called.
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	listed, err := t.guard.CheckName(host)
	if err != nil {
		return nil, err
	}
	d := *t.dialer
	d.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		return t.guard.CheckAddr(ap, listed)
	}
	return d.DialContext(ctx, network, addr)
}

// CloseIdleConnections closes the kept-alive connections of both clients.
func (t *Transport) CloseIdleConnections() {
	t.h1.CloseIdleConnections()
	t.std.CloseIdleConnections()
}

type ctxKey uint8

const connectTimeoutKey ctxKey = 1

// Attempt is ctx for one upstream request: the dialer gives up a connect
// after connect (0: no bound of its own), and wrote, if not nil, is called
// once the request's bytes are written or given up on — which may be after
// RoundTrip returned, when the upstream answered before reading the whole
// body — so the caller knows when the body's buffer is free again.
func Attempt(ctx context.Context, connect time.Duration, wrote func()) context.Context {
	ctx = context.WithValue(ctx, connectTimeoutKey, connect)
	if wrote == nil {
		return ctx
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote() },
	})
}

// HTTPClient is an *http.Client whose requests all go through c, each with
// the header name set to value (name "": none), for an SDK that takes a
// client rather than a transport (the MCP SDK): its requests then keep the
// egress guard and the connection reuse of Relay's other upstream calls.
func HTTPClient(c Client, name, value string) *http.Client {
	return &http.Client{Transport: &headerTransport{base: c, name: name, value: value}}
}

// headerTransport sets one header on every request it sends.
type headerTransport struct {
	base        Client
	name, value string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.name == "" {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set(t.name, t.value)
	return t.base.RoundTrip(r)
}
