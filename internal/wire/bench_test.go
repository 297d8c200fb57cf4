package wire

import (
	"strconv"
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

// agentBody is an agent-sized request of about kb KiB: a system prompt,
// tool schemas and turns of code and tool output, escapes included, as
// Claude Code and Codex send them.
func agentBody(kb int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"claude-sonnet","max_tokens":32000,"stream":true,"system":"You are an agent.\nUse the tools.","tools":[`)
	for i := range 8 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"name":"tool_` + strings.Repeat("x", i) + `","description":"Reads a file from the workspace and returns it.","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}`)
	}
	sb.WriteString(`],"messages":[`)
	turn := `func main() {\n\tfmt.Println(\"hello, world\")\n\tfor i := 0; i < 10; i++ {\n\t\tdo(i)\n\t}\n}\n` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)
	for n := 0; sb.Len() < kb<<10; n++ {
		if n > 0 {
			sb.WriteByte(',')
		}
		role := "user"
		if n%2 == 1 {
			role = "assistant"
		}
		sb.WriteString(`{"role":"` + role + `","content":[{"type":"text","text":"` + turn + `"}]}`)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// BenchmarkScanAgentBody is the whole scan the proxy does of an agent-sized
// body: ScanRequest, then the RouteFacts from its walk.
func BenchmarkScanAgentBody(b *testing.B) {
	for _, kb := range []int{1, 16, 64, 256} {
		body := agentBody(kb)
		b.Run(strconv.Itoa(kb)+"KB", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				r, err := ScanRequest(body)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Route(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSkipString_EightAtATime puts each byte that ends or breaks a run
// (quote, backslash, control characters) and bytes that only look like
// one at every offset of a long string: the eight-byte skip finds the
// same end, or the same error, as a byte-at-a-time scan.
func TestSkipString_EightAtATime(t *testing.T) {
	for _, c := range []byte{'"', '\\', 0x00, 0x01, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff} {
		for at := range 24 {
			s := []byte(`"` + strings.Repeat("a", 30) + `"`)
			s[1+at] = c
			end, err := skipString(s, 0)
			want := -1
			switch {
			case c == '"':
				want = 1 + at + 1
			case c < 0x20 || c == '\\':
				want = -1 // a control character, or an escape of 'a': refused
			default:
				want = len(s)
			}
			if (want < 0) != (err != nil) || (want >= 0 && end != want) {
				t.Errorf("byte %#x at %d: end %d, err %v; want %d", c, at, end, err, want)
			}
		}
	}
}
