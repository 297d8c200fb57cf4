package proxy_test

import (
	"crypto/sha256"
	"io"
	"mime/multipart"
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
// (speech out, a transcription's multipart upload in) against chat's, on
// the same set-up as BenchmarkProxyPassthrough: each through Relay and,
// as "direct", the same exchange sent straight to the mock, so that a
// route's cost to Relay is its through-Relay figure minus its direct one.
// With -cpu 1 the ns/op is the CPU of one request (caller, Relay and mock
// in one process, on one core).
//
// Run: go test -run '^$' -bench EndpointPassthrough -benchmem -cpu 1 -benchtime 2000x ./internal/proxy/
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
			{ID: id(11), Name: "speaker", Kind: "audio"}, {ID: id(13), Name: "scribe", Kind: "audio"}},
		Bindings: []*snapshot.Binding{{ID: id(8), ModelID: id(7), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-4o-mini", Enabled: true},
			{ID: id(10), ModelID: id(9), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-image-1", Enabled: true},
			{ID: id(12), ModelID: id(11), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "gpt-4o-mini-tts", Enabled: true},
			{ID: id(14), ModelID: id(13), HostID: id(5), Shape: wire.ShapeOpenAI, UpstreamModel: "whisper-1", Enabled: true}},
	}
	snap := snapshot.Build(d, 1, time.Now())
	relay := httptest.NewServer(proxy.New(proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }}))
	defer relay.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	// A transcription of 64 KiB of audio (kept in memory: under 1 MiB).
	form := func(model string) (string, string) {
		var buf strings.Builder
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", "a.mp3")
		_, _ = fw.Write(make([]byte, 64<<10))
		_ = mw.WriteField("model", model)
		_ = mw.Close()
		return buf.String(), mw.FormDataContentType()
	}
	scribe, scribeCT := form("scribe")
	whisper, whisperCT := form("whisper-1")
	for _, tc := range []struct{ name, path, body, direct, ct, directCT string }{
		{"chat", "/v1/chat/completions", `{"model":"gpt-test","messages":[{"role":"user","content":"hello, benchmark"}]}`,
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello, benchmark"}]}`, "application/json", "application/json"},
		{"image", "/v1/images/generations", `{"model":"painter","prompt":"hello, benchmark","quality":"low"}`,
			`{"model":"gpt-image-1","prompt":"hello, benchmark","quality":"low"}`, "application/json", "application/json"},
		{"speech", "/v1/audio/speech", `{"model":"speaker","input":"hello, benchmark","voice":"alloy"}`,
			`{"model":"gpt-4o-mini-tts","input":"hello, benchmark","voice":"alloy"}`, "application/json", "application/json"},
		{"transcription", "/v1/audio/transcriptions", scribe, whisper, scribeCT, whisperCT},
	} {
		for _, via := range []string{"relay", "direct"} {
			b.Run(tc.name+"/"+via, func(b *testing.B) {
				base, body, ct := relay.URL, tc.body, tc.ct
				if via == "direct" {
					base, body, ct = up.URL, tc.direct, tc.directCT
				}
				b.ReportAllocs()
				cpu := processCPU()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, base+tc.path, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+relayKey)
					req.Header.Set("Content-Type", ct)
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
				if c := processCPU(); c > 0 {
					// The process's CPU (user and system), not the wall
					// clock: other work on the machine does not count.
					b.ReportMetric(float64(c-cpu)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
