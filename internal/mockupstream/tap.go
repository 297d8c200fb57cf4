package mockupstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// Tap is a byte tap in front of an upstream: a raw TCP listener that
// relays every connection to the target and records exactly the bytes the
// client sent, so a test sees the request head Relay put on the wire, not
// what net/http made of it. It speaks no HTTP itself; Heads splits what
// it recorded into requests.
type Tap struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []*bytes.Buffer // what each connection's client sent, in accept order
	open  []net.Conn
}

// NewTap listens on a loopback port and relays to target (host:port).
func NewTap(target string) (*Tap, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen tap: %w", err)
	}
	t := &Tap{ln: ln, target: target}
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// URL is the tap's base URL.
func (t *Tap) URL() string { return "http://" + t.ln.Addr().String() }

// Close stops the tap and every connection it relays.
func (t *Tap) Close() {
	t.ln.Close()
	t.mu.Lock()
	for _, c := range t.open {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

func (t *Tap) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", t.target)
		if err != nil {
			c.Close()
			continue
		}
		buf := &bytes.Buffer{}
		t.mu.Lock()
		t.conns = append(t.conns, buf)
		t.open = append(t.open, c, up)
		t.mu.Unlock()
		t.wg.Add(2)
		go func() {
			defer t.wg.Done()
			defer up.Close()
			t.record(buf, c, up)
		}()
		go func() {
			defer t.wg.Done()
			defer c.Close()
			_, _ = io.Copy(c, up)
		}()
	}
}

// record copies the client's bytes to the upstream, each read recorded
// before it is passed on: once the upstream has answered a request, its
// bytes are in buf.
func (t *Tap) record(buf *bytes.Buffer, c, up net.Conn) {
	p := make([]byte, 32<<10)
	for {
		n, err := c.Read(p)
		if n > 0 {
			t.mu.Lock()
			buf.Write(p[:n])
			t.mu.Unlock()
			if _, werr := up.Write(p[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TapHead is one request head as it crossed the tap.
type TapHead struct {
	RequestLine string
	Fields      []TapField // in wire order, names as sent
	Raw         []byte     // the head's bytes, through the blank line
}

// TapField is one header field line.
type TapField struct{ Name, Value string }

// Names returns the field names, as sent.
func (h TapHead) Names() []string {
	out := make([]string, len(h.Fields))
	for i, f := range h.Fields {
		out[i] = f.Name
	}
	return out
}

// Get returns the first value of the field named name (case-insensitive).
func (h TapHead) Get(name string) string {
	for _, f := range h.Fields {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Heads returns every complete request head recorded so far, connection
// by connection. Bodies are skipped by their Content-Length; a connection
// whose request has no Content-Length (or is chunked) ends its list there.
func (t *Tap) Heads() ([]TapHead, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []TapHead
	for _, buf := range t.conns {
		heads, err := splitHeads(buf.Bytes())
		out = append(out, heads...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func splitHeads(b []byte) ([]TapHead, error) {
	var out []TapHead
	for len(b) > 0 {
		end := bytes.Index(b, []byte("\r\n\r\n"))
		if end < 0 {
			return out, nil // a head still on its way
		}
		raw := b[:end+4]
		lines := strings.Split(string(b[:end]), "\r\n")
		h := TapHead{RequestLine: lines[0], Raw: bytes.Clone(raw)}
		length := -1
		for _, l := range lines[1:] {
			name, value, ok := strings.Cut(l, ":")
			if !ok {
				return out, fmt.Errorf("split heads: field line %q", l)
			}
			h.Fields = append(h.Fields, TapField{Name: name, Value: strings.TrimSpace(value)})
			if strings.EqualFold(name, "Content-Length") {
				n, err := strconv.Atoi(strings.TrimSpace(value))
				if err == nil && n < 0 {
					err = errors.New("negative")
				}
				if err != nil {
					return out, fmt.Errorf("split heads: Content-Length %q: %w", value, err)
				}
				length = n
			}
		}
		out = append(out, h)
		if length < 0 && (strings.HasPrefix(h.RequestLine, "GET ") || strings.HasPrefix(h.RequestLine, "HEAD ")) {
			length = 0
		}
		if length < 0 {
			return out, errors.New("split heads: a request without Content-Length")
		}
		b = b[end+4:]
		if len(b) < length {
			return out, nil
		}
		b = b[length:]
	}
	return out, nil
}
