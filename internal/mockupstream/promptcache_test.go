package mockupstream_test

import (
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/mockupstream"
)

// TestPromptCache_PerKey holds every shape to the per-key prompt cache: a
// body whose prefix the same key sent before reports cached tokens, the
// same body on another key does not, and the cache is off by default.
func TestPromptCache_PerKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("You are a careful coding agent. ", 200) // ~6 KiB of stable prefix
	tests := []struct {
		name, path, body string
		header           func(key string) map[string]string
		cached           []string // path to the cached count in the response
		input            []string
	}{
		{"openai chat", "/v1/chat/completions",
			`{"model":"gpt-test","messages":[{"role":"system","content":"` + long + `"},{"role":"user","content":"hi"}]}`,
			func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} },
			[]string{"usage", "prompt_tokens_details", "cached_tokens"}, []string{"usage", "prompt_tokens"}},
		{"responses", "/v1/responses",
			`{"model":"gpt-test","instructions":"` + long + `","input":"hi"}`,
			func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} },
			[]string{"usage", "input_tokens_details", "cached_tokens"}, []string{"usage", "input_tokens"}},
		{"anthropic", "/v1/messages",
			`{"model":"claude-test","max_tokens":64,"system":"` + long + `","messages":[{"role":"user","content":"hi"}]}`,
			func(k string) map[string]string {
				return map[string]string{"x-api-key": k, "anthropic-version": "2023-06-01"}
			},
			[]string{"usage", "cache_read_input_tokens"}, nil},
		{"gemini", "/v1beta/models/gemini-test:generateContent",
			`{"systemInstruction":{"parts":[{"text":"` + long + `"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			func(k string) map[string]string { return map[string]string{"x-goog-api-key": k} },
			[]string{"usageMetadata", "cachedContentTokenCount"}, []string{"usageMetadata", "promptTokenCount"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cached := func(b bundle, key string) float64 {
				t.Helper()
				resp, raw := post(t, b.srv.URL+tt.path, tt.header(key), tt.body)
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, raw)
				}
				var v map[string]any
				decodeJSON(t, raw, &v)
				n, _ := dig(v, tt.cached...).(float64)
				if tt.input != nil {
					if in, _ := dig(v, tt.input...).(float64); n > in {
						t.Fatalf("cached %v of %v input tokens", n, in)
					}
				}
				return n
			}
			on := setup(t, mockupstream.Options{PromptCache: true})
			if n := cached(on, "key-a"); n != 0 {
				t.Errorf("first request on key-a: %v cached tokens, want 0", n)
			}
			if n := cached(on, "key-a"); n < 1000 {
				t.Errorf("repeat on key-a: %v cached tokens, want most of the ~1500-token prompt", n)
			}
			if n := cached(on, "key-b"); n != 0 {
				t.Errorf("first request on key-b: %v cached tokens, want 0 (the cache is per key)", n)
			}
			off := setup(t, mockupstream.Options{})
			cached(off, "key-a")
			if n := cached(off, "key-a"); n != 0 {
				t.Errorf("cache off: %v cached tokens", n)
			}
		})
	}
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}
