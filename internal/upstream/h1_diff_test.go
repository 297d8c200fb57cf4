package upstream

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// answer is what a client made of a response: its meaning, or a refusal.
type answer struct {
	refused bool
	why     string // the refusal, for the failure message
	status  int
	header  http.Header // framing fields (Content-Length, Transfer-Encoding) left out
	body    []byte
}

// max1xx is how many informational responses net/http's Transport reads
// before it gives up (its max1xxResponses).
const max1xx = 5

// stdAnswer reads raw as net/http's Transport reads a response to a GET:
// http.ReadResponse, informational responses skipped, the body read to its
// end.
func stdAnswer(raw []byte) answer {
	req, _ := http.NewRequest(http.MethodGet, "http://upstream.test/v1/x", nil)
	br := bufio.NewReader(bytes.NewReader(raw))
	for n1xx := 0; ; n1xx++ {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return answer{refused: true, why: err.Error()}
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			if n1xx == max1xx {
				return answer{refused: true, why: "too many 1xx responses"}
			}
			continue
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return answer{refused: true, why: "body: " + err.Error()}
		}
		return answer{status: resp.StatusCode, header: meaning(resp.Header), body: body}
	}
}

// h1Answer has the hand-written client send a GET to a connection that
// answers raw, and reads what it makes of it.
func h1Answer(t *testing.T, raw []byte) answer {
	c := newH1Client(func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			if _, err := http.ReadRequest(bufio.NewReader(server)); err != nil {
				return
			}
			_, _ = server.Write(raw)
		}()
		return client, nil
	})
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://upstream.test/v1/x", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		return answer{refused: true, why: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{refused: true, why: "body: " + err.Error()}
	}
	if ctx.Err() != nil {
		t.Fatalf("the exchange ran into the test's deadline")
	}
	return answer{status: resp.StatusCode, header: meaning(resp.Header), body: body}
}

// meaning is a header without its framing fields, which each client
// consumes in its own way (net/http drops Content-Length beside chunked
// and merges equal duplicates); the framing shows in the body instead.
func meaning(h http.Header) http.Header {
	out := h.Clone()
	delete(out, "Content-Length")
	delete(out, "Transfer-Encoding")
	// Hop-by-hop, never passed on (headers.go); net/http consumes them.
	delete(out, "Connection")
	delete(out, "Trailer")
	if out == nil {
		out = http.Header{}
	}
	return out
}

func sameHeader(a, b http.Header) bool {
	return maps.EqualFunc(a, b, slices.Equal)
}

// h1DiffSeeds are responses as providers send them, and the malformed ones
// the framing tests name.
func h1DiffSeeds() []string {
	const json = `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	return []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 133\r\nX-Request-Id: req_1\r\n\r\n" + json,
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n" +
			"1d\r\ndata: {\"choices\":[{\"a\":1}]}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Usage\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-Usage: 12\r\n\r\n",
		"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n{\"error\":{\"type\":\"rate\"}}\n\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\n\r\n",
		"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close",
		"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nx-lower: v \r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
		"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 12\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokk\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n",
		// Names with a byte outside the token set, which net/http refuses.
		"HTTP/1.1 200 OK\r\nX(y): 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\"q\": 1\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A/B: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX@: 1\r\n\r\n",
		// Chunked framing lines must end in CRLF: a bare LF, a stray CR.
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 \nTransfer-Encoding: chunked\n\n\n", // an empty chunk line of a bare LF
		// Content-Length is checked before the status or chunked says there is no length.
		"HTTP/1.0 204 \nContent-Length:\n\n",
		// Cut right after a chunk's data: a truncated body, not a whole one.
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: -1\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 \t;a=b\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 ;a\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000002\r\nok\r\n0\r\n\r\n",
		// Trailers: well formed and ended by CRLF CRLF, or refused.
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX: 1\nY: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX: 1\n\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX: " + strings.Repeat("v", 5000) + "\r\n\r\n",
		"HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n continued\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/2.0 200 OK\r\n\r\n",
		"HTTP/1.1 abc OK\r\n\r\n",
		"ICY 200 OK\r\n\r\n",
		"",
	}
}

// FuzzH1_ParsesAsNetHTTPDoes runs the differential over its seeds: in CI
// as a normal test.
func FuzzH1_ParsesAsNetHTTPDoes(f *testing.F) {
	for _, s := range h1DiffSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 64<<10 {
			return // far below both clients' header limits
		}
		if st, ok := statusOf(raw); ok && st == http.StatusSwitchingProtocols {
			return // net/http hands the connection over; Relay never asks to switch
		}
		want := stdAnswer(raw)
		got := h1Answer(t, raw)
		switch {
		case want.refused && got.refused:
		case want.refused:
			t.Fatalf("net/http refuses (%s), h1 accepts %d %v %q\n%q", want.why, got.status, got.header, got.body, raw)
		case got.refused && h1Stricter(raw):
		case got.refused:
			t.Fatalf("h1 refuses (%s), net/http accepts %d %v %q\n%q", got.why, want.status, want.header, want.body, raw)
		case got.status != want.status || !sameHeader(got.header, want.header) || !bytes.Equal(got.body, want.body):
			t.Fatalf("h1 reads %d %v %q, net/http %d %v %q\n%q", got.status, got.header, got.body, want.status, want.header, want.body, raw)
		}
	})
}

// statusOf is the status code of the first status line of raw, if it has one.
func statusOf(raw []byte) (int, bool) {
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	_, rest, ok := strings.Cut(string(line), " ")
	if !ok || len(rest) < 3 {
		return 0, false
	}
	n := 0
	for _, c := range rest[:3] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// h1Stricter reports whether raw's heads hold what h1 refuses on purpose
// where net/http reads on: a version other than HTTP/1.0 and 1.1, a status
// below 100, a field name that is not a token (net/http keeps one with a
// space as it is), a field folded over lines (obs-fold). No provider sends
// these; refused, the attempt fails over instead of passing on a field
// Relay would have to guess at.
func h1Stricter(raw []byte) bool {
	head := true // the next line is a status line
	for line := range bytes.Lines(raw) {
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case head:
			proto, status, _ := strings.Cut(string(line), " ")
			if proto != "HTTP/1.1" && proto != "HTTP/1.0" || len(status) >= 3 && status[:3] < "100" {
				return true
			}
			head = false
		case len(line) == 0:
			head = true // a 1xx head ended; what follows may be another head or the body
		case line[0] == ' ' || line[0] == '\t':
			return true
		default:
			name, _, ok := bytes.Cut(line, []byte(":"))
			if ok && bytes.ContainsAny(name, " ") {
				return true
			}
		}
	}
	return false
}
