package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// agentBody is a chat request of about kb KB in the shape an agent turn
// has: a long system prompt and a history of turns, then a short question.
func agentBody(model string, kb int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"` + model + `","max_tokens":32000,"messages":[{"role":"system","content":"`)
	line := `You are a coding agent. Read files with the tools, keep edits small, explain each change. `
	for sb.Len() < kb*1024/2 {
		sb.WriteString(line)
	}
	sb.WriteString(`"}`)
	for i := 0; sb.Len() < kb*1024-200; i++ {
		fmt.Fprintf(&sb, `,{"role":"user","content":"Turn %d: what does internal/proxy/forward.go do with a held read, and why \"now\"?"}`, i)
		fmt.Fprintf(&sb, `,{"role":"assistant","content":"It writes the read it held before, then holds this one; turn %d."}`, i)
	}
	sb.WriteString(`,{"role":"user","content":"Summarise in one line."}]}`)
	return []byte(sb.String())
}

// BenchmarkPromptKB measures what a prompt's size costs through Relay
// against the same request straight to the mock upstream, and against a
// plain Go hop (a server that reads the body, decodes it with
// encoding/json and answers a fixed reply, as relay-bench's mock does):
// the process's CPU per request (getrusage: caller, servers together) at 1,
// 16, 64 and 256 KB. Under size=ratio it reports the marginal CPU per KB
// Relay adds, ((relay − direct) at 256 KB − (relay − direct) at 1 KB) /
// 255, the plain hop's own per KB, and their ratio (issue 30's goal:
// at most 0.25).
//
//	go test -run '^$' -bench PromptKB -benchtime 300x ./internal/proxy/
func BenchmarkPromptKB(b *testing.B) {
	relay, up := newHop(b)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		raw, _ := io.ReadAll(r.Body)
		if json.Unmarshal(raw, &req) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-plain","object":"chat.completion","model":"`+req.Model+`","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer plain.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	buf := make([]byte, 32<<10)
	do := func(b *testing.B, url, key string, body []byte) {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
	}
	sizes := []int{1, 16, 64, 256}
	cpu := map[string]map[int]float64{"plain": {}, "direct": {}, "relay": {}}
	for _, kb := range sizes {
		for _, target := range []struct{ name, url, key, model string }{
			{"plain", plain.URL, "sk-up", "gpt-4o-mini"},
			{"direct", up.URL, "sk-up", "gpt-4o-mini"},
			{"relay", relay.URL, relayKey, "gpt-test"},
		} {
			body := agentBody(target.model, kb)
			b.Run(fmt.Sprintf("%s/size=%dKB", target.name, kb), func(b *testing.B) {
				do(b, target.url, target.key, body) // connections up
				cpu0, n := processCPU(), 0
				for b.Loop() {
					do(b, target.url, target.key, body)
					n++
				}
				per := float64((processCPU() - cpu0).Microseconds()) / float64(n)
				cpu[target.name][kb] = per
				b.ReportMetric(per, "cpu-µs/op")
				b.ReportMetric(float64(len(body))/1024, "KB/op")
			})
		}
	}
	b.Run("size=ratio", func(b *testing.B) {
		for b.Loop() {
		}
		lo, hi := sizes[0], sizes[len(sizes)-1]
		hop := (cpu["plain"][hi] - cpu["plain"][lo]) / float64(hi-lo)
		added := ((cpu["relay"][hi] - cpu["direct"][hi]) - (cpu["relay"][lo] - cpu["direct"][lo])) / float64(hi-lo)
		b.ReportMetric(hop, "plain-hop-µs/KB")
		b.ReportMetric(added, "relay-added-µs/KB")
		if hop > 0 {
			b.ReportMetric(added/hop, "ratio")
		}
	})
}
