package upstream

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/relay-llm/relay/internal/wire"
)

// h1Client is a minimal HTTP/1.1 client for upstreams, plain or over TLS
// (offering only http/1.1 in ALPN). It does
// the whole exchange on the caller's goroutine: the request goes out in one
// write (headers and an in-memory body together) and the response is read
// from a pooled connection as the caller reads the body, so there is no
// reader and writer goroutine per connection and no hand-off between them,
// which is where net/http's Transport spends most of its time on a request
// to a nearby upstream. Cancellation (the caller, Relay's timeouts) reaches
// a blocked read or write through a context.AfterFunc that expires the
// connection's deadline.
//
// What it does not do, NewTransport leaves to net/http: HTTP/2, proxies
// from the environment.
type h1Client struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// tls starts each https:// connection (its ServerName and NextProtos
	// set per connection); nil: the client takes http:// only.
	tls *tls.Config

	mu   sync.Mutex
	idle map[string][]*h1Conn // by host:port, most recently used last

	heads sync.Pool // *[]byte: request heads (and in-memory bodies) being written

	// Connections' read buffers: taken when a connection opens, given back
	// when it closes and, where the socket can be waited on without one,
	// while a body waits for its upstream (Await), so that a stream the
	// upstream keeps quiet holds no buffer.
	readers     sync.Pool    // *bufio.Reader of h1BufferSize
	readersLent atomic.Int64 // taken and not given back
}

// Bounds of the client's pool and of what it reads.
const (
	h1MaxIdlePerHost  = 256
	h1IdleTimeout     = 90 * time.Second
	h1BufferSize      = 4 << 10
	h1MaxHeaderBytes  = 1 << 20
	h1HeadScratch     = 2 << 10
	h1MaxInMemoryBody = 1 << 20 // a bigger request body is written after its headers
	h1TLSHandshake    = 10 * time.Second
)

// h1Conn is one pooled connection.
type h1Conn struct {
	c      net.Conn
	br     *bufio.Reader
	idleAt time.Time
	// scratch gathers a response's head before it is made strings
	// (readHeader); a longer head grows a copy that is not kept.
	scratch []byte
	raw     syscall.RawConn // c's socket, for Await; nil until asked, or when c has none (TLS)
	peek    [1]byte         // what Await peeks into
	noRaw   bool            // c has no socket to wait on
	ready   func(fd uintptr) bool
}

// errH1Unwritten marks a failure to write any byte of the request on a
// reused connection: the request can go again on a fresh one.
var errH1Unwritten = errors.New("request not written")

func newH1Client(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *h1Client {
	return &h1Client{dial: dial, idle: map[string][]*h1Conn{}}
}

// tlsPool prefixes the pool key of a TLS connection, so that a host's
// plain and TLS connections never share a pool.
const tlsPool = "https://"

// poolKey is the pool a request's connection comes from and returns to:
// the address to dial, its host with the scheme's default port, marked
// with tlsPool for https.
func poolKey(u *url.URL) string {
	host := u.Host
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	if h, p, err := net.SplitHostPort(host); err == nil && p == "" {
		host = net.JoinHostPort(h, port) // "host:" is the default port, as net/http reads it
	} else if err != nil {
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		}
		host = net.JoinHostPort(host, port)
	}
	if u.Scheme == "https" {
		return tlsPool + host
	}
	return host
}

// RoundTrip sends req (http://, or https:// when the client has a TLS
// configuration) and returns the response, whose
// body holds the connection until it is read to the end or closed.
func (h *h1Client) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	// Once the request's bytes are written or given up on, tell whoever
	// waits for that, as net/http does: when RoundTrip returns, or, for a
	// body still being written when the response came (exchange), once
	// its writer is done with it.
	var wrote func()
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteRequest != nil {
		wrote = func() { tr.WroteRequest(httptrace.WroteRequestInfo{}) }
	}
	writing := false // the last exchange left its body's writer running
	defer func() {
		if wrote != nil && !writing {
			wrote()
		}
	}()
	addr := poolKey(req.URL)
	hb := h.headBuf()
	defer h.heads.Put(hb)
	head, body, err := h.encode((*hb)[:0], req)
	if cap(head) <= 64<<10 {
		*hb = head // keep what it grew to, within reason
	}
	if err != nil {
		closeBody(req)
		return nil, err
	}
	for tries := 0; ; tries++ {
		c, reused, err := h.get(ctx, addr)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := h.exchange(ctx, c, req, head, body, wrote, &writing)
		if err == nil {
			return resp, nil
		}
		if errors.Is(err, errH1Unwritten) && reused && tries == 0 && ctx.Err() == nil {
			continue // a connection the upstream had closed: once more on a fresh one
		}
		closeBody(req)
		if ctx.Err() != nil {
			return nil, ctxErr(ctx)
		}
		return nil, err
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// ctxErr is what an operation the context interrupted returns: its cause.
func ctxErr(ctx context.Context) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	return ctx.Err()
}

