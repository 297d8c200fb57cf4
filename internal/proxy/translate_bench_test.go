package proxy_test

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// BenchmarkProxyTranslated sends whole requests through the handler to an
// in-process mock upstream over loopback HTTP, like
// BenchmarkProxyPassthrough, for each translated pair; the passthrough
// rows are the baseline (same mock, same loopback, no translation).
func BenchmarkProxyTranslated(b *testing.B) {
	mock := mockupstream.New(mockupstream.Options{Record: -1})
	up := httptest.NewServer(mock)
	defer up.Close()
	id := func(n byte) uuid.UUID { return uuid.UUID{0xbc, n} }
	policy := &snapshot.Policy{ID: id(1), AllModels: true, AllHostKeys: true}
	d := &snapshot.Data{
		Projects:        []*snapshot.Project{{ID: id(2)}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: id(3), ProjectID: id(2), PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RelayKeys:       []*snapshot.RelayKey{{ID: id(4), ProjectID: id(2), ServiceAccountID: id(3), Hash: sha256.Sum256([]byte(relayKey))}},
		Hosts:           []*snapshot.Host{{ID: id(5), Slug: "mock", BaseURL: up.URL, Enabled: true}},
		HostKeys:        []*snapshot.HostKey{{ID: id(6), HostID: id(5), Slug: "k", Secret: snapshot.NewSecret("sk-up"), SecretVersion: 1, Enabled: true, Usable: true}},
	}
	for i, shape := range []wire.Shape{wire.ShapeOpenAI, wire.ShapeAnthropic, wire.ShapeGemini, wire.ShapeOpenAIResponses} {
		m := &snapshot.Model{ID: id(byte(10 + i)), Name: string(shape), MaxOutputTokens: 4096}
		d.Models = append(d.Models, m)
		d.Bindings = append(d.Bindings, &snapshot.Binding{ID: id(byte(20 + i)), ModelID: m.ID, HostID: id(5), Shape: shape, UpstreamModel: "up-" + string(shape), Enabled: true})
	}
	snap := snapshot.Build(d, 1, time.Now())
	relay := httptest.NewServer(proxy.New(proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }}))
	defer relay.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	const chat = `{"model":"%s",%s"messages":[{"role":"user","content":"hello, benchmark"}]}`
	const messages = `{"model":"%s","max_tokens":256,%s"messages":[{"role":"user","content":"hello, benchmark"}]}`
	const resp = `{"model":"%s",%s"input":"hello, benchmark"}`
	for _, c := range []struct{ name, path, body, model string }{
		{"chat→openai (passthrough)", "/v1/chat/completions", chat, "openai"},
		{"chat→anthropic", "/v1/chat/completions", chat, "anthropic"},
		{"chat→gemini", "/v1/chat/completions", chat, "gemini"},
		{"chat→responses", "/v1/chat/completions", chat, "openai_responses"},
		{"messages→anthropic (passthrough)", "/v1/messages", messages, "anthropic"},
		{"messages→openai", "/v1/messages", messages, "openai"},
		{"messages→gemini", "/v1/messages", messages, "gemini"},
		{"messages→responses", "/v1/messages", messages, "openai_responses"},
		{"responses→openai_responses (passthrough)", "/v1/responses", resp, "openai_responses"},
		{"responses→openai", "/v1/responses", resp, "openai"},
		{"responses→anthropic", "/v1/responses", resp, "anthropic"},
		{"responses→gemini", "/v1/responses", resp, "gemini"},
	} {
		for _, stream := range []bool{false, true} {
			name, opt := c.name+"/non-stream", ""
			if stream {
				name, opt = c.name+"/stream", `"stream":true,`
			}
			body := strings.Replace(strings.Replace(c.body, "%s", c.model, 1), "%s", opt, 1)
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, relay.URL+c.path, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+relayKey)
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatal(resp.Status)
					}
				}
			})
		}
	}
}
