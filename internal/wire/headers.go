package wire

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
)

// A caller's header reaches the upstream only if the binding's shape
// documents it for callers (ForwardsHeader) or the host's operator listed
// it; a header that selects credentials, billing, a project or an
// organisation, that frames the body Relay sends, or that says where the
// request came from is never forwarded (NeverForwarded), listed or not.
// Names are canonical (textproto.CanonicalMIMEHeaderKey), as net/http
// hands them over.

// MaxForwardHeaders bounds how many names a host may add to its shape's
// allow-list.
const MaxForwardHeaders = 32

// ErrHeaderNotForwardable is the error of CheckForwardHeader.
var ErrHeaderNotForwardable = errors.New("header not forwardable")

// ForwardsHeader reports whether the shape lets a caller's header go
// upstream by itself: the SDKs' protocol headers (versions and betas, so
// Claude Code's betas reach anthropic bindings), their telemetry
// (User-Agent, X-Stainless-*, X-Goog-Api-Client) and W3C trace context
// (Relay's own replaces it when Relay traces).
func ForwardsHeader(shape Shape, name string) bool {
	switch name {
	case "Accept", "User-Agent", "Traceparent", "Tracestate":
		return true
	}
	switch shape {
	case ShapeOpenAI, ShapeOpenAIResponses:
		switch name {
		case "Openai-Beta", "X-Client-Request-Id":
			return true
		}
		return strings.HasPrefix(name, "X-Stainless-")
	case ShapeAnthropic:
		switch name {
		case "Anthropic-Version", "Anthropic-Beta":
			return true
		}
		return strings.HasPrefix(name, "X-Stainless-")
	case ShapeGemini:
		return name == "X-Goog-Api-Client"
	}
	return false
}

// NeverForwarded reports whether a header must not go upstream from a
// caller even when a host lists it: credentials of any provider face,
// billing, project and organisation selectors (they would act on the host
// key's account), the framing and encoding of the body Relay sends (plain
// JSON of Relay's own length), hop-by-hop headers, where the request came
// from, Relay's own X-Relay-* and the mock upstream's X-Mock-* faults.
func NeverForwarded(name string) bool {
	switch name {
	case "Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key",
		"Ocp-Apim-Subscription-Key", "Cookie",
		"X-Goog-User-Project", "Openai-Organization", "Openai-Project",
		"Host", "Content-Length", "Content-Type", "Content-Encoding", "Accept-Encoding", "Expect",
		"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Forwarded", "X-Real-Ip", "Via":
		return true
	}
	for _, p := range [...]string{"X-Forwarded-", "X-Relay-", "X-Mock-", "X-Amz-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// CheckForwardHeader validates a header name an operator adds to a host's
// allow-list and returns it canonical; a name NeverForwarded refuses is an
// error wrapping ErrHeaderNotForwardable.
func CheckForwardHeader(name string) (string, error) {
	if name == "" || len(name) > 128 || !isToken(name) {
		return "", fmt.Errorf("check header %q: %w: not a header name", name, ErrHeaderNotForwardable)
	}
	c := textproto.CanonicalMIMEHeaderKey(name)
	if NeverForwarded(c) {
		return "", fmt.Errorf("check header %q: %w: it selects credentials, billing or framing", c, ErrHeaderNotForwardable)
	}
	return c, nil
}

// CheckForwardHeaders validates a host's whole list: at most
// MaxForwardHeaders names, each CheckForwardHeader's, without repeats.
// It returns the names canonical.
func CheckForwardHeaders(names []string) ([]string, error) {
	if len(names) > MaxForwardHeaders {
		return nil, fmt.Errorf("check forward headers: %w: at most %d names", ErrHeaderNotForwardable, MaxForwardHeaders)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		c, err := CheckForwardHeader(n)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o == c {
				return nil, fmt.Errorf("check header %q: %w: listed twice", c, ErrHeaderNotForwardable)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// isToken reports whether s is an RFC 9110 token, the syntax of a field name.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !IsTokenByte(s[i]) {
			return false
		}
	}
	return true
}

// IsTokenByte reports whether c may appear in an RFC 9110 token.
func IsTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// HeaderHas reports whether the comma-separated header k of h lists token,
// in any case (Connection: close, Connection: keep-alive, a hop-by-hop name).
func HeaderHas(h http.Header, k, token string) bool {
	for _, v := range h[k] {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

// PresentedKey returns the credential a caller sent the way the OpenAI and
// Anthropic SDKs (or Relay's own header) send it: X-Relay-Key, else
// Authorization: Bearer, else x-api-key; "" when none came.
func PresentedKey(h http.Header) string {
	if v := h.Get("X-Relay-Key"); v != "" {
		return strings.TrimSpace(v)
	}
	if v := h.Get("Authorization"); len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return strings.TrimSpace(h.Get("X-Api-Key"))
}
