package translator

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

// Translation overhead, against what the passthrough path does for the
// same bytes: per request (decode the caller's body, encode the
// upstream's; passthrough: scan and splice the model), per whole answer
// (passthrough: pick usage out as it goes by) and per stream event
// (passthrough: the usage tracker's look at each event). The inputs are
// the recorded golden cases; docs/translation.md has the figures.

var benchPairs = []string{"chat_anthropic", "chat_gemini", "chat_responses", "messages_openai", "messages_gemini", "messages_responses",
	"responses_openai", "responses_anthropic", "responses_gemini",
	"generate_openai", "generate_responses", "generate_anthropic", "generate_gemini"}

func benchFile(b *testing.B, dir, c, name string) []byte {
	b.Helper()
	return readFileB(b, filepath.Join("testdata", "golden", dir, c, name))
}

func readFileB(b *testing.B, path string) []byte {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkRequest(b *testing.B) {
	for _, dir := range benchPairs {
		p := pairByDir(dir)
		body := benchFile(b, dir, "tool_results", "request.json")
		b.Run(dir, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var dst []byte
			for b.Loop() {
				req, err := Decode(p.in, body)
				if err != nil {
					b.Fatal(err)
				}
				tr, _ := New(req, Target{Shape: p.up, UpstreamModel: "up-model"}, testNow)
				if dst, err = tr.AppendRequest(dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, dir := range []string{"chat_anthropic", "messages_openai"} {
		body := benchFile(b, dir, "tool_results", "request.json")
		b.Run("passthrough_"+map[string]string{"chat_anthropic": "chat", "messages_openai": "messages"}[dir], func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var dst []byte
			rw := wire.Rewrite{Model: "up-model"}
			for b.Loop() {
				scan, err := wire.ScanRequest(body)
				if err != nil {
					b.Fatal(err)
				}
				if scan.NeedsRewrite(rw) {
					dst = wire.AppendRewritten(dst[:0], body, &scan, rw)
				}
			}
		})
	}
}

func BenchmarkResponse(b *testing.B) {
	for _, dir := range benchPairs {
		p := pairByDir(dir)
		req, err := Decode(p.in, benchFile(b, dir, "parallel_tools", "request.json"))
		if err != nil {
			b.Fatal(err)
		}
		body := benchFile(b, dir, "parallel_tools", "upstream.body")
		b.Run(dir, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var dst []byte
			for b.Loop() {
				tr, _ := New(req, Target{Shape: p.up}, testNow)
				if dst, err = tr.AppendResponse(dst[:0], body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, up := range []wire.Shape{wire.ShapeAnthropic, wire.ShapeOpenAI} {
		dir := map[wire.Shape]string{wire.ShapeAnthropic: "chat_anthropic", wire.ShapeOpenAI: "messages_openai"}[up]
		body := benchFile(b, dir, "parallel_tools", "upstream.body")
		b.Run("passthrough_"+string(up), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			u := wire.NewBodyUsage(64 << 10)
			for b.Loop() {
				u.Reset(64 << 10)
				_, _ = u.Write(body)
				if v, ok := u.Value(); ok {
					_ = wire.ParseUsage(up, v)
				}
			}
		})
	}
}

// streamEvents reads a recorded stream into events with their own bytes.
func streamEvents(b *testing.B, body []byte) []wire.Event {
	b.Helper()
	r := wire.NewEventReader(bytes.NewReader(body), nil, 1<<20)
	var evs []wire.Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, wire.Event{Raw: bytes.Clone(ev.Raw), Name: bytes.Clone(ev.Name), Data: bytes.Clone(ev.Data)})
	}
}

// BenchmarkStreamEvent measures one upstream event: b.N counts events, so
// ns/op and allocs/op are per event (a new translator per stream is
// included, spread over its events).
func BenchmarkStreamEvent(b *testing.B) {
	for _, dir := range benchPairs {
		p := pairByDir(dir)
		req, err := Decode(p.in, benchFile(b, dir, "parallel_tools_stream", "request.json"))
		if err != nil {
			b.Fatal(err)
		}
		evs := streamEvents(b, benchFile(b, dir, "parallel_tools_stream", "upstream.body"))
		b.Run(dir, func(b *testing.B) {
			b.ReportAllocs()
			var dst []byte
			var tr *Translator
			i := len(evs)
			for b.Loop() {
				if i == len(evs) {
					tr, _ = New(req, Target{Shape: p.up}, testNow)
					i = 0
				}
				dst, _ = tr.AppendEvent(dst[:0], evs[i])
				i++
			}
		})
	}
	for _, up := range []wire.Shape{wire.ShapeAnthropic, wire.ShapeOpenAI, wire.ShapeGemini, wire.ShapeOpenAIResponses} {
		dir := map[wire.Shape]string{wire.ShapeAnthropic: "chat_anthropic", wire.ShapeOpenAI: "messages_openai", wire.ShapeGemini: "chat_gemini", wire.ShapeOpenAIResponses: "chat_responses"}[up]
		evs := streamEvents(b, benchFile(b, dir, "parallel_tools_stream", "upstream.body"))
		b.Run("passthrough_"+string(up), func(b *testing.B) {
			b.ReportAllocs()
			tr := wire.NewStreamTracker(up)
			i := 0
			for b.Loop() {
				if i == len(evs) {
					tr, i = wire.NewStreamTracker(up), 0
				}
				tr.Observe(evs[i])
				i++
			}
		})
	}
}
