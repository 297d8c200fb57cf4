package proxy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	anthopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/upstream"
	"github.com/relay-llm/relay/internal/wire"
)

// upstreamPath is one of the two clients Relay's Transport chooses between,
// and, for TLS, the protocol the mock lets it negotiate: http:// and, by
// default, https:// go through the hand-written HTTP/1.1 client (offering
// only http/1.1 to a mock that offers HTTP/2 too, as every real provider
// does); with upstream.Options.HTTP2 (std), https:// goes through net/http
// — HTTP/2 where offered, else HTTP/1.1.
type upstreamPath struct {
	name         string
	tls, h2, std bool
	wantProto    int // the ProtoMajor the mock must see
}

func upstreamPaths() []upstreamPath {
	return []upstreamPath{
		{name: "plain-h1", wantProto: 1},
		{name: "tls-h1", tls: true, h2: true, wantProto: 1},
		{name: "tls-h2-std", tls: true, h2: true, std: true, wantProto: 2},
		{name: "tls-h1-std", tls: true, std: true, wantProto: 1},
	}
}

// pathFixture is a fixture whose mock upstream answers on one path, with
// counts of the connections (and TLS handshakes) the mock accepted and of
// the requests it saw by protocol.
type pathFixture struct {
	*fixture
	path       upstreamPath
	conns      atomic.Int64 // connections accepted
	handshakes atomic.Int64 // TLS handshakes completed (TLS paths)
	protoMu    sync.Mutex
	protos     map[int]int // ProtoMajor → requests
}

// forEachPath runs fn as a parallel subtest per upstream path.
func forEachPath(t *testing.T, fn func(t *testing.T, p upstreamPath)) {
	t.Helper()
	for _, p := range upstreamPaths() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			fn(t, p)
		})
	}
}

// fixtureOn is newFixture with its mock upstream served on p: hosts added
// afterwards point at it, and Relay's transport trusts its certificate.
func fixtureOn(t *testing.T, p upstreamPath) *pathFixture {
	t.Helper()
	return fixtureServing(t, p, nil)
}

// fixtureServing is fixtureOn with the upstream answered by h (nil: the
// fixture's mock).
func fixtureServing(t *testing.T, p upstreamPath, h http.Handler) *pathFixture {
	t.Helper()
	pf := &pathFixture{fixture: newFixture(t), path: p, protos: map[int]int{}}
	pf.up.Close() // newFixture's plain server: replaced below
	if h == nil {
		h = pf.mock
	}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pf.protoMu.Lock()
		pf.protos[r.ProtoMajor]++
		pf.protoMu.Unlock()
		h.ServeHTTP(w, r)
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			pf.conns.Add(1)
		}
	}
	if p.tls {
		up.EnableHTTP2 = p.h2
		up.TLS = &tls.Config{VerifyConnection: func(tls.ConnectionState) error {
			pf.handshakes.Add(1)
			return nil
		}}
		up.StartTLS()
		roots := x509.NewCertPool()
		roots.AddCert(up.Certificate())
		tr := upstream.New(upstream.Options{Roots: roots, HTTP2: p.std})
		t.Cleanup(tr.CloseIdleConnections)
		pf.cfg.Transport = tr
	} else {
		up.Start()
	}
	t.Cleanup(up.Close)
	pf.up = up
	return pf
}

// assertProto fails unless every request the mock saw came on the path's
// protocol: a TLS h2 test that fell back to HTTP/1.1 tests nothing new.
func (pf *pathFixture) assertProto(t *testing.T) {
	t.Helper()
	pf.protoMu.Lock()
	defer pf.protoMu.Unlock()
	for proto, n := range pf.protos {
		if proto != pf.path.wantProto {
			t.Errorf("%s: the mock saw %d requests on HTTP/%d, want HTTP/%d only", pf.path.name, n, proto, pf.path.wantProto)
		}
	}
	if len(pf.protos) == 0 {
		t.Errorf("%s: the mock saw no request", pf.path.name)
	}
}

// newConns is how many connections the mock accepted; on TLS paths each
// must have cost exactly one handshake.
func (pf *pathFixture) newConns(t *testing.T) int64 {
	t.Helper()
	if !pf.path.tls {
		return pf.conns.Load()
	}
	// A connection the client dialed while another freed up may still be
	// in its handshake: every accepted connection must finish one.
	var n int64
	poll.Until(t, 10*time.Second, pf.path.name+": every connection's TLS handshake", func() bool {
		n = pf.conns.Load()
		return pf.handshakes.Load() == n
	})
	return n
}

