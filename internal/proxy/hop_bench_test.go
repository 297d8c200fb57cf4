package proxy_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// BenchmarkRelayHop is BenchmarkProxyPassthrough with what a wall-clock
// ns/op hides on a shared machine: the process's CPU time per request
// (getrusage, caller, Relay and mock together) and its write system calls
// per request (syscw in /proc/self/io; Linux only). The body names a model
// whose binding rewrites it, as a deployment's usually does.
func BenchmarkRelayHop(b *testing.B) {
	relay, _ := newHop(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}

	msgs := `"messages":[{"role":"system","content":"You are a terse assistant."},{"role":"user","content":"Hello, Relay. Say something short about load balancing."}]`
	for _, tc := range []struct{ name, body string }{
		{"non-stream", `{"model":"gpt-test",` + msgs + `}`},
		{"stream", `{"model":"gpt-test","stream":true,` + msgs + `}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 32<<10)
			body := []byte(tc.body)
			do := func() {
				req, _ := http.NewRequest(http.MethodPost, relay.URL+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+relayKey)
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
			do() // connections up
			cpu0, w0 := processCPU(), selfSyscw()
			n := 0
			for b.Loop() {
				do()
				n++
			}
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/op")
			}
			if w := selfSyscw(); w >= 0 && w0 >= 0 {
				b.ReportMetric(float64(w-w0)/float64(n), "writes/op")
			}
		})
	}
}

// newHop is Relay's proxy in front of the mock upstream, with one caller
// whose policy grants the model gpt-test, bound to the mock's gpt-4o-mini
// (a binding that rewrites the model, as a deployment's usually does). It
// returns both servers, closed when b ends.
func newHop(b *testing.B) (relay, up *httptest.Server) {
	b.Helper()
	mock := mockupstream.New(mockupstream.Options{Record: -1})
	up = httptest.NewServer(mock)
	b.Cleanup(up.Close)
	id := func(n byte) uuid.UUID { return uuid.UUID{0xbc, n} }
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
	relay = httptest.NewServer(proxy.New(proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }}))
	b.Cleanup(relay.Close)
	return relay, up
}

// processCPU is this process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfSyscw is this process's write system calls so far; -1 unknown.
func selfSyscw() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscw:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