func (h *h1Client) headBuf() *[]byte {
	if b, ok := h.heads.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 2048)
	return &b
}

// encode appends req's head to b and reads its body after it, if the body
// is small enough to go out with the head; else it returns the body to
// write after the head.
func (h *h1Client) encode(b []byte, req *http.Request) (head []byte, body io.Reader, err error) {
	if req.URL.Scheme != "http" && (req.URL.Scheme != "https" || h.tls == nil) {
		return b, nil, fmt.Errorf("h1: unsupported scheme %q", req.URL.Scheme)
	}
	b = append(b, req.Method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if req.Header.Get("User-Agent") == "" {
		b = append(b, "User-Agent: Go-http-client/1.1\r\n"...)
	}
	for k, vs := range req.Header {
		if !validHeaderName(k) {
			return b, nil, fmt.Errorf("h1: invalid header field name %q", k)
		}
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection":
			continue
		}
		for _, v := range vs {
			if !validHeaderValue(v) {
				return b, nil, fmt.Errorf("h1: invalid header field value for %q", k)
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, strings.TrimSpace(v)...)
			b = append(b, "\r\n"...)
		}
	}
	n := req.ContentLength
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody && n < 0 {
		return b, nil, errors.New("h1: a request body needs its length")
	}
	if hasBody || n > 0 || req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, max(n, 0), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	if !hasBody || n == 0 {
		return b, nil, nil
	}
	if n <= h1MaxInMemoryBody {
		// Read it into the head's buffer: one write for both.
		start := len(b)
		b = append(b, make([]byte, n)...)
		if _, err := io.ReadFull(req.Body, b[start:]); err != nil {
			return b, nil, fmt.Errorf("h1: read request body: %w", err)
		}
		return b, nil, nil
	}
	return b, io.LimitReader(req.Body, n), nil
}