func TestPaths_AnswersStreamingAndNot(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, p upstreamPath) {
		f := fixtureOn(t, p)
		f.standard()
		f.start()

		resp, err := f.openai().Chat.Completions.New(t.Context(), chatParams("gpt-test"))
		if err != nil || len(resp.Choices) != 1 || !strings.HasPrefix(resp.Choices[0].Message.Content, "Hello from gpt-4o-mini") {
			t.Fatalf("chat: %+v %v", resp, err)
		}
		if rec := f.rec.next(t); rec.Status != 200 || rec.ErrorKind != "" {
			t.Errorf("chat record %+v", rec)
		}

		stream := f.openai().Chat.Completions.NewStreaming(t.Context(), chatParams("gpt-test"))
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil || len(acc.Choices) != 1 || !strings.HasPrefix(acc.Choices[0].Message.Content, "Hello from gpt-4o-mini") {
			t.Fatalf("chat stream: %+v %v", acc.Choices, err)
		}
		if rec := f.rec.next(t); rec.Status != 200 || rec.ErrorKind != "" || !rec.Stream {
			t.Errorf("chat stream record %+v", rec)
		}

		ms := f.anthropic().Messages.NewStreaming(t.Context(), messageParams("claude-test"))
		n := 0
		for ms.Next() {
			n++
		}
		if err := ms.Err(); err != nil || n < 4 {
			t.Fatalf("messages stream: %d events, %v", n, err)
		}
		f.rec.next(t)

		// A body framed by length and one the upstream streams, through the
		// raw endpoint so the bytes are Relay's own.
		r, body := f.post("/v1/responses", `{"model":"resp-test","input":"hi"}`, nil)
		if r.StatusCode != 200 || !strings.Contains(body, `"status":"completed"`) {
			t.Fatalf("responses: %d %s", r.StatusCode, body)
		}
		f.rec.next(t)
		r, body = f.post("/v1/responses", `{"model":"resp-test","input":"hi","stream":true}`, nil)
		if r.StatusCode != 200 || !strings.Contains(body, "event: response.completed") {
			t.Fatalf("responses stream: %d %s", r.StatusCode, body)
		}
		f.rec.next(t)
		f.assertProto(t)
	})
}

func TestPaths_CallerDisconnectCancelsUpstream(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, p upstreamPath) {
		f := fixtureOn(t, p)
		f.standard()
		f.start()
		for _, tc := range []struct {
			name  string
			fault string
			start func(ctx context.Context) // returns once the upstream is answering
		}{
			{"chat stream", "stall-2", func(ctx context.Context) {
				s := f.openai(oaopt.WithHeader(testFault, "stall-2")).Chat.Completions.NewStreaming(ctx, chatParams("gpt-test"))
				if !s.Next() {
					t.Error("no first event")
				}
			}},
			{"messages stream", "stall-1", func(ctx context.Context) {
				s := f.anthropic().Messages.NewStreaming(ctx, messageParams("claude-test"), anthopt.WithHeader(testFault, "stall-1"))
				if !s.Next() {
					t.Error("no first event")
				}
			}},
			{"chat non-stream", "stall-0", func(ctx context.Context) {
				go func() {
					_, _ = f.openai(oaopt.WithHeader(testFault, "stall-0")).Chat.Completions.New(ctx, chatParams("gpt-test"))
				}()
				f.waitForStart(func(r mockupstream.Request) bool { return r.Fault == "stall-0" })
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				tc.start(ctx)
				canceledAt := time.Now()
				cancel()
				up := f.waitFor(func(r mockupstream.Request) bool {
					return r.Fault == tc.fault && r.Canceled && r.CanceledAt.After(canceledAt)
				})
				if d := up.CanceledAt.Sub(canceledAt); d > time.Second {
					t.Errorf("the upstream noticed the cancel after %v", d)
				}
				if rec := f.rec.next(t); rec.Status != 499 || rec.ErrorKind != "client_canceled" {
					t.Errorf("record %+v", rec)
				}
			})
		}
		f.assertProto(t)
	})
}

func TestPaths_FirstByteTimeoutFailsOver(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, p upstreamPath) {
		f := fixtureOn(t, p)
		h := f.host("openai", func(h *snapshot.Host) {
			h.FirstByteTimeout = 300 * time.Millisecond
			h.BreakerNetworkFailures = 1 // one timeout holds, so the hold is seen
		})
		slow := f.key(h, "slow", "sk-up-fault-slow-5000-first")
		f.key(h, "fast", "sk-up-fast-second")
		f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
		f.start()

		resp, body := f.post("/v1/chat/completions", chatBody, nil)
		if resp.StatusCode != 200 || resp.Header.Get("X-Relay-Attempts") != "2" {
			t.Fatalf("%d attempts %q: %s", resp.StatusCode, resp.Header.Get("X-Relay-Attempts"), body)
		}
		// The slow attempt was given up on: the upstream hears of it.
		f.waitFor(func(r mockupstream.Request) bool {
			return r.Canceled && strings.Contains(r.Header.Get("Authorization"), "slow")
		})
		if rec := f.rec.next(t); rec.Status != 200 || rec.Attempts != 2 {
			t.Errorf("record %+v", rec)
		}
		if holds := f.holdsOf(slow); len(holds) == 0 {
			t.Errorf("a first-byte timeout left no hold on the slow key")
		}
		f.assertProto(t)
	})
}

