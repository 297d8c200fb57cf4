package server

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/relay-llm/relay/internal/wire"
)

// HTTP/1.1 framing Relay holds its listeners to beyond what net/http does
// itself:
//
//   - A request with both Content-Length and Transfer-Encoding is answered
//     and its connection closed (RFC 9112 §6.1): behind a front proxy that
//     framed it by Content-Length, what follows on the connection is not
//     what the proxy thinks it is. net/http drops the Content-Length field
//     before a handler sees the request, so the connection notes, as it is
//     read, whether a Content-Length field line came by.
//   - The errors net/http answers before a handler runs (a malformed
//     request line or header, 417, 431, 501 for an unknown transfer coding,
//     505) are answered in the OpenAI error shape instead of plain text:
//     the connection recognises net/http's own canned answers as they are
//     written and writes the JSON in their place. Which wire shape the
//     caller speaks is unknown before its path and body, so it is the
//     OpenAI shape, Relay's own.
//   - A request with more header fields than the plane allows is answered
//     431 in that shape (net/http bounds only their bytes).
//
// The connection wrapper works on plain HTTP/1.1; over TLS net/http needs
// the *tls.Conn itself, so a TLS listener keeps net/http's behaviour.

// frameListener wraps each accepted connection in a frameConn.
type frameListener struct{ net.Listener }

func (l frameListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &frameConn{Conn: c}, nil
}

// contentLength is the field name frameConn looks for, in lower case.
const contentLength = "content-length"

// frameConn is a connection that notes whether a Content-Length field line
// was read on it and answers net/http's own framing errors in JSON.
type frameConn struct {
	net.Conn
	// sawLength: a line starting "Content-Length:" (any case) was read.
	// Sticky: it may come from a body or from the next pipelined request,
	// and then it only closes a connection that could have stayed open.
	sawLength atomic.Bool
	// m is how much of contentLength the current line has matched; -1
	// once the line cannot be that field. Read only by Read, which
	// net/http never calls concurrently.
	m int
}

func (c *frameConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.sawLength.Load() {
		c.scan(p[:n])
	}
	return n, err
}

// scan follows the bytes read for a line that starts with the
// Content-Length field name and a colon.
func (c *frameConn) scan(p []byte) {
	for len(p) > 0 {
		if c.m < 0 { // skip to the next line
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				return
			}
			p, c.m = p[i+1:], 0
			continue
		}
		b := p[0]
		p = p[1:]
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		switch {
		case c.m == len(contentLength):
			if b == ':' {
				c.sawLength.Store(true)
				return
			}
			c.m = -1
		case b == contentLength[c.m]:
			c.m++
		case b == '\n':
			c.m = 0
		default:
			c.m = -1
		}
	}
}