// validHeaderName reports whether k is a field name: an RFC 9110 token, as
// net/http requires of the names it sends and reads (it reads on past a
// name with a space, which h1 refuses: no provider sends one).
func validHeaderName[T string | []byte](k T) bool {
	if len(k) == 0 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !wire.IsTokenByte(k[i]) {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v holds no control byte but HTAB, as
// net/http's textproto checks a value it reads.
func validHeaderValue[T string | []byte](v T) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// get returns a pooled connection to addr that still looks alive, or dials
// one.
func (h *h1Client) get(ctx context.Context, addr string) (*h1Conn, bool, error) {
	now := time.Now()
	for {
		h.mu.Lock()
		list := h.idle[addr]
		n := len(list)
		if n == 0 {
			h.mu.Unlock()
			break
		}
		c := list[n-1]
		list[n-1] = nil
		h.idle[addr] = list[:n-1]
		h.mu.Unlock()
		if now.Sub(c.idleAt) < h1IdleTimeout && c.alive() {
			return c, true, nil
		}
		h.discard(c)
	}
	nc, err := h.connect(ctx, addr)
	if err != nil {
		return nil, false, err
	}
	return &h1Conn{c: nc, br: h.reader(nc)}, false, nil
}

// reader lends a read buffer for nc.
func (h *h1Client) reader(nc net.Conn) *bufio.Reader {
	h.readersLent.Add(1)
	if br, ok := h.readers.Get().(*bufio.Reader); ok {
		br.Reset(nc)
		return br
	}
	return bufio.NewReaderSize(nc, h1BufferSize)
}

// unlend takes c's read buffer back, which must hold nothing unread.
func (h *h1Client) unlend(c *h1Conn) {
	if c.br == nil {
		return
	}
	c.br.Reset(nil)
	h.readers.Put(c.br)
	c.br = nil
	h.readersLent.Add(-1)
}

// discard closes c and takes its read buffer back.
func (h *h1Client) discard(c *h1Conn) {
	c.c.Close()
	h.unlend(c)
}

// connect dials the pool key addr, and for a TLS pool completes the
// handshake: the certificate verified for the host, http/1.1 the only
// protocol offered, a session resumed where the cache holds one.
func (h *h1Client) connect(ctx context.Context, addr string) (net.Conn, error) {
	hp, secure := strings.CutPrefix(addr, tlsPool)
	nc, err := h.dial(ctx, "tcp", hp)
	if err != nil || !secure {
		return nc, err
	}
	host, _, _ := net.SplitHostPort(hp)
	cfg := h.tls.Clone()
	cfg.ServerName = host
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(nc, cfg)
	hctx, cancel := context.WithTimeout(ctx, h1TLSHandshake)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		nc.Close()
		return nil, err
	}
	return &burstConn{Conn: tc}, nil
}

// burstConn is a TLS connection whose Read returns every record crypto/tls
// already holds, not one: a provider flushes each stream event as a record
// of its own, and one socket read often brings several; read one record at
// a time they would each become a write to the caller, where over plain TCP
// the events that arrived together are read, and sent on, together. After
// the first record it reads on with a deadline already past, which the
// runtime answers without a system call (so only what crypto/tls buffered
// is drained) and crypto/tls takes as temporary (a record half arrived stays
// for the next Read).
//
// The one deadline h1Client otherwise sets is the cancellation's (exchange:
// far in the past, never cleared); SetDeadline notes it, so that clearing
// the poll's deadline never clears a cancellation that came meanwhile.
//
// A read that met the end (close_notify, EOF, an alert) marks the
// connection ended, which alive sees even when the socket beneath looks
// quiet. Close closes the socket without sending close_notify: crypto/tls
// would wait up to 5 s to write it to an upstream that stopped reading, on
// the caller's goroutine.
type burstConn struct {
	*tls.Conn
	canceled atomic.Bool
	pending  error // a failure met reading on, for the next Read
	ended    bool  // a read failed for good: never reuse
}

func (b *burstConn) Close() error { return b.NetConn().Close() }

func (b *burstConn) SetDeadline(t time.Time) error {
	if !t.IsZero() {
		b.canceled.Store(true)
	}
	return b.Conn.SetDeadline(t)
}

func (b *burstConn) Read(p []byte) (int, error) {
	if err := b.pending; err != nil {
		b.pending = nil
		return 0, err
	}
	n, err := b.Conn.Read(p)
	if err != nil {
		b.ended = true
	}
	for err == nil && n > 0 && n < len(p) && !b.canceled.Load() {
		_ = b.Conn.SetReadDeadline(time.Unix(1, 0))
		m, rerr := b.Conn.Read(p[n:])
		_ = b.Conn.SetReadDeadline(time.Time{})
		if b.canceled.Load() {
			_ = b.Conn.SetDeadline(time.Unix(1, 0))
		}
		n += m
		if rerr != nil {
			if !errors.Is(rerr, os.ErrDeadlineExceeded) {
				b.pending, b.ended = rerr, true
			}
			break
		}
	}
	return n, err
}

// alive reports whether an idle connection has neither been closed by the
// upstream nor been sent anything unasked. On TLS the socket beneath is
// looked at: anything there while idle (a close_notify, a key update) is
// taken as the end, which costs at most a fresh connection.
func (c *h1Conn) alive() bool {
	nc := c.c
	if bc, ok := nc.(*burstConn); ok {
		if bc.ended {
			return false
		}
		nc = bc.NetConn()
	}
	return c.br.Buffered() == 0 && connAlive(nc)
}

// put returns c to the pool, or closes it when the pool for addr is full.
// Connections idle past h1IdleTimeout at the cold end of the pool (get
// takes the most recent) are closed on the way.
func (h *h1Client) put(addr string, c *h1Conn) {
	c.idleAt = time.Now()
	var stale []*h1Conn
	h.mu.Lock()
	list := h.idle[addr]
	for len(list) > 0 && c.idleAt.Sub(list[0].idleAt) >= h1IdleTimeout {
		stale = append(stale, list[0])
		list[0] = nil
		list = list[1:]
	}
	if len(list) < h1MaxIdlePerHost {
		list = append(list, c)
		c = nil
	}
	h.idle[addr] = list
	h.mu.Unlock()
	if c != nil {
		h.discard(c)
	}
	for _, s := range stale {
		h.discard(s)
	}
}

// CloseIdleConnections closes every pooled connection.
func (h *h1Client) CloseIdleConnections() {
	h.mu.Lock()
	idle := h.idle
	h.idle = map[string][]*h1Conn{}
	h.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			h.discard(c)
		}
	}
}

