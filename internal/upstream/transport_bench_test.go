package upstream

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkTransport_Paths is one upstream exchange through Transport on
// each path Relay can take — plain HTTP and TLS through h1.go (the
// default), and with Options.HTTP2 TLS through net/http, HTTP/2 or
// HTTP/1.1 as the server offers — for an answer framed by length and for a stream of 20 events,
// from 8 callers at once against an in-process server (whose work is in
// the figures too: compare paths, not absolute numbers).
//
//	go test -run '^$' -bench Transport_Paths -benchmem ./internal/upstream/
func BenchmarkTransport_Paths(b *testing.B) {
	const answer = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the bench."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`
	event := "data: " + strings.Replace(answer, "chat.completion", "chat.completion.chunk", 1) + "\n\n"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			f := w.(http.Flusher)
			for range 20 {
				io.WriteString(w, event)
				f.Flush()
			}
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello, Relay. Say something short."}]}`
	for _, p := range []struct {
		name            string
		tls, h2, viaStd bool
	}{{"plain-h1", false, false, false}, {"tls-h1", true, true, false}, {"tls-h2-std", true, true, true}, {"tls-h1-std", true, false, true}} {
		srv := httptest.NewUnstartedServer(h)
		tr := NewTransport()
		if p.tls {
			srv.EnableHTTP2 = p.h2
			srv.StartTLS()
			roots := x509.NewCertPool()
			roots.AddCert(srv.Certificate())
			tr = New(Options{Roots: roots, HTTP2: p.viaStd})
		} else {
			srv.Start()
		}
		for _, path := range []string{"/nonstream", "/stream"} {
			b.Run(p.name+path, func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(4) // 4 × GOMAXPROCS callers
				b.RunParallel(func(pb *testing.PB) {
					buf := make([]byte, 32<<10)
					for pb.Next() {
						req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
						req.ContentLength = int64(len(body))
						resp, err := tr.RoundTrip(req)
						if err != nil {
							b.Error(err)
							return
						}
						for {
							if _, err := resp.Body.Read(buf); err != nil {
								break
							}
						}
						resp.Body.Close()
					}
				})
			})
		}
		tr.CloseIdleConnections()
		srv.Close()
	}
}
