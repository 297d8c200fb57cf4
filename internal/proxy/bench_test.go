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

// BenchmarkProxyPassthrough sends whole requests through the handler to an
// in-process mock upstream, over real loopback HTTP on both sides.
func BenchmarkProxyPassthrough(b *testing.B) {
	mock := mockupstream.New(mockupstream.Options{Record: -1})
	up := httptest.NewServer(mock)
	defer up.Close()
	id := func(n byte) uuid.UUID { return uuid.UUID{0xbb, n} }
	policy := &snapshot.Policy{ID: id(1), AllModels: true, AllHostKeys: true}
	d := &snapshot.Data{
		Projects:        []*snapshot.Project{{ID: id(2)}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: id(3), ProjectID: id(2), PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RelayKeys:       []*snapshot.RelayKey{{ID: id(4), ProjectID: id(2), ServiceAccountID: id(3), Hash: sha256.Sum256([]byte(relayKey))}},
		Hosts:           []*snapshot.Host{{ID: id(5), Slug: "mock", BaseURL: up.URL, Enabled: true}},
		HostKeys:        []*snapshot.HostKey{{ID: id(6), HostID: id(5), Slug: "k", Secret: snapshot.NewSecret("sk-up"), SecretVersion: 1, Enabled: true, Usable: true}},
		Models:          []*snapshot.Model{{ID: id(7), Name: "gpt-test"}},
		Bindings:        []*snapshot.Binding{{ID: id(8), ModelID: id(7), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-4o-mini", Enabled: true}},
	}
	snap := snapshot.Build(d, 1, time.Now())
	relay := httptest.NewServer(proxy.New(proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }}))
	defer relay.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	for _, tc := range []struct{ name, body string }{
		{"non-stream", `{"model":"gpt-test","messages":[{"role":"user","content":"hello, benchmark"}]}`},
		{"stream", `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hello, benchmark"}]}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, relay.URL+"/v1/chat/completions", strings.NewReader(tc.body))
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

// BenchmarkEndpointPassthrough measures an image and an audio passthrough
// against chat's, on the same set-up as BenchmarkProxyPassthrough; compare
// their CPU per request with -cpuprofile or the ns/op of one core.
func BenchmarkEndpointPassthrough(b *testing.B) {
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
		Models: []*snapshot.Model{{ID: id(7), Name: "gpt-test", Kind: "chat"}, {ID: id(9), Name: "painter", Kind: "image"},
			{ID: id(11), Name: "speaker", Kind: "audio"}},
		Bindings: []*snapshot.Binding{{ID: id(8), ModelID: id(7), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-4o-mini", Enabled: true},
			{ID: id(10), ModelID: id(9), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-image-1", Enabled: true},
			{ID: id(12), ModelID: id(11), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-4o-mini-tts", Enabled: true}},
	}
	snap := snapshot.Build(d, 1, time.Now())
	relay := httptest.NewServer(proxy.New(proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }}))
	defer relay.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, tc := range []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"model":"gpt-test","messages":[{"role":"user","content":"hello, benchmark"}]}`},
		{"image", "/v1/images/generations", `{"model":"painter","prompt":"hello, benchmark","quality":"low"}`},
		{"speech", "/v1/audio/speech", `{"model":"speaker","input":"hello, benchmark","voice":"alloy"}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, relay.URL+tc.path, strings.NewReader(tc.body))
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