// exchange writes the request on c and reads the response head. On error
// c is closed. A body that does not go out with the head is written on a
// goroutine while the response is read, so that an upstream that answers
// before reading it all (a 413, a 401) and stops reading is heard at once,
// as net/http hears it; when the response comes before that body is
// written, the connection is not reused, *writing is set and wrote is
// called once the writer is done with the body.
func (h *h1Client) exchange(ctx context.Context, c *h1Conn, req *http.Request, head []byte, body io.Reader, wrote func(), writing *bool) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetDeadline(time.Unix(1, 0)) })
	var werrc chan error // the body's writer, while it runs
	fail := func(err error) (*http.Response, error) {
		stop()
		h.discard(c)
		if werrc != nil {
			<-werrc // closing c ended the write: the body is let go
		}
		return nil, err
	}
	if n, err := c.c.Write(head); err != nil {
		if n == 0 {
			err = fmt.Errorf("%w: %w", errH1Unwritten, err)
		}
		return fail(err)
	}
	if body != nil {
		done := make(chan error, 1)
		werrc = done
		go func() {
			_, err := io.Copy(c.c, body)
			closeBody(req)
			done <- err
		}()
	} else {
		closeBody(req)
	}
	if c.scratch == nil {
		c.scratch = make([]byte, 0, h1HeadScratch)
	}
	for {
		lb, err := readLine(c.br, c.scratch[:0], h1MaxHeaderBytes)
		if err != nil {
			return fail(err)
		}
		var line string
		switch string(lb) { // the usual status lines without an allocation
		case "HTTP/1.1 200 OK":
			line = "HTTP/1.1 200 OK"
		default:
			line = string(lb)
		}
		proto, status, ok := strings.Cut(line, " ")
		if !ok || (proto != "HTTP/1.1" && proto != "HTTP/1.0") || len(status) < 3 || len(status) > 3 && status[3] != ' ' {
			return fail(fmt.Errorf("h1: malformed status line %.64q", line))
		}
		code, err := strconv.Atoi(status[:3])
		if err != nil || code < 100 || code > 999 {
			return fail(fmt.Errorf("h1: malformed status line %.64q", line))
		}
		hdr, err := readHeader(c.br, c.scratch[:0])
		if err != nil {
			return fail(err)
		}
		if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
			continue // informational: the answer follows
		}
		// The response and its body in one allocation: they live as long.
		rr := &struct {
			resp http.Response
			body h1Body
		}{}
		resp := &rr.resp
		*resp = http.Response{
			Status: status, StatusCode: code, Proto: proto, ProtoMajor: 1, ProtoMinor: 1,
			Header: hdr, Request: req, ContentLength: -1,
		}
		if proto == "HTTP/1.0" {
			resp.ProtoMinor = 0
		}
		keep := proto == "HTTP/1.1" && !wire.HeaderHas(hdr, "Connection", "close")
		if proto == "HTTP/1.0" && wire.HeaderHas(hdr, "Connection", "keep-alive") {
			keep = true
		}
		if werrc != nil {
			select {
			case err := <-werrc:
				if err != nil {
					keep = false // the upstream stopped reading: the connection is spent
				}
			default:
				// Answered before the body was all written: the writer runs
				// on until it ends or the connection is closed (finish
				// closes it, as it may not be reused).
				keep = false
				*writing = true
				go func(werrc chan error) {
					<-werrc
					if wrote != nil {
						wrote()
					}
				}(werrc)
			}
			werrc = nil // taken: a later fail must not wait for it
		}
		resp.Close = !keep
		rb := &rr.body
		*rb = h1Body{h: h, c: c, addr: poolKey(req.URL), stop: stop, ctx: ctx, keep: keep}
		// As net/http: HTTP/1.0 has no transfer codings; in HTTP/1.1 the
		// only one is chunked, alone — a body framed by another would be
		// read as the next response on this shared connection.
		if te := hdr["Transfer-Encoding"]; len(te) > 0 && proto == "HTTP/1.0" {
			hdr.Del("Transfer-Encoding")
		} else if len(te) > 0 && (len(te) != 1 || !strings.EqualFold(te[0], "chunked")) {
			return fail(fmt.Errorf("h1: unsupported Transfer-Encoding %q", te))
		}
		// Content-Length is checked whatever the framing turns out to be,
		// as net/http checks it: a bad one next to chunked, or on a 204,
		// is a sign the framing is not what it seems.
		cl := int64(-1)
		if vs := hdr["Content-Length"]; len(vs) > 0 {
			n, ok := contentLength(vs)
			if !ok {
				return fail(fmt.Errorf("h1: bad Content-Length %q", vs))
			}
			cl = n
		}
		switch {
		case req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified:
			resp.ContentLength = 0
			rb.left = 0
		case len(hdr["Transfer-Encoding"]) > 0:
			rb.chunked, rb.left = true, -1
			resp.TransferEncoding = []string{"chunked"}
			hdr.Del("Transfer-Encoding")
		case cl >= 0:
			resp.ContentLength, rb.left = cl, cl
		default:
			rb.left, rb.keep = -1, false // until the upstream closes
			resp.Close = true
		}
		if rb.left == 0 {
			rb.finish(nil)
			resp.Body = http.NoBody
			return resp, nil
		}
		resp.Body = rb
		return resp, nil
	}
}

