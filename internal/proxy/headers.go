package proxy

import (
	"net/http"
	"net/textproto"
	"strings"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// appendOutboundHeaders copies into dst the caller's headers that may go
// upstream: never its credentials, cookies, hop-by-hop headers, Relay's own
// X-Relay-*, or headers that belong to the connection or to a provider
// account. It returns dst.
func appendOutboundHeaders(dst, src http.Header) http.Header {
	var hop []string
	for _, v := range src["Connection"] {
		hop = append(hop, strings.Split(v, ",")...)
	}
	for name, vs := range src {
		if dropRequestHeader(name) || strings.HasPrefix(name, "X-Relay-") {
			continue
		}
		if isListed(hop, name) {
			continue
		}
		dst[name] = vs
	}
	return dst
}

func dropRequestHeader(name string) bool {
	switch name {
	case "Authorization", "X-Api-Key", "X-Goog-Api-Key", "Cookie", "Proxy-Authorization",
		"Host", "Content-Length", "Accept-Encoding",
		"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		// A caller's provider account selectors would clash with the host key's.
		"Openai-Organization", "Openai-Project":
		return true
	}
	return false
}

func isListed(list []string, name string) bool {
	for _, h := range list {
		if textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(h)) == name {
			return true
		}
	}
	return false
}

// setUpstreamAuth puts the host key in the header the upstream shape expects.
func setUpstreamAuth(h http.Header, shape wire.Shape, secret snapshot.Secret) {
	switch shape {
	case wire.ShapeAnthropic:
		h.Set("X-Api-Key", secret.Reveal())
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", defaultAnthropicVersion)
		}
	case wire.ShapeGemini:
		h.Set("X-Goog-Api-Key", secret.Reveal())
	default:
		h.Set("Authorization", "Bearer "+secret.Reveal())
	}
}

// copyResponseHeaders passes on the upstream response headers worth a
// caller's while: content type, provider request ids, rate-limit state and
// retry hints. Hop-by-hop and everything else stay behind.
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
		"Retry-After", "Retry-After-Ms":
		return true
	}
	return strings.HasPrefix(name, "X-Ratelimit-") || strings.HasPrefix(name, "Anthropic-Ratelimit-")
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