func TestPaths_IdleTimeoutBreaksTheStream(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, p upstreamPath) {
		f := fixtureOn(t, p)
		h := f.host("openai", func(h *snapshot.Host) { h.IdleTimeout = 250 * time.Millisecond })
		f.key(h, "k", "sk-up-idle")
		f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "m")
		f.start()
		stream := f.openai(oaopt.WithHeader(testFault, "stall-2")).Chat.Completions.NewStreaming(t.Context(), chatParams("gpt-test"))
		n := 0
		for stream.Next() {
			n++
		}
		if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "idle timeout") || n != 2 {
			t.Fatalf("%d chunks, err %v", n, err)
		}
		if up := f.waitFor(func(r mockupstream.Request) bool { return r.Canceled }); up.Fault != "stall-2" {
			t.Errorf("upstream %+v", up)
		}
		if rec := f.rec.next(t); rec.ErrorKind != "upstream_stream_error" {
			t.Errorf("record %+v", rec)
		}
		f.assertProto(t)
	})
}

// TestPaths_IdleTimeoutCutsABodyWithoutLength: a non-stream answer sent
// chunked (or until close) that goes silent halfway is cut by the idle
// timeout — the caller never gets half a body as a whole one, and the
// record says it broke. net/http's HTTP/1.1-over-TLS client ends such a
// read with io.EOF, which read as a clean end before idleReader took the
// attempt's cause.
func TestPaths_IdleTimeoutCutsABodyWithoutLength(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, p upstreamPath) {
		f := fixtureServing(t, p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		h := f.host("openai", func(h *snapshot.Host) { h.IdleTimeout = 250 * time.Millisecond })
		f.key(h, "k", "sk-up-idle-body")
		f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "m")
		f.start()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(chatBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+relayKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err == nil {
			t.Errorf("the caller read %q as a whole body", got)
		}
		if rec := f.rec.next(t); rec.ErrorKind != "upstream_stream_error" {
			t.Errorf("record %+v, want upstream_stream_error", rec)
		}
		if !strings.Contains(f.logs.String(), "idle timeout") {
			t.Errorf("the log does not name the idle timeout:\n%s", f.logs.String())
		}
		f.assertProto(t)
	})
}

func TestPaths_MidStreamResetIsSurfacedNotRetried(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, p upstreamPath) {
		f := fixtureOn(t, p)
		f.standard()
		f.key(f.data.Hosts[0], "oa-2", "sk-up-openai-spare-key") // a retry would have somewhere to go
		f.start()

		stream := f.openai(oaopt.WithHeader(testFault, "reset-3")).Chat.Completions.NewStreaming(t.Context(), chatParams("gpt-test"))
		n := 0
		for stream.Next() {
			n++
		}
		if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "upstream stream broke") || n != 3 {
			t.Fatalf("%d chunks, err %v", n, err)
		}
		if rec := f.rec.next(t); rec.ErrorKind != "upstream_stream_error" || rec.Attempts != 1 || rec.Status != 200 {
			t.Errorf("record %+v", rec)
		}
		resp, body := f.post("/v1/responses", `{"model":"resp-test","input":"hi","stream":true}`, map[string]string{testFault: "reset-2"})
		if resp.StatusCode != 200 || !strings.Contains(body, "event: error\ndata: {\"type\":\"error\",\"code\":\"upstream_stream_error\"") {
			t.Errorf("responses: %d\n%s", resp.StatusCode, body)
		}
		f.rec.next(t)
		// Non-stream: the body breaks after the headers; nothing has
		// reached the caller yet, so another key may answer.
		resp, body = f.post("/v1/chat/completions", chatBody, map[string]string{testFault: "reset-0"})
		if resp.StatusCode != 502 && resp.StatusCode != 200 {
			t.Errorf("reset before any byte: %d %s", resp.StatusCode, body)
		}
		f.rec.next(t)
		if n := len(f.requests()); n > 2+2 {
			t.Errorf("upstream saw %d requests, want one per stream and at most one retry per key for the reset before any byte", n)
		}
		f.assertProto(t)
	})
}