// readHeader reads a response's header fields, at most h1MaxHeaderBytes:
// the block is gathered in scratch (grown if need be) and made one string
// that the names and values are cut from, the names canonical as
// textproto makes them, the values in one slice — a handful of allocations
// for the whole header instead of a few per field.
func readHeader(br *bufio.Reader, scratch []byte) (http.Header, error) {
	type field struct{ k, kEnd, v, vEnd int }
	var fieldsArr [24]field
	fields := fieldsArr[:0]
	buf := scratch[:0]
	size := 0
	for {
		start := len(buf)
		var err error
		buf, err = readLine(br, buf, h1MaxHeaderBytes-size)
		if err != nil {
			return nil, err
		}
		line := buf[start:]
		if len(line) == 0 {
			break
		}
		if size += len(line); size > h1MaxHeaderBytes {
			return nil, errTooLarge
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 || !validHeaderName(line[:colon]) || !validHeaderValue(line[colon+1:]) {
			return nil, fmt.Errorf("h1: malformed header line %.64q", line)
		}
		canonicalKey(line[:colon])
		v := line[colon+1:]
		t := bytes.TrimSpace(v)
		vs := start + colon + 1 + cap(v) - cap(t)
		if len(t) == 0 {
			vs = start + colon + 1
		}
		fields = append(fields, field{start, start + colon, vs, vs + len(t)})
	}
	all := string(buf)
	hdr := make(http.Header, len(fields))
	vals := make([]string, len(fields))
	for i, f := range fields {
		k, v := all[f.k:f.kEnd], all[f.v:f.vEnd]
		if vs, ok := hdr[k]; ok {
			hdr[k] = append(vs, v)
			continue
		}
		vals[i] = v
		hdr[k] = vals[i : i+1 : i+1]
	}
	return hdr, nil
}

var errTooLarge = errors.New("h1: response header too large")

// contentLength is a response's length when its Content-Length fields
// agree and are decimal digits alone (no sign, as net/http reads them):
// framing read another way than the upstream meant would leave bytes on a
// shared connection for the next request to read as its response.
func contentLength(vs []string) (int64, bool) {
	first := strings.TrimSpace(vs[0])
	for _, v := range vs[1:] {
		if strings.TrimSpace(v) != first {
			return 0, false
		}
	}
	if first == "" || strings.TrimLeft(first, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(first, 10, 64)
	return n, err == nil
}

// isHex reports whether b is hex digits alone (a chunk size: no sign).
func isHex(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// readLine appends the next line from br to buf, without its "\n" or
// "\r\n"; a line (before its end) longer than limit is an error. An end of
// input before the line's end is io.ErrUnexpectedEOF.
func readLine(br *bufio.Reader, buf []byte, limit int) ([]byte, error) {
	start := len(buf)
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
		if len(buf)-start > limit {
			return buf, errTooLarge
		}
	}
	buf = buf[:len(buf)-1]
	if n := len(buf); n > start && buf[n-1] == '\r' {
		buf = buf[:n-1]
	}
	return buf, nil
}

// canonicalKey makes k, a token (validHeaderName), canonical in place as
// textproto.CanonicalMIMEHeaderKey does.
func canonicalKey(k []byte) {
	upper := true
	for i, c := range k {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		k[i] = c
		upper = c == '-'
	}
}

// h1Body is a response body on a pooled connection. Read to its end, it
// gives the connection back; closed before, it closes it.
type h1Body struct {
	h       *h1Client
	c       *h1Conn
	addr    string
	ctx     context.Context
	stop    func() bool
	keep    bool  // the connection may be reused after the body
	chunked bool  // Transfer-Encoding: chunked
	left    int64 // bytes left of a Content-Length body or of the current chunk; -1 unknown
	done    bool
	err     error
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.done {
		return 0, b.errOrEOF()
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.chunked {
		return b.readChunked(p)
	}
	if b.left < 0 { // until close
		n, err := b.c.br.Read(p)
		if err == io.EOF {
			b.finish(nil)
			return n, io.EOF
		}
		if err != nil {
			b.finish(b.readErr(err))
			return n, b.err
		}
		return n, nil
	}
	n, err := b.c.br.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	if b.left == 0 {
		b.finish(nil)
		return n, io.EOF
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		b.finish(b.readErr(err))
		return n, b.err
	}
	return n, nil
}

// readChunked reads the chunked encoding: size line, data, CRLF; a last
// chunk of size 0 and the trailer end the body. Like net/http's, it reads
// on into the next chunks while their headers are at hand, so that what
// arrived together is read together, and it never waits once it has bytes.
func (b *h1Body) readChunked(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if b.left <= 0 {
			if n > 0 && !b.headerAtHand() {
				break
			}
			if b.left == 0 { // the CRLF after a chunk's data
				if err := b.crlf(); err != nil {
					b.finish(b.readErr(err))
					return n, b.err
				}
			}
			size, err := b.chunkSize()
			if err != nil {
				b.finish(b.readErr(err))
				return n, b.err
			}
			if size == 0 {
				if err := b.trailer(); err != nil {
					b.finish(b.readErr(err))
					return n, b.err
				}
				b.finish(nil)
				return n, io.EOF
			}
			b.left = size
		}
		m, err := b.c.br.Read(p[n : n+int(min(int64(len(p)-n), b.left))])
		n += m
		b.left -= int64(m)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			b.finish(b.readErr(err))
			return n, b.err
		}
	}
	return n, nil
}

// headerAtHand reports whether the next chunk's header (with the CRLF that
// ends the current chunk, and for the last chunk the end of the body) is
// buffered, so reading it cannot wait.
func (b *h1Body) headerAtHand() bool {
	buf, _ := b.c.br.Peek(b.c.br.Buffered())
	if b.left == 0 {
		if len(buf) < 2 {
			return false
		}
		buf = buf[2:]
	}
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return false
	}
	size, _, _ := bytes.Cut(buf[:i], []byte(";"))
	if len(bytes.Trim(bytes.TrimSpace(size), "0")) == 0 {
		return bytes.HasPrefix(buf[i+1:], []byte("\r\n")) // a last chunk without trailer fields
	}
	return true
}

