package upstream

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"
)

// readHeader gives the header textproto's line reading and canonical
// names gave (the way h1 read headers before), field for field.
func TestReadHeader_AsTextproto(t *testing.T) {
	for _, head := range []string{
		"Content-Type: application/json\r\nContent-Length: 12\r\n\r\n",
		"content-type:application/json\r\nx-request-id:  req_1 \r\nX-RATELIMIT-LIMIT-REQUESTS: 10\r\n\r\n",
		"Set-Cookie: a=1\r\nset-cookie: b=2\r\nSET-COOKIE: c=3\r\nVia: x\r\n\r\n",
		"X-Empty:\r\nX-Spaces:   \r\nLf-Only: yes\n\n",
		"Utf8: \u00a0v\u00a0\r\nA-B-C-d: 1\r\n\r\n",
		"\r\n",
	} {
		want := http.Header{}
		tp := textproto.NewReader(bufio.NewReader(strings.NewReader(head)))
		for {
			line, err := tp.ReadLine()
			if err != nil {
				t.Fatal(err)
			}
			if line == "" {
				break
			}
			k, v, _ := strings.Cut(line, ":")
			k = textproto.CanonicalMIMEHeaderKey(k)
			want[k] = append(want[k], strings.TrimSpace(v))
		}
		for _, size := range []int{16, 4096} { // lines longer than the read buffer too
			br := bufio.NewReaderSize(strings.NewReader(head+"body"), size)
			got, err := readHeader(br, make([]byte, 0, 8))
			if err != nil {
				t.Fatalf("%q: %v", head, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q (buffer %d):\n got %q\nwant %q", head, size, got, want)
			}
			if rest, _ := io.ReadAll(br); string(rest) != "body" {
				t.Errorf("%q: left %q after the header", head, rest)
			}
		}
	}
}

func TestReadHeader_Malformed(t *testing.T) {
	for head, want := range map[string]string{
		"Content-Type: a\r\n":  "unexpected EOF",
		"no colon\r\n\r\n":     "malformed header line",
		": empty name\r\n\r\n": "malformed header line",
		// Not tokens: net/http refuses these names too (h1_diff_test.go).
		"weird(name): x\r\n\r\n": "malformed header line",
		"x{y}: z\r\n\r\n":        "malformed header line",
		"X\x00: z\r\n\r\n":       "malformed header line",
		"X: " + strings.Repeat("a", h1MaxHeaderBytes) + "\r\n\r\n": "too large",
	} {
		_, err := readHeader(bufio.NewReader(strings.NewReader(head)), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: error %v, want %q", head, err, want)
		}
		if want == "unexpected EOF" && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%q: error %v is not io.ErrUnexpectedEOF", head, err)
		}
	}
}
