// Package httpclients measures the upstream HTTP/1.1 clients the issue on
// Relay's hot path names, against one loopback server, by CPU time and
// write system calls per request: net/http's Transport as Relay tunes it,
// the same with net/http's default buffer sizes, valyala/fasthttp's
// HostClient, and a minimal HTTP/1.1 client over pooled connections that
// does the exchange on the caller's goroutine. It is a module of its own so
// that Relay's does not depend on fasthttp.
//
//	cd cmd/relay-bench/httpclients && go test -bench . -benchtime 20000x -count 5
package httpclients

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

var (
	reqBody  = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a terse assistant."},{"role":"user","content":"Hello, Relay. Say something short about load balancing."}]}`)
	respBody = []byte(`{"id":"chatcmpl-mock","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Spread the load: many small hosts beat one big one, as long as a slow one cannot hold a caller hostage. Keep connections warm, retry elsewhere before the first byte, never after."},"finish_reason":"stop"}],"usage":{"prompt_tokens":24,"completion_tokens":38,"total_tokens":62},"system_fingerprint":"fp_mock"}` + "\n")
)

func server(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(respBody)))
		_, _ = w.Write(respBody)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// exchange is one POST and the whole answer read.
type exchange func(buf []byte) error

func BenchmarkUpstream(b *testing.B) {
	for _, tc := range []struct {
		name string
		make func(url string) exchange
	}{
		{"nethttp-relay-tuned", func(url string) exchange { return netHTTP(url, 32<<10) }},
		{"nethttp-default-bufs", func(url string) exchange { return netHTTP(url, 0) }},
		{"fasthttp-hostclient", fastHTTP},
		{"minimal-http1", minimal},
	} {
		for _, par := range []int{1, 50} {
			b.Run(tc.name+"/c="+strconv.Itoa(par), func(b *testing.B) {
				srv := server(b)
				do := tc.make(srv.URL)
				if err := do(make([]byte, 32<<10)); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu0, w0 := processCPU(), selfSyscw()
				var n sync.WaitGroup
				ops := make(chan struct{}, 1024)
				go func() {
					for b.Loop() {
						ops <- struct{}{}
					}
					close(ops)
				}()
				count := 0
				var mu sync.Mutex
				for range par {
					n.Go(func() {
						buf := make([]byte, 32<<10)
						k := 0
						for range ops {
							if err := do(buf); err != nil {
								b.Error(err)
								return
							}
							k++
						}
						mu.Lock()
						count += k
						mu.Unlock()
					})
				}
				n.Wait()
				b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/1e3/float64(count), "cpu-µs/op")
				b.ReportMetric(float64(selfSyscw()-w0)/float64(count), "writes/op")
			})
		}
	}
}

func netHTTP(url string, bufs int) exchange {
	tr := &http.Transport{
		MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second,
		DisableCompression: true, WriteBufferSize: bufs, ReadBufferSize: bufs, ForceAttemptHTTP2: true,
	}
	return func(buf []byte) error {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(reqBody))
		req.Header.Set("Authorization", "Bearer sk-up")
		req.Header.Set("Content-Type", "application/json")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		for {
			_, err := resp.Body.Read(buf)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

func fastHTTP(url string) exchange {
	c := &fasthttp.HostClient{Addr: strings.TrimPrefix(url, "http://"), MaxConns: 256}
	return func(buf []byte) error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(url + "/v1/chat/completions")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.Header.Set("Authorization", "Bearer sk-up")
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(reqBody)
		if err := c.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != 200 {
			return errors.New(strconv.Itoa(resp.StatusCode()))
		}
		return nil
	}
}

// mini is the minimal HTTP/1.1 client: request written in one Write from
// the caller's goroutine, response read on it too, connection pooled.
type mini struct {
	addr, host string
	mu         sync.Mutex
	idle       []*miniConn
}

type miniConn struct {
	c    net.Conn
	br   *bufio.Reader
	wbuf []byte
}

func minimal(url string) exchange {
	m := &mini{addr: strings.TrimPrefix(url, "http://")}
	m.host = m.addr
	return m.do
}

func (m *mini) get() (*miniConn, error) {
	m.mu.Lock()
	if n := len(m.idle); n > 0 {
		c := m.idle[n-1]
		m.idle = m.idle[:n-1]
		m.mu.Unlock()
		return c, nil
	}
	m.mu.Unlock()
	c, err := net.Dial("tcp", m.addr)
	if err != nil {
		return nil, err
	}
	return &miniConn{c: c, br: bufio.NewReaderSize(c, 4096), wbuf: make([]byte, 0, 4096)}, nil
}

func (m *mini) do(buf []byte) error {
	c, err := m.get()
	if err != nil {
		return err
	}
	w := c.wbuf[:0]
	w = append(w, "POST /v1/chat/completions HTTP/1.1\r\nHost: "...)
	w = append(w, m.host...)
	w = append(w, "\r\nAuthorization: Bearer sk-up\r\nContent-Type: application/json\r\nContent-Length: "...)
	w = strconv.AppendInt(w, int64(len(reqBody)), 10)
	w = append(w, "\r\n\r\n"...)
	w = append(w, reqBody...)
	c.wbuf = w
	if _, err := c.c.Write(w); err != nil {
		c.c.Close()
		return err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil || len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		c.c.Close()
		return errors.New("bad status line")
	}
	status := line[9:12]
	n := -1
	chunked := false
	for {
		h, err := c.br.ReadSlice('\n')
		if err != nil {
			c.c.Close()
			return err
		}
		if len(h) <= 2 {
			break
		}
		k, v, _ := bytes.Cut(h, []byte(":"))
		v = bytes.TrimSpace(v)
		switch {
		case asciiEqual(k, "content-length"):
			n, _ = strconv.Atoi(string(v))
		case asciiEqual(k, "transfer-encoding"):
			chunked = true
		}
	}
	if chunked || n < 0 {
		c.c.Close()
		return errors.New("the prototype reads Content-Length bodies only")
	}
	for n > 0 {
		k, err := c.br.Read(buf[:min(n, len(buf))])
		if err != nil {
			c.c.Close()
			return err
		}
		n -= k
	}
	if string(status) != "200" {
		return errors.New(string(status))
	}
	m.mu.Lock()
	m.idle = append(m.idle, c)
	m.mu.Unlock()
	return nil
}

func asciiEqual(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func selfSyscw() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscw:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return -1
}
