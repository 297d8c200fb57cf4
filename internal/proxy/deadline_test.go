package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// TestProxy_TotalTimeoutCutsAStreamThatKeepsMoving: an upstream that sends
// an event every few milliseconds never trips the idle timeout, but the
// attempt's total timeout still ends the stream, with an error event that
// says so.
func TestProxy_TotalTimeoutCutsAStreamThatKeepsMoving(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(up.Close)
	f := newFixture(t)
	h := f.host("trickle", func(h *snapshot.Host) {
		h.BaseURL = up.URL
		// The total timeout bounds the first byte too: it leaves a loaded
		// machine room to start the stream (100 ms did not, under -cpu=1).
		h.IdleTimeout = 10 * time.Second
		h.TotalTimeout = 500 * time.Millisecond
	})
	f.key(h, "k", "sk-up-trickle")
	f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "m")
	f.start()

	req, _ := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true}}`))
	req.Header.Set("Authorization", "Bearer "+relayKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(got), `"content":"a"`) || !strings.Contains(string(got), "total timeout") {
		t.Fatalf("%d, stream ends %q", resp.StatusCode, got[max(0, len(got)-300):])
	}
	if rec := f.rec.next(t); rec.ErrorKind != "upstream_stream_error" {
		t.Errorf("record %+v", rec)
	}
}
