package mockupstream

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The tap relays requests unchanged and records each head exactly as the
// client wrote it, in order, across keep-alive requests on one connection.
func TestTap_RecordsHeadsAsSent(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(New(Options{}))
	t.Cleanup(up.Close)
	tap, err := NewTap(strings.TrimPrefix(up.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tap.Close)
	for i, model := range []string{"gpt-a", "gpt-b"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, tap.URL()+"/v1/chat/completions",
			strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("x-lower-case", "v")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(model)) {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
	heads, err := tap.Heads()
	if err != nil || len(heads) != 2 {
		t.Fatalf("%d heads, %v", len(heads), err)
	}
	for _, h := range heads {
		if h.RequestLine != "POST /v1/chat/completions HTTP/1.1" || h.Get("Authorization") != "Bearer k" || h.Get("X-Lower-Case") != "v" {
			t.Errorf("head %q", h.Raw)
		}
	}
}

// splitHeads never panics, and every head it returns ends with the blank line.
func FuzzSplitHeads(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nbad\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		heads, _ := splitHeads(b)
		for _, h := range heads {
			if !bytes.HasSuffix(h.Raw, []byte("\r\n\r\n")) {
				t.Fatalf("head %q", h.Raw)
			}
		}
	})
}
