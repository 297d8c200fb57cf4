// Package upstream owns how Relay's inference plane talks to upstreams: the
// one Transport every upstream request goes through, its dialer (each
// host's connect timeout, the egress guard checked on the address dialed)
// and its two clients — a hand-written HTTP/1.1 client for http:// and, by
// default, https:// upstreams (h1.go), and net/http for HTTP/2 where the
// provider offers it (Options.HTTP2) and for proxies from the environment.
//
// The proxy sees it through Client and Attempt alone; the ban table in
// internal/depban keeps the inference plane from building an HTTP client of
// its own beside it. It knows nothing of routes, keys or shapes: it
// imports no Relay package but egress (the dial rule) and wire (header
// syntax).
package upstream
