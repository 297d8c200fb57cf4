package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/relay-llm/relay/internal/event"
)

func TestProxy_ConcurrentCallers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.rec.ch = make(chan event.Record, 512)
	f.start()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	bodies := []struct{ path, body string }{
		{"/v1/chat/completions", chatBody},
		{"/v1/chat/completions", `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"claude-test","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/embeddings", `{"model":"emb-test","input":"hi"}`},
	}
	const callers = 256
	var wg sync.WaitGroup
	errs := make(chan string, callers)
	for i := range callers {
		wg.Go(func() {
			b := bodies[i%len(bodies)]
			req, _ := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+b.path, strings.NewReader(b.body))
			req.Header.Set("Authorization", "Bearer "+relayKey)
			resp, err := client.Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			out, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "Hello"
			if strings.HasSuffix(b.path, "embeddings") {
				want = `"embedding"`
			}
			if err != nil || resp.StatusCode != 200 || !strings.Contains(string(out), want) {
				errs <- resp.Status + " " + string(out[:min(len(out), 300)])
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for range callers {
		if rec := f.rec.next(t); rec.Status != 200 || rec.Usage.Input == 0 {
			t.Errorf("record %+v", rec)
		}
	}
}
