package clienttest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReplay sends every recorded client request (testdata/requests) again,
// through a model of every binding shape, and requires the outcome its
// fixture expects for that shape: 2xx, and for a stream no error event, or
// the status named where a field is semantic and cannot be translated.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "requests", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded requests under testdata/requests")
	}
	r := startRelay(t)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var x exchange
		if err := json.Unmarshal(raw, &x); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.ToSlash(file), "testdata/requests/"), ".json")
		t.Run(name, func(t *testing.T) {
			for _, b := range shapes {
				t.Run(string(b.shape), func(t *testing.T) {
					want, ok := x.Expect[string(b.shape)]
					if !ok {
						t.Fatalf("%s names no expected outcome for shape %s", file, b.shape)
					}
					status, body := replay(t, r.URL, x, modelName(b.shape))
					checkOutcome(t, want, status, body)
				})
			}
		})
	}
}

// replay sends x to Relay with model in place of the recorded one and
// returns the status and body.
func replay(t *testing.T, base string, x exchange, model string) (int, []byte) {
	t.Helper()
	swap := func(s string) string {
		if x.Model == "" {
			return s
		}
		return strings.ReplaceAll(s, x.Model, model)
	}
	target := base + swap(x.Path)
	query := x.Query
	if x.Auth == "key" {
		if query != "" {
			query += "&"
		}
		query += "key=" + relayKey
	}
	if query != "" {
		target += "?" + query
	}
	var body io.Reader
	if len(x.Body) > 0 {
		b := []byte(swap(string(x.Body)))
		var s string
		if json.Unmarshal(b, &s) == nil { // recorded as a JSON string: not JSON itself
			b = []byte(s)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), x.Method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range x.Header {
		req.Header.Set(k, v)
	}
	for _, h := range strings.Split(x.Auth, ",") {
		switch h {
		case "authorization":
			req.Header.Set("Authorization", "Bearer "+relayKey)
		case "x-api-key", "x-goog-api-key":
			req.Header.Set(h, relayKey)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		if e := streamError(out); e != "" {
			return 599, []byte("error in the stream: " + e)
		}
	}
	return res.StatusCode, out
}

// streamError returns the first error event of an SSE body, "" if none.
func streamError(body []byte) string {
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(line)
		if line == "event: error" || line == "event: response.failed" {
			return line
		}
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		var ev struct {
			Type  string          `json:"type"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &ev) == nil && (ev.Type == "error" || ev.Type == "response.failed" || (len(ev.Error) > 0 && string(ev.Error) != "null")) {
			return strings.TrimSpace(data)
		}
	}
	return ""
}

// checkOutcome requires status to match want ("2xx" or a status code).
func checkOutcome(t *testing.T, want string, status int, body []byte) {
	t.Helper()
	head := string(body[:min(len(body), 600)])
	if want == "2xx" {
		if status < 200 || status > 299 {
			t.Fatalf("got %d, want 2xx: %s", status, head)
		}
		return
	}
	code, err := strconv.Atoi(want)
	if err != nil {
		t.Fatalf("expected outcome %q is neither 2xx nor a status", want)
	}
	if status != code {
		t.Fatalf("got %d, want %d: %s", status, code, head)
	}
}
