package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// echoBody answers 200 with the body it read, or 400 when the read failed.
var echoBody = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.Write(b)
})

// dialRaw opens a raw TCP connection to addr, closed when the test ends.
func dialRaw(t *testing.T, addr net.Addr) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func TestServer_ClosesAfterContentLengthWithTransferEncoding(t *testing.T) {
	r := start(t, Options{Inference: echoBody, Control: echoBody})
	for _, tc := range []struct {
		name, head string
	}{
		{"length then chunked", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"},
		{"chunked then length", "Transfer-Encoding: chunked\r\ncontent-length: 100\r\n"},
		{"upper case", "CONTENT-LENGTH: 4\r\nTransfer-Encoding: chunked\r\n"},
	} {
		for _, addr := range []net.Addr{r.inference, r.control} {
			c, br := dialRaw(t, addr)
			// The smuggled second request rides in the same write.
			io.WriteString(c, "POST /x HTTP/1.1\r\nHost: relay\r\n"+tc.head+"\r\n4\r\nabcd\r\n0\r\n\r\n"+
				"GET /smuggled HTTP/1.1\r\nHost: relay\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "abcd" || !resp.Close {
				t.Errorf("%s: %d %q close=%v, want 200 abcd and Connection: close", tc.name, resp.StatusCode, b, resp.Close)
			}
			if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
				t.Errorf("%s: the pipelined request was answered: %q, %v", tc.name, rest, err)
			}
		}
	}
	// Chunked alone keeps its connection.
	c, br := dialRaw(t, r.inference)
	io.WriteString(c, "POST /x HTTP/1.1\r\nHost: relay\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.Close {
		t.Fatalf("chunked alone: %v, close=%v", err, resp != nil && resp.Close)
	}
	io.Copy(io.Discard, resp.Body)
	if code := rawGet(t, c, br, "/healthz"); code != 200 {
		t.Fatalf("second request on a chunked connection: %d", code)
	}
}

func TestServer_BodyDeadlineCutsATrickle(t *testing.T) {
	readErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	})
	// Each byte comes well within the pause bound; the whole body would
	// take 100 s.
	r := start(t, Options{Inference: h, Limits: Limits{BodyTimeout: 10 * time.Second, BodyDeadline: 300 * time.Millisecond}})
	c, _ := dialRaw(t, r.inference)
	io.WriteString(c, "POST /trickle HTTP/1.1\r\nHost: relay\r\nContent-Length: 5000\r\n\r\n")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond) // the client's trickle, the thing under test
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := io.WriteString(c, "a"); err != nil {
					return
				}
			}
		}
	}()
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("a trickled body read to the end")
		}
	case <-time.After(8 * time.Second):
		t.Fatal("a body trickling a byte every 20ms was still being read after 8s, past a 300ms body deadline")
	}
}

