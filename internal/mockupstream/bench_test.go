package mockupstream_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// BenchmarkServeHTTP measures the handler alone (no network), with recording
// off as in a load test.
func BenchmarkServeHTTP(b *testing.B) {
	cases := []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello there, how are you today?"}]}`},
		{"chat_stream", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello there, how are you today?"}]}`},
		{"anthropic_stream", "/v1/messages", `{"model":"claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Hello there, how are you today?"}]}`},
		{"responses_stream", "/v1/responses", `{"model":"gpt-4o","stream":true,"input":"Hello there, how are you today?"}`},
		{"gemini_stream", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":"Hello there, how are you today?"}]}]}`},
		{"embeddings", "/v1/embeddings", `{"model":"text-embedding-3-small","input":"Hello there"}`},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			m := mockupstream.New(mockupstream.Options{Record: -1})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
					req.Header.Set("Authorization", "Bearer k")
					req.Header.Set("x-api-key", "k")
					req.Header.Set("anthropic-version", "2023-06-01")
					req.Header.Set("x-goog-api-key", "k")
					w := httptest.NewRecorder()
					m.ServeHTTP(w, req)
					if w.Code != 200 {
						b.Fatalf("status %d: %s", w.Code, w.Body)
					}
				}
			})
		})
	}
}