func (b *h1Body) crlf() error {
	var buf [2]byte
	if _, err := io.ReadFull(b.c.br, buf[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // cut after a chunk's data: not the body's end
		}
		return err
	}
	if buf != [2]byte{'\r', '\n'} {
		return errors.New("h1: malformed chunked encoding")
	}
	return nil
}

func (b *h1Body) chunkSize() (int64, error) {
	line, err := b.c.br.ReadSlice('\n')
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err == bufio.ErrBufferFull {
			err = errors.New("h1: chunk size line too long")
		}
		return 0, err
	}
	// As net/http reads it (RFC 9112 allows a bare LF in a head, never in
	// chunked framing): the line ends in CRLF with no CR before, trailing
	// blanks go, then any extension; what is left is hex digits alone.
	if i := bytes.IndexByte(line, '\r'); i < 0 || i != len(line)-2 {
		return 0, errors.New("h1: malformed chunked encoding")
	}
	line = bytes.TrimRight(line[:len(line)-2], " \t")
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i] // chunk extensions
	}
	if !isHex(line) || len(line) > 16 {
		return 0, errors.New("h1: malformed chunk size")
	}
	size, err := strconv.ParseInt(string(line), 16, 64)
	if err != nil || size < 0 {
		return 0, errors.New("h1: malformed chunk size")
	}
	return size, nil
}

