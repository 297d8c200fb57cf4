package upstream

import (
	"io"
	"net"
	"testing"
)

// A response whose framing is ambiguous is refused, as net/http refuses
// it, rather than read one way: its connection is shared by every tenant's
// requests, and bytes framed differently than the upstream meant would be
// read as the next request's response.
func TestH1_RefusesAmbiguousFraming(t *testing.T) {
	t.Parallel()
	c := newH1Client((&net.Dialer{}).DialContext)
	for name, answer := range map[string]string{
		"two lengths":   "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 12\r\n\r\nok",
		"signed length": "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
		"signed chunk":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nok\r\n0\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := h1Post(t, c, t.Context(), rawServer(t, answer), "q", nil)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if b, err := io.ReadAll(resp.Body); err == nil {
				t.Errorf("%q read as a body %q", answer, b)
			}
		})
	}
}