// TestPaths_ConnectionsAreReused: at steady state a request costs no new
// connection (and so no TLS handshake) — streamed or not, answered or an
// upstream error — on every path.
func TestPaths_ConnectionsAreReused(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, p upstreamPath) {
		f := fixtureOn(t, p)
		f.standard()
		f.start()
		const callers, rounds = 4, 50
		kinds := []struct {
			body   string
			header map[string]string
			status int
		}{
			{chatBody, nil, 200},
			{`{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil, 200},
			{`{"model":"claude-test","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, nil, 200},
			{chatBody, map[string]string{testFault: "400"}, 400},
		}
		run := func(rounds int) {
			var wg sync.WaitGroup
			for c := range callers {
				wg.Go(func() {
					for i := range rounds {
						k := kinds[(c+i)%len(kinds)]
						path := "/v1/chat/completions"
						if strings.Contains(k.body, "claude") {
							path = "/v1/messages"
						}
						resp, body := f.post(path, k.body, k.header)
						if resp.StatusCode != k.status {
							t.Errorf("%s %v: %d %s", path, k.header, resp.StatusCode, body)
						}
					}
				})
			}
			wg.Wait()
		}
		run(len(kinds)) // warm: every caller has its connection
		before := f.newConns(t)
		run(rounds)
		reqs := callers * rounds
		opened := f.newConns(t) - before
		if per := float64(opened) / float64(reqs); per > 0.01 {
			t.Errorf("%s: %d new connections for %d requests (%.3f per request), want ≤ 0.01", p.name, opened, reqs, per)
		}
		t.Logf("%s: %d new connections (TLS handshakes) for %d requests at steady state; %d while warming", p.name, opened, reqs, before)
		f.assertProto(t)
	})
}

// TestPaths_BreakerOutcomes: the same upstream outcome holds the same
// breaker on every path.
func TestPaths_BreakerOutcomes(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, p upstreamPath) {
		for _, tc := range []struct {
			fault  string // testFault
			status int    // what the caller gets
			scope  keypool.Scope
			held   bool
		}{
			{"401", 502, keypool.ScopeModel, true}, // the model first; the key on a second model's refusal
			{"404", 502, keypool.ScopeModel, true},
			{"500", 502, keypool.ScopeModel, true},
			{"reset-0", 502, keypool.ScopeModel, true},
			{"reset-2", 200, keypool.ScopeModel, true}, // streamed: the model is held, never the key
			{"midstream-2", 200, 0, false},             // the upstream's own answer
			{"400", 400, 0, false},
		} {
			t.Run(tc.fault, func(t *testing.T) {
				f := fixtureOn(t, p)
				// One event holds: the thresholds' counting is keypool's
				// (and TestBreakers_HostThresholdsDecideForTheirKeys');
				// here the outcome's class must be the same on every path.
				h := f.host("openai", func(h *snapshot.Host) {
					h.IdleTimeout = 2 * time.Second
					h.BreakerServerFailures, h.BreakerNetworkFailures = 1, 1
				})
				k := f.key(h, "only", "sk-up-only-key")
				f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "gpt-4o-mini")
				f.start()
				body := chatBody
				if strings.Contains(tc.fault, "-2") {
					body = `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`
				}
				resp, got := f.post("/v1/chat/completions", body, map[string]string{testFault: tc.fault})
				if resp.StatusCode != tc.status {
					t.Fatalf("%d %s, want %d", resp.StatusCode, got, tc.status)
				}
				f.rec.next(t)
				holds := f.holdsOf(k)
				if !tc.held {
					if len(holds) != 0 {
						t.Errorf("holds %+v, want none", holds)
					}
					return
				}
				if len(holds) != 1 || holds[0].Scope != tc.scope {
					t.Errorf("holds %+v, want one of scope %v", holds, tc.scope)
				}
				f.assertProto(t)
			})
		}
	})
}

// TestPaths_TLSUpstreamIsVerified: Relay's default transport refuses a TLS
// upstream its roots do not vouch for, on both of its TLS clients — the
// seam trusts a pool, it does not turn verification off.
func TestPaths_TLSUpstreamIsVerified(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		tr   func() upstream.Client
	}{
		{"h1", func() upstream.Client { return nil }}, // NewGuardedTransport: the system roots
		{"std", func() upstream.Client { return upstream.New(upstream.Options{HTTP2: true}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := fixtureOn(t, upstreamPath{name: "tls-h2", tls: true, h2: true, wantProto: 2})
			f.cfg.Transport = c.tr()
			f.standard()
			f.start()
			resp, body := f.post("/v1/chat/completions", chatBody, nil)
			if resp.StatusCode != 502 {
				t.Fatalf("an untrusted upstream answered: %d %s", resp.StatusCode, body)
			}
			poll.Until(t, time.Second, "a refused handshake", func() bool { return f.conns.Load() > 0 })
			if n := len(f.requests()); n != 0 {
				t.Errorf("the untrusted upstream got %d requests", n)
			}
		})
	}
}
