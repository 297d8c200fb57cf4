package proxy_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/sigv4"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// BenchmarkProxyBedrockVsOpenAI is one streamed Chat request through Relay
// to a bedrock_converse binding (translation to Converse, SigV4 signing,
// AWS event-stream unframing and translation back to Chat chunks) beside
// the same request through an OpenAI passthrough binding, both over
// loopback to the in-process mock. cpu-µs/op is the process's user+system
// CPU per request, Relay's and the mock's together; the direct_*
// sub-benchmarks send the upstream's own request straight to the mock
// (the Converse one signed here), so a route's cost to Relay is its
// through-Relay figure minus its direct one.
//
// Run: go test -count=5 -run '^$' -bench BenchmarkProxyBedrockVsOpenAI -benchtime 3000x ./internal/proxy/
func BenchmarkProxyBedrockVsOpenAI(b *testing.B) {
	f := newFixture(&testing.T{})
	f.mock = mockupstream.New(mockupstream.Options{Record: -1, AWSRegion: awsRegion,
		AWS: []mockupstream.AWSCredential{{AccessKeyID: awsKeyID, SecretAccessKey: awsSecret, SessionToken: awsToken}}})
	f.up = httptest.NewServer(f.mock)
	defer f.up.Close()
	f.cfg.Now = time.Now
	f.cfg.Logger = nil
	f.cfg.Recorder = nil
	bh := f.host("bedrock", func(h *snapshot.Host) {
		h.Profile = "bedrock"
		h.ProfileParams = map[string]string{"region": awsRegion, "access_key_id": awsKeyID}
	})
	f.key(bh, "aws-1", `{"secret_access_key":"`+awsSecret+`","session_token":"`+awsToken+`"}`)
	f.bind(f.model("nova", true), bh, wire.ShapeBedrockConverse, "amazon.nova-pro-v1:0")
	oh := f.host("openai")
	f.key(oh, "oa-1", openaiSecret)
	f.bind(f.model("gpt", true), oh, wire.ShapeOpenAI, "gpt-4o-mini")
	snap := snapshot.Build(&f.data, 1, time.Now())
	cfg := f.cfg
	cfg.Snapshot = func() *snapshot.Snapshot { return snap }
	relay := httptest.NewServer(proxy.New(cfg))
	defer relay.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	chat := func(model string) []byte {
		return []byte(`{"model":"` + model + `","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello, benchmark"}]}`)
	}
	converseURL := f.up.URL + "/model/amazon.nova-pro-v1:0/converse-stream"
	converse := []byte(`{"messages":[{"role":"user","content":[{"text":"hello, benchmark"}]}]}`)
	creds := sigv4.Credentials{AccessKeyID: awsKeyID, SecretAccessKey: awsSecret, SessionToken: awsToken}
	for _, bc := range []struct {
		name string
		req  func() *http.Request
	}{
		{"openai_passthrough_stream", func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, relay.URL+"/v1/chat/completions", bytes.NewReader(chat("gpt")))
			req.Header.Set("Authorization", "Bearer "+relayKey)
			return req
		}},
		{"bedrock_converse_stream", func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, relay.URL+"/v1/chat/completions", bytes.NewReader(chat("nova")))
			req.Header.Set("Authorization", "Bearer "+relayKey)
			return req
		}},
		{"direct_openai_stream", func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, f.up.URL+"/v1/chat/completions", bytes.NewReader(chat("gpt-4o-mini")))
			req.Header.Set("Authorization", "Bearer "+openaiSecret)
			return req
		}},
		{"direct_converse_stream", func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, converseURL, bytes.NewReader(converse))
			req.Header.Set("Content-Type", "application/json")
			if err := sigv4.SignURL(http.MethodPost, converseURL, req.Header, converse, creds, awsRegion, "bedrock", time.Now(), "Content-Type"); err != nil {
				b.Fatal(err)
			}
			return req
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				resp, err := client.Do(bc.req())
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatal(resp.Status)
				}
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
