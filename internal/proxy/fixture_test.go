package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/uuid"
	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// testFault is the header the fixture's mock reads a fault spec from and
// its hosts forward: Relay never forwards the mock's own X-Mock-Fault.
const testFault = "X-Test-Fault"

// Relay keys the fixture knows, by plaintext.
const (
	relayKey    = "sk-wr-test-good-0123456789abcdef0123"
	revokedKey  = "sk-wr-test-revoked-0123456789abcdef"
	expiredKey  = "sk-wr-test-expired-0123456789abcdef"
	noPolicyKey = "sk-wr-test-nopolicy-0123456789abcdef"
)

var epoch = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// clock is the injected clock; tests move it by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// recorder keeps the records the proxy emits.
type recorder struct{ ch chan event.Record }

func (r *recorder) Record(rec event.Record) {
	select {
	case r.ch <- rec:
	default:
	}
}

func (r *recorder) next(t *testing.T) event.Record {
	t.Helper()
	select {
	case rec := <-r.ch:
		return rec
	case <-time.After(5 * time.Second):
		t.Fatal("no record emitted")
		return event.Record{}
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// fixture is one Relay in front of one mock upstream, with a catalog the
// test shapes before start.
type fixture struct {
	t       *testing.T
	mock    *mockupstream.Server
	up      *httptest.Server
	data    snapshot.Data
	policy  *snapshot.Policy
	clock   *clock
	rec     *recorder
	logs    *syncBuffer
	cfg     proxy.Config
	h       *proxy.Handler
	srv     *httptest.Server
	secrets []string
	n       uint16
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	mock := mockupstream.New(mockupstream.Options{FaultHeader: testFault})
	up := httptest.NewServer(mock)
	t.Cleanup(up.Close)
	f := &fixture{
		t: t, mock: mock, up: up,
		clock:   &clock{t: epoch},
		rec:     &recorder{ch: make(chan event.Record, 64)},
		logs:    &syncBuffer{},
		secrets: []string{relayKey, revokedKey, expiredKey, noPolicyKey},
	}
	team := &snapshot.Team{ID: f.id(), Slug: "team"}
	project := &snapshot.Project{ID: f.id(), TeamID: team.ID, Slug: "proj"}
	// Affinity off: these suites hold failover to the position order of
	// keys; route_test.go holds the session order.
	f.policy = &snapshot.Policy{
		ID: f.id(), Slug: "default", AllHostKeys: true, Models: map[snapshot.ID]struct{}{},
		KeyStrategy: snapshot.StrategyPrioritized, MaxAttempts: 3, Affinity: snapshot.AffinityOff,
	}
	sa := &snapshot.ServiceAccount{ID: f.id(), ProjectID: project.ID, Slug: "app", PolicyID: f.policy.ID}
	bare := &snapshot.ServiceAccount{ID: f.id(), ProjectID: project.ID, Slug: "bare"}
	key := func(plain string, owner *snapshot.ServiceAccount, mod func(*snapshot.RelayKey)) *snapshot.RelayKey {
		k := &snapshot.RelayKey{ID: f.id(), Hash: sha256.Sum256([]byte(plain)), DisplayPrefix: plain[:10], ProjectID: project.ID, ServiceAccountID: owner.ID}
		if mod != nil {
			mod(k)
		}
		return k
	}
	f.data = snapshot.Data{
		Teams: []*snapshot.Team{team}, Projects: []*snapshot.Project{project},
		ServiceAccounts: []*snapshot.ServiceAccount{sa, bare},
		Policies:        []*snapshot.Policy{f.policy},
		RelayKeys: []*snapshot.RelayKey{
			key(relayKey, sa, nil),
			key(revokedKey, sa, func(k *snapshot.RelayKey) { k.RevokedAt = epoch.Add(-time.Hour) }),
			key(expiredKey, sa, func(k *snapshot.RelayKey) { k.ExpiresAt = epoch.Add(-time.Minute) }),
			key(noPolicyKey, bare, nil),
		},
	}
	f.cfg = proxy.Config{
		Recorder:     f.rec,
		Logger:       slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:          f.clock.Now,
		RetryBackoff: time.Millisecond,
	}
	t.Cleanup(func() {
		logs := f.logs.String()
		for _, s := range f.secrets {
			if strings.Contains(logs, s) {
				t.Errorf("the log holds the secret %q:\n%s", s, logs)
			}
		}
	})
	return f
}

func (f *fixture) id() uuid.UUID {
	f.n++
	return uuid.UUID{0xab, byte(f.n >> 8), byte(f.n)}
}

func (f *fixture) host(slug string, mod ...func(*snapshot.Host)) *snapshot.Host {
	h := &snapshot.Host{ID: f.id(), Slug: slug, Name: slug, BaseURL: f.up.URL, Enabled: true, ForwardHeaders: []string{testFault}}
	for _, m := range mod {
		m(h)
	}
	f.data.Hosts = append(f.data.Hosts, h)
	return h
}

func (f *fixture) key(h *snapshot.Host, slug, secret string, mod ...func(*snapshot.HostKey)) *snapshot.HostKey {
	k := &snapshot.HostKey{
		ID: f.id(), HostID: h.ID, Slug: slug, Secret: snapshot.NewSecret(secret), SecretVersion: 1,
		Position: len(f.data.HostKeys), Enabled: true, Usable: true,
	}
	for _, m := range mod {
		m(k)
	}
	f.data.HostKeys = append(f.data.HostKeys, k)
	f.secrets = append(f.secrets, secret)
	return k
}

func (f *fixture) model(name string, granted bool) *snapshot.Model {
	m := &snapshot.Model{ID: f.id(), Name: name, Provider: "test", Kind: "chat", CreatedAt: epoch.Add(-24 * time.Hour)}
	f.data.Models = append(f.data.Models, m)
	if granted {
		f.policy.Models[m.ID] = struct{}{}
	}
	return m
}

func (f *fixture) bind(m *snapshot.Model, h *snapshot.Host, shape wire.Shape, upstream string) *snapshot.Binding {
	b := &snapshot.Binding{
		ID: f.id(), ModelID: m.ID, HostID: h.ID, Shape: shape, UpstreamModel: upstream,
		Position: len(f.data.Bindings), Enabled: true,
	}
	f.data.Bindings = append(f.data.Bindings, b)
	return b
}

// Host key secrets of the standard catalog.
const (
	openaiSecret    = "sk-up-openai-primary-secret-1"
	anthropicSecret = "sk-ant-up-primary-secret-1"
)

// standard adds one OpenAI-shaped and one Anthropic host and a model per
// inbound shape.
func (f *fixture) standard() {
	oa := f.host("openai")
	f.key(oa, "oa-1", openaiSecret)
	an := f.host("anthropic")
	f.key(an, "an-1", anthropicSecret)
	f.bind(f.model("gpt-test", true), oa, wire.ShapeOpenAI, "gpt-4o-mini")
	f.bind(f.model("emb-test", true), oa, wire.ShapeOpenAI, "text-embedding-3-small")
	f.bind(f.model("resp-test", true), oa, wire.ShapeOpenAIResponses, "gpt-4o-reasoning")
	f.bind(f.model("claude-test", true), an, wire.ShapeAnthropic, "claude-sonnet-cached-cache-write")
}

// start builds the snapshot and serves the proxy.
func (f *fixture) start() {
	f.t.Helper()
	snap := snapshot.Build(&f.data, 1, f.clock.Now())
	cfg := f.cfg
	cfg.Snapshot = func() *snapshot.Snapshot { return snap }
	f.h = proxy.New(cfg)
	f.srv = httptest.NewServer(f.h)
	f.t.Cleanup(f.srv.Close)
}

func (f *fixture) openai(opts ...oaopt.RequestOption) *openai.Client {
	c := openai.NewClient(append([]oaopt.RequestOption{
		oaopt.WithBaseURL(f.srv.URL + "/v1"), oaopt.WithAPIKey(relayKey), oaopt.WithMaxRetries(0),
	}, opts...)...)
	return &c
}

func (f *fixture) anthropic(opts ...anthopt.RequestOption) *anthropic.Client {
	c := anthropic.NewClient(append([]anthopt.RequestOption{
		anthopt.WithBaseURL(f.srv.URL), anthopt.WithAPIKey(relayKey), anthopt.WithMaxRetries(0),
	}, opts...)...)
	return &c
}

// post sends a raw POST and returns the response with its whole body.
func (f *fixture) post(path, body string, header map[string]string) (*http.Response, string) {
	f.t.Helper()
	return f.do(http.MethodPost, path, body, header)
}

// do sends a raw request as the standard relay key; header values replace
// (or, when empty, remove) the defaults.
func (f *fixture) do(method, path, body string, header map[string]string) (*http.Response, string) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.t.Context(), method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+relayKey)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("read body: %v", err)
	}
	f.assertNoSecrets(resp.Header, string(b))
	return resp, string(b)
}

// assertNoSecrets fails if a host key or relay key appears in a response.
func (f *fixture) assertNoSecrets(h http.Header, body string) {
	f.t.Helper()
	var hb strings.Builder
	_ = h.Write(&hb)
	for _, s := range f.secrets {
		if strings.Contains(body, s) || strings.Contains(hb.String(), s) {
			f.t.Errorf("a response holds the secret %q", s)
		}
	}
}

// requests returns what the mock upstream has seen.
func (f *fixture) requests() []mockupstream.Request { return f.mock.Requests() }

// waitFor waits until the mock has finished a request that matches.
func (f *fixture) waitFor(match func(mockupstream.Request) bool) mockupstream.Request {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), 5*time.Second)
	defer cancel()
	r, err := f.mock.WaitFor(ctx, match)
	if err != nil {
		f.t.Fatalf("mock request: %v", err)
	}
	return r
}

// errorBody decodes a Relay or provider error in either shape.
type errorBody struct {
	Type  string `json:"type"`
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func decodeError(t *testing.T, body string) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e
}
