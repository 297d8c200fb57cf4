package wire

import (
	"strings"
	"testing"
)

// benchBodies are request bodies as SDKs send them: plain keys, the model
// first or after the messages.
var benchBodies = []struct{ name, body string }{
	{"chat", `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words."}],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true},"temperature":0.2}`},
	{"messages", `{"max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 400) + `"}]}],"model":"claude-sonnet","stream":false,"system":"Be brief."}`},
}

func BenchmarkScanRequest(b *testing.B) {
	for _, bb := range benchBodies {
		body := []byte(bb.body)
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := ScanRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
