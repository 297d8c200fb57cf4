package proxy

import (
	"net/http"
	"net/textproto"
	"slices"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// appendOutboundHeaders copies into dst the caller's headers that may go
// upstream: those the binding's shape forwards (wire.ForwardsHeader) and
// those the host lists (host.ForwardHeaders, canonical names), never one
// wire.NeverForwarded names and never one the caller's Connection header
// calls hop-by-hop. Everything else stays behind. It returns dst.
func appendOutboundHeaders(dst, src http.Header, shape wire.Shape, host *snapshot.Host) http.Header {
	hop := len(src["Connection"]) > 0
	for name, vs := range src {
		if !wire.ForwardsHeader(shape, name) && !slices.Contains(host.ForwardHeaders, name) {
			continue
		}
		if wire.NeverForwarded(name) || hop && wire.HeaderHas(src, "Connection", name) {
			continue
		}
		dst[name] = vs
	}
	return dst
}

// checkHeaderBounds refuses a request whose headers are more or larger
// than any SDK sends: every one of them is read (and most dropped) on the
// way upstream, and a tenant's 10,000 headers should cost Relay nothing.
func checkHeaderBounds(h http.Header, maxFields, maxBytes int) error {
	n, size := 0, 0
	for name, vs := range h {
		for _, v := range vs {
			n++
			size += len(name) + len(v) + 4 // ": " and CRLF
		}
	}
	if n > maxFields || size > maxBytes {
		return wire.Errorf(wire.ErrHeadersTooLarge, "The request carries %d header fields in %d bytes; Relay accepts at most %d fields and %d bytes.", n, size, maxFields, maxBytes)
	}
	return nil
}

// Default bounds of a caller's request headers (checkHeaderBounds), the
// defaults of RELAY_MAX_HEADERS and RELAY_MAX_HEADER_BYTES.
const (
	defaultMaxHeaders     = 100
	defaultMaxHeaderBytes = 64 << 10
)

// copyResponseHeaders passes on the upstream response headers worth a
// caller's while: content type, provider request ids (they help support)
// and retry hints. Everything else stays behind, above all what describes
// the shared host key: its rate-limit state (x-ratelimit-*,
// anthropic-ratelimit-*), organisation and project (openai-organization,
// openai-project, anthropic-organization-id). It reads only the upstream's
// headers, so Relay's own (X-Relay-*, the caller's rate-limit state) are
// set on dst after it.
func copyResponseHeaders(dst, src http.Header) {
	for name, vs := range src {
		if passResponseHeader(name) {
			dst[name] = vs
		}
	}
}

func passResponseHeader(name string) bool {
	switch name {
	case "Content-Type", "X-Request-Id", "Request-Id", "Openai-Processing-Ms", "Openai-Version",
		"X-Amzn-Requestid", "Apim-Request-Id", // Bedrock's and Azure's request ids
		"Retry-After", "Retry-After-Ms":
		return true
	}
	return false
}

// setHeader is h.Set(k, v) with the one-value slice taken from the
// request's slab of header values instead of allocated on its own. The
// slab is the request's alone (reset drops it, never reuses it), since
// net/http may still read the response's header map after the handler
// returned.
func (rq *request) setHeader(h http.Header, k, v string) {
	if len(rq.hvals) == cap(rq.hvals) {
		rq.hvals = make([]string, 0, 8)
	}
	rq.hvals = append(rq.hvals, v)
	n := len(rq.hvals)
	h[textproto.CanonicalMIMEHeaderKey(k)] = rq.hvals[n-1 : n : n]
}
