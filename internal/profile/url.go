package profile

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/relay-llm/relay/internal/wire"
)

// Call is one upstream call as the proxy builds it for the plain public
// API of its shape.
type Call struct {
	Shape wire.Shape
	// Path is the public API's path: "/v1/chat/completions",
	// "/v1beta/models/gemini-2.0-flash:streamGenerateContent".
	Path string
	// Query is the raw query the call carries, without '?'.
	Query string
	// Model is the binding's upstream model.
	Model  string
	Stream bool
	// Header is the caller's request headers, read by a rewrite's
	// HeaderLists (anthropic-beta into Bedrock's body); nil unless the
	// caller speaks the binding's shape (a translated call's headers are
	// another provider's).
	Header http.Header
}

// Op is the call's operation: its path without the API version
// ("/chat/completions", "/messages", "/models/m:generateContent").
func (c Call) Op() string {
	for _, v := range [...]string{"/v1beta/", "/v1/"} {
		if strings.HasPrefix(c.Path, v) {
			return c.Path[len(v)-1:]
		}
	}
	return c.Path
}

// URL is the call's URL on a host with this profile: the shape's path
// template (Paths) expanded under the base URL, or the public path when the
// profile has none for the shape, then the call's query and the profile's
// (Query). A nil profile is the plain public API.
//
// Placeholders: {model} the upstream model; {op} the call's Op; {method}
// Gemini's method (what follows ':' in the public path); {stream:a|b} a
// when the call does not stream, b when it does; any other {name} the
// host's parameter of that name. Every value is path-escaped.
func (p *Profile) URL(base string, params map[string]string, c Call) string {
	var b strings.Builder
	if t, ok := p.path(c.Shape); ok {
		b.WriteString(strings.TrimRight(base, "/"))
		expand(&b, t, params, c)
	} else {
		b.WriteString(wire.JoinURL(base, c.Path))
	}
	sep := byte('?')
	if c.Query != "" {
		b.WriteByte(sep)
		b.WriteString(c.Query)
		sep = '&'
	}
	if p == nil || p.Query == "" {
		return b.String()
	}
	for _, pair := range strings.Split(p.Query, "&") {
		name, tmpl, _ := strings.Cut(pair, "=")
		var v strings.Builder
		if !expand(&v, tmpl, params, c) {
			continue // an unset parameter: the pair is left out
		}
		b.WriteByte(sep)
		b.WriteString(url.QueryEscape(name))
		b.WriteByte('=')
		b.WriteString(v.String())
		sep = '&'
	}
	return b.String()
}

func (p *Profile) path(s wire.Shape) (string, bool) {
	if p == nil {
		return "", false
	}
	t, ok := p.Paths[s]
	return t, ok
}

// expand writes template t with its placeholders filled; false when a
// parameter it names is unset.
func expand(b *strings.Builder, t string, params map[string]string, c Call) bool {
	ok := true
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(t)
			return ok
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			b.WriteString(t)
			return ok
		}
		b.WriteString(t[:i])
		name := t[i+1 : i+j]
		t = t[i+j+1:]
		switch {
		case name == "model":
			b.WriteString(url.PathEscape(c.Model))
		case name == "op":
			b.WriteString(c.Op())
		case name == "method":
			op := c.Op()
			if k := strings.LastIndexByte(op, ':'); k >= 0 {
				b.WriteString(op[k+1:])
			}
		case strings.HasPrefix(name, "stream:"):
			plain, streamed, _ := strings.Cut(name[len("stream:"):], "|")
			if c.Stream {
				b.WriteString(streamed)
			} else {
				b.WriteString(plain)
			}
		default:
			v := params[name]
			if v == "" {
				ok = false
			}
			b.WriteString(url.PathEscape(v))
		}
	}
}