// checkJSONError reads one response from br and checks it is status in
// the OpenAI error shape with code, and that the connection then closes.
func checkJSONError(t *testing.T, name string, br *bufio.Reader, status int, code string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Error struct {
			Message, Type, Code string
		}
	}
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" ||
		json.Unmarshal(b, &e) != nil || e.Error.Code != code || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
		t.Errorf("%s: %d %s %q, want %d JSON with code %s", name, resp.StatusCode, resp.Header.Get("Content-Type"), b, status, code)
	}
	// A reset is a close too: the server may hang up on unread bytes.
	if rest, err := io.ReadAll(br); len(rest) > 0 || isTimeout(err) {
		t.Errorf("%s: after the error: %q, %v; want the connection closed", name, rest, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestServer_FramingErrorsAnswerJSON(t *testing.T) {
	r := start(t, Options{Inference: echoBody, Control: echoBody, Limits: Limits{MaxHeaderBytes: 4096}})
	for _, tc := range []struct {
		name, request string
		status        int
		code          string
	}{
		{"malformed request line", "GARBAGE\r\n\r\n", 400, "invalid_request"},
		{"missing Host", "GET /x HTTP/1.1\r\n\r\n", 400, "invalid_request"},
		{"two Hosts", "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "invalid_request"},
		{"invalid header name", "GET /x HTTP/1.1\r\nHost: relay\r\nBad Name: x\r\n\r\n", 400, "invalid_request"},
		{"invalid header value", "GET /x HTTP/1.1\r\nHost: relay\r\nX: a\x00b\r\n\r\n", 400, "invalid_request"},
		{"two Content-Lengths", "POST /x HTTP/1.1\r\nHost: relay\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "invalid_request"},
		{"signed Content-Length", "POST /x HTTP/1.1\r\nHost: relay\r\nContent-Length: +1\r\n\r\na", 400, "invalid_request"},
		{"unknown Expect", "POST /x HTTP/1.1\r\nHost: relay\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\na", 417, "expectation_failed"},
		{"header bytes", "GET /x HTTP/1.1\r\nHost: relay\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n", 431, "request_headers_too_large"},
		{"unknown transfer coding", "POST /x HTTP/1.1\r\nHost: relay\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "unsupported_transfer_encoding"},
		{"HTTP/3", "GET /x HTTP/3.0\r\nHost: relay\r\n\r\n", 505, "http_version_not_supported"},
	} {
		c, br := dialRaw(t, r.inference)
		io.WriteString(c, tc.request)
		checkJSONError(t, tc.name, br, tc.status, tc.code)
	}
}

func TestServer_BoundsHeaderFieldsOnTheInferencePlane(t *testing.T) {
	r := start(t, Options{Inference: echoBody, Control: echoBody, Limits: Limits{MaxHeaders: 10}})
	fields := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("X-F: " + strings.Repeat("v", i%7) + "\r\n")
		}
		return b.String()
	}
	// Host and 9 more: the bound.
	c, br := dialRaw(t, r.inference)
	io.WriteString(c, "GET /x HTTP/1.1\r\nHost: relay\r\n"+fields(9)+"\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("10 fields: %v %v", resp, err)
	}
	c, br = dialRaw(t, r.inference)
	io.WriteString(c, "GET /x HTTP/1.1\r\nHost: relay\r\n"+fields(10)+"\r\n")
	checkJSONError(t, "11 fields", br, 431, "request_headers_too_large")
	// The control plane is not bound by count.
	c, br = dialRaw(t, r.control)
	io.WriteString(c, "GET /x HTTP/1.1\r\nHost: relay\r\n"+fields(50)+"\r\n")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("control, 51 fields: %v %v", resp, err)
	}
}

func TestGoFramingError_LeavesHandlerAnswersAlone(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nsomething else",
		"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nDate: x\r\nContent-Length: 0\r\nX-Relay-Request-ID: r\r\n\r\n",
		"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n200 OK",
		"data: HTTP/1.1 400 Bad Request",
	} {
		if _, _, ok := goFramingError([]byte(p)); ok {
			t.Errorf("%q taken for net/http's own answer", p)
		}
	}
}

// TestFramingCodes_Documented keeps docs/errors.md listing every framing
// answer's code.
func TestFramingCodes_Documented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	for status, code := range framingCodes {
		if status == http.StatusBadRequest {
			continue // invalid_request, Relay's own row
		}
		row := "| `" + code + "` | " + strconv.Itoa(status) + " | `invalid_request_error` |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/errors.md lacks the row %s", row)
		}
	}
}

// FuzzFrameConnScan holds the connection's Content-Length watch to a
// reference over the whole input, however the reads split it: a line (at
// the start, or after a newline) that starts with the field name, in any
// case, and a colon.
func FuzzFrameConnScan(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\na"), uint8(5))
	f.Add([]byte("POST / HTTP/1.1\r\nX-Content-Length: 1\r\ncontent-length :1\r\n"), uint8(1))
	f.Add([]byte("content-length:"), uint8(3))
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		want := false
		for _, line := range bytes.Split(in, []byte("\n")) {
			if len(line) > len(contentLength) && strings.EqualFold(string(line[:len(contentLength)]), contentLength) && line[len(contentLength)] == ':' {
				want = true
			}
		}
		var c frameConn
		step := int(split%16) + 1
		for i := 0; i < len(in) && !c.sawLength.Load(); i += step {
			c.scan(in[i:min(i+step, len(in))])
		}
		if c.sawLength.Load() != want {
			t.Fatalf("%q read %d bytes at a time: saw %v, want %v", in, step, c.sawLength.Load(), want)
		}
	})
}

// FuzzGoFramingError: whatever is written, a recognised answer has a
// documented code and appends a whole response.
func FuzzGoFramingError(f *testing.F) {
	f.Add([]byte("HTTP/1.1 400 Bad Request" + goErrorHeaders + "400 Bad Request"))
	f.Add([]byte("HTTP/1.1 501 Not Implemented" + goErrorHeaders + "Unsupported transfer encoding"))
	f.Add([]byte("HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nDate: x\r\nContent-Length: 0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, p []byte) {
		status, msg, ok := goFramingError(p)
		if !ok {
			return
		}
		if framingCodes[status] == "" || msg == "" {
			t.Fatalf("%q: status %d, message %q", p, status, msg)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(appendFramingError(nil, status, msg))), nil)
		if err != nil || resp.StatusCode != status || !resp.Close {
			t.Fatalf("%q: answer %v, %v", p, resp, err)
		}
	})
}
