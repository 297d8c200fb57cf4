package server

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bound what one client can hold on a plane: how long it may take to
// send its headers, how long its body may pause and take in all, how many
// header fields and bytes it may send (inference plane), how long an idle keep-alive
// connection stays open, and how many connections the plane holds at once.
// No write timeout: a stream lasts as long as the upstream keeps sending.
// Zero fields take the defaults below.
type Limits struct {
	ReadHeaderTimeout     time.Duration // from accept (or the end of the previous request) to the end of the headers
	BodyTimeout           time.Duration // longest pause between two reads of a request body
	BodyDeadline          time.Duration // longest time from the request's head to the end of its body, however it trickles
	MaxHeaderBytes        int           // inference plane: request line and header fields, in bytes (more → 431)
	MaxHeaders            int           // inference plane: header fields, Host included (more → 431)
	IdleTimeout           time.Duration // a keep-alive connection waiting for its next request
	MaxConnections        int           // inference plane; more wait in the kernel's accept queue
	ControlMaxConnections int           // control plane, a reserve of its own
}

// Defaults of Limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	// DefaultBodyDeadline lets a 32 MiB body (RELAY_MAX_BODY_BYTES'
	// default) arrive over a link of about 1 Mbit/s (32 MiB in 5 min is
	// 112 KB/s), while a body trickled a byte every few seconds holds its
	// connection no longer than this.
	DefaultBodyDeadline          = 5 * time.Minute
	DefaultMaxHeaderBytes        = 64 << 10
	DefaultMaxHeaders            = 100
	DefaultIdleTimeout           = 90 * time.Second
	DefaultMaxConnections        = 10000
	DefaultControlMaxConnections = 256
)

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.BodyTimeout, DefaultBodyTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	def(&l.BodyDeadline, DefaultBodyDeadline)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxHeaders <= 0 {
		l.MaxHeaders = DefaultMaxHeaders
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.ControlMaxConnections <= 0 {
		l.ControlMaxConnections = DefaultControlMaxConnections
	}
	return l
}

// limitListener accepts at most cap(slots) connections at once; Accept waits
// for one to close. Excess clients queue in the kernel's backlog, holding no
// file descriptor of this process.
type limitListener struct {
	net.Listener
	slots  chan struct{}
	open   atomic.Int64
	done   chan struct{}
	closed sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	l.open.Add(1)
	return &limitConn{Conn: c, l: l}, nil
}

func (l *limitListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	l       *limitListener
	release sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release.Do(func() {
		c.l.open.Add(-1)
		<-c.l.slots
	})
	return err
}

// bodyDeadline gives the connection a read deadline of d from each read of
// the request body, but never past until (the body deadline), and clears
// it when the body ends (net/http clears it too when it starts watching for
// the client going away), so a client that stops sending is cut after d, a
// body that trickles is cut at until, a long upload that keeps moving fast
// enough is not, and the response that follows — a stream of any length —
// is never cut.
type bodyDeadline struct {
	io.ReadCloser
	rc    *http.ResponseController
	d     time.Duration
	until time.Time // zero: no body deadline
	done  bool
}

func (b *bodyDeadline) Read(p []byte) (int, error) {
	if b.done {
		return b.ReadCloser.Read(p)
	}
	at := time.Now().Add(b.d)
	if !b.until.IsZero() && b.until.Before(at) {
		at = b.until
	}
	_ = b.rc.SetReadDeadline(at)
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// withBodyTimeout wraps every request body of next in a bodyDeadline: a
// pause of at most d, and the whole body within total (0: no bound). It
// hands next a copy of the request: net/http looks at the original's body
// after the handler to decide whether the connection can be reused.
func withBodyTimeout(d, total time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r2 := new(http.Request)
			*r2 = *r
			r2.Body = &bodyDeadline{ReadCloser: r.Body, rc: http.NewResponseController(w), d: d, until: bodyUntil(total)}
			r = r2
		}
		next.ServeHTTP(w, r)
	})
}