// trailer reads the fields after the last chunk as net/http does: none is
// an empty CRLF line; else the fields must be well formed and end in a
// blank line (CRLF CRLF) within the buffer — a trailer with no end in
// sight is not waited for. Relay passes no trailer on.
func (b *h1Body) trailer() error {
	br := b.c.br
	if p, err := br.Peek(2); string(p) == "\r\n" {
		_, _ = br.Discard(2)
		return nil
	} else if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if !upcomingBlankLine(br) {
		return errors.New("h1: trailer too long or unterminated")
	}
	_, err := readHeader(br, b.c.scratch[:0])
	return err
}

// upcomingBlankLine reports whether CRLF CRLF comes within what br can
// buffer, reading no further than it.
func upcomingBlankLine(br *bufio.Reader) bool {
	for n := 4; ; {
		p, err := br.Peek(n)
		if bytes.Contains(p, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
		n = max(n, br.Buffered()) + 1
	}
}

// readErr is the error a broken read reports: the context's cause when it
// was the context that broke it.
func (b *h1Body) readErr(err error) error {
	if b.ctx.Err() != nil {
		return ctxErr(b.ctx)
	}
	return err
}

func (b *h1Body) errOrEOF() error {
	if b.err != nil {
		return b.err
	}
	return io.EOF
}

// finish ends the body: the connection goes back to the pool when the body
// ended cleanly and may be reused, else it is closed.
func (b *h1Body) finish(err error) {
	if b.done {
		return
	}
	b.done, b.err = true, err
	canceled := !b.stop() // the context fired: the deadline is spoilt
	if err == nil && b.keep && !canceled && b.c.br.Buffered() == 0 {
		b.h.put(b.addr, b.c)
		return
	}
	b.h.discard(b.c)
}

// Await waits until the body has something to read — bytes, its end, or
// an error the next Read reports — holding no read buffer meanwhile when
// its connection can be waited on without one (a plain TCP connection, not
// TLS): a stream the upstream keeps quiet then holds none. It reports
// whether it waited so; when not, it returned at once and Read waits.
func (b *h1Body) Await() bool {
	if b.chunked && b.left == 0 && b.c.br.Buffered() >= 2 {
		// The CRLF that ends a chunk came with it: take it, so that what
		// is buffered is the next chunk's, not this one's end.
		if err := b.crlf(); err != nil {
			b.finish(b.readErr(err))
			return true
		}
		b.left = -1
	}
	if b.done || b.c.br.Buffered() > 0 {
		return true
	}
	if !b.c.awaitable() {
		return false
	}
	b.h.unlend(b.c)
	b.c.await() // an error (the deadline the context sets) is the next Read's
	b.c.br = b.h.reader(b.c.c)
	return true
}

func (b *h1Body) Close() error {
	if !b.done {
		b.finish(errors.New("h1: body closed"))
	}
	return nil
}