func (c *frameConn) Write(p []byte) (int, error) {
	if status, msg, ok := goFramingError(p); ok {
		if _, err := c.Conn.Write(appendFramingError(nil, status, msg)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// goErrorHeaders is what net/http writes between the status line and the
// body of an answer it makes before a handler runs.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// goFramingError recognises a write that is one of net/http's own framing
// answers, whole, and returns its status and what it says. Those are
// "HTTP/1.1 " + status line + goErrorHeaders + the status line again (or
// "Unsupported transfer encoding" for 501), and the 417 net/http sends for
// an Expect it does not know: a status line, Connection: close, Date and
// Content-Length: 0. A handler's answer always carries other fields (a
// Date before Content-Type, Relay's request id), so it never matches.
func goFramingError(p []byte) (status int, msg string, ok bool) {
	const proto = "HTTP/1.1 "
	if len(p) < len(proto)+4 || string(p[:len(proto)]) != proto || p[len(proto)+3] != ' ' {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(p[len(proto) : len(proto)+3]))
	if err != nil {
		return 0, "", false
	}
	if status == http.StatusExpectationFailed {
		return status, "Relay does not support this Expect header; only 100-continue is supported.", isGo417(p)
	}
	i := bytes.Index(p, []byte(goErrorHeaders))
	if i < 0 {
		return 0, "", false
	}
	line, body := p[len(proto):i], p[i+len(goErrorHeaders):]
	if !bytes.Equal(body, line) && (status != http.StatusNotImplemented || string(body) != "Unsupported transfer encoding") {
		return 0, "", false
	}
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return status, "The request's header fields are too large.", true
	case http.StatusNotImplemented:
		return status, "The request's Transfer-Encoding is not supported; send chunked or a Content-Length.", true
	case http.StatusHTTPVersionNotSupported:
		return status, "The HTTP version is not supported; send HTTP/1.1 (or HTTP/1.0).", true
	case http.StatusBadRequest:
		msg = "The HTTP request could not be read (malformed request line or header fields)."
		if _, detail, found := bytes.Cut(line, []byte(": ")); found {
			msg = "The HTTP request could not be read: " + string(detail) + "."
		}
		return status, msg, true
	}
	return 0, "", false
}

// isGo417 reports whether p is exactly the head net/http writes for an
// unknown Expect: the status line, then Connection: close, Date and
// Content-Length: 0 and nothing else.
func isGo417(p []byte) bool {
	head, rest, found := bytes.Cut(p, []byte("\r\n\r\n"))
	if !found || len(rest) != 0 {
		return false
	}
	lines := bytes.Split(head, []byte("\r\n"))
	if len(lines) != 4 || string(lines[0]) != "HTTP/1.1 417 Expectation Failed" {
		return false
	}
	want := map[string]bool{"Connection: close": false, "Content-Length: 0": false}
	for _, l := range lines[1:] {
		if _, ok := want[string(l)]; ok {
			want[string(l)] = true
		} else if !bytes.HasPrefix(l, []byte("Date: ")) {
			return false
		}
	}
	return want["Connection: close"] && want["Content-Length: 0"]
}

// framingCodes are the error codes of the framing answers. Read only.
var framingCodes = map[int]string{
	http.StatusBadRequest:                  "invalid_request",
	http.StatusExpectationFailed:           "expectation_failed",
	http.StatusRequestHeaderFieldsTooLarge: "request_headers_too_large",
	http.StatusNotImplemented:              "unsupported_transfer_encoding",
	http.StatusHTTPVersionNotSupported:     "http_version_not_supported",
}

// framingBody is the OpenAI-shaped error body of a framing answer.
func framingBody(status int, msg string) []byte {
	b := []byte(`{"error":{"message":`)
	b = wire.AppendString(b, msg)
	b = append(b, `,"type":"invalid_request_error","param":null,"code":`...)
	b = wire.AppendString(b, framingCodes[status])
	return append(b, "}}\n"...)
}

// appendFramingError appends a whole framing answer: status line, fields,
// body; the connection closes after it.
func appendFramingError(dst []byte, status int, msg string) []byte {
	body := framingBody(status, msg)
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, ' ')
	dst = append(dst, http.StatusText(status)...)
	dst = append(dst, "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}

// connKey finds a request's connection in its context.
type connKey struct{}

// withConn is the http.Server's ConnContext: it keeps the connection for
// withFraming.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// withFraming closes the connection after a request framed both by
// Transfer-Encoding and by Content-Length, and answers a request with more
// than maxHeaders header fields 431 (Host counts; 0: no bound).
func withFraming(maxHeaders int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if maxHeaders > 0 && headerFields(r) > maxHeaders {
			writeFramingError(w, http.StatusRequestHeaderFieldsTooLarge,
				"The request has more than "+strconv.Itoa(maxHeaders)+" header fields.")
			return
		}
		if len(r.TransferEncoding) > 0 {
			if c, ok := r.Context().Value(connKey{}).(*frameConn); ok && c.sawLength.Load() {
				w.Header().Set("Connection", "close")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// headerFields counts a request's header field lines, Host included.
func headerFields(r *http.Request) int {
	n := 1 // Host, which net/http takes out of the map
	for _, vv := range r.Header {
		n += len(vv)
	}
	return n
}

// writeFramingError answers a framing error from a handler and closes the
// connection after it.
func writeFramingError(w http.ResponseWriter, status int, msg string) {
	body := framingBody(status, msg)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Connection", "close")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body) // the client may be gone
}

// bodyUntil is the body deadline of a request that starts now: zero when
// there is none.
func bodyUntil(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}
