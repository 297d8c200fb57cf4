package mockupstream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// bundle is what most tests need: the mock and a live server in front of it.
type bundle struct {
	mock *mockupstream.Server
	srv  *httptest.Server
}

func setup(t *testing.T, opts mockupstream.Options) bundle {
	t.Helper()
	m := mockupstream.New(opts)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return bundle{mock: m, srv: srv}
}

// ctx is a test context with a deadline, so a broken wait fails instead of
// hanging.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

// post sends a JSON body with the given headers and returns the response with
// its body read.
func post(t *testing.T, url string, header map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, b
}

var (
	openAIHeaders    = map[string]string{"Authorization": "Bearer sk-test"}
	anthropicHeaders = map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
	geminiHeaders    = map[string]string{"x-goog-api-key": "AIza-test"}
)

type sseEvent struct {
	name string
	data string
}

// readSSE splits an event stream into events, the way a strict client does.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" || cur.name != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read SSE: %v", err)
	}
	if cur.data != "" {
		t.Fatalf("stream ended inside an event: %+v", cur)
	}
	return out
}

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// only returns the single recorded request.
func only(t *testing.T, m *mockupstream.Server) mockupstream.Request {
	t.Helper()
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func hasPrefix(t *testing.T, what, s, prefix string) {
	t.Helper()
	if !strings.HasPrefix(s, prefix) {
		t.Errorf("%s = %q, want prefix %q", what, s, prefix)
	}
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("compact %q: %v", s, err)
	}
	return b.String()
}
