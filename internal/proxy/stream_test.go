package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	anthopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

func TestProxy_MidStreamResetIsSurfacedNotRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.key(f.data.Hosts[0], "oa-2", "sk-up-openai-spare-key") // a retry would have somewhere to go
	f.start()

	t.Run("openai", func(t *testing.T) {
		stream := f.openai(oaopt.WithHeader(testFault, "reset-3")).Chat.Completions.NewStreaming(t.Context(), chatParams("gpt-test"))
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if stream.Err() == nil {
			t.Fatalf("the SDK saw a clean stream: %+v", acc.Choices)
		}
		if !strings.Contains(stream.Err().Error(), "upstream stream broke") {
			t.Errorf("err %v", stream.Err())
		}
		if rec := f.rec.next(t); rec.ErrorKind != "upstream_stream_error" || rec.Attempts != 1 || rec.Status != 200 {
			t.Errorf("record %+v", rec)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		stream := f.anthropic().Messages.NewStreaming(t.Context(), messageParams("claude-test"), anthopt.WithHeader(testFault, "reset-2"))
		n := 0
		for stream.Next() {
			n++
		}
		if stream.Err() == nil || n != 2 {
			t.Fatalf("%d events, err %v", n, stream.Err())
		}
		f.rec.next(t)
	})
	t.Run("responses raw", func(t *testing.T) {
		resp, body := f.post("/v1/responses", `{"model":"resp-test","input":"hi","stream":true}`, map[string]string{testFault: "reset-2"})
		if resp.StatusCode != 200 || !strings.HasSuffix(body, "\"sequence_number\":2}\n\n") || !strings.Contains(body, "event: error\ndata: {\"type\":\"error\",\"code\":\"upstream_stream_error\"") {
			t.Errorf("body:\n%s", body)
		}
		f.rec.next(t)
	})
	if n := len(f.requests()); n != 3 {
		t.Errorf("upstream saw %d requests, want exactly one per call (no retry after the first byte)", n)
	}
}

func TestProxy_UpstreamInStreamErrorPassesAsIs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	_, body := f.post("/v1/chat/completions", `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{testFault: "midstream-2"})
	if strings.Count(body, `"error"`) != 1 || strings.Contains(body, "upstream_stream_error") {
		t.Errorf("want the upstream's own error event only:\n%s", body)
	}
	if rec := f.rec.next(t); rec.ErrorKind != "upstream_stream_error" {
		t.Errorf("record %+v", rec)
	}
	stream := f.anthropic().Messages.NewStreaming(t.Context(), messageParams("claude-test"), anthopt.WithHeader(testFault, "midstream-1"))
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("anthropic err %v", err)
	}
}

func TestProxy_ClientCancelReachesUpstream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	for _, tc := range []struct {
		name   string
		stream func(ctx context.Context) bool // reads one event
	}{
		{"chat", func(ctx context.Context) bool {
			s := f.openai(oaopt.WithHeader(testFault, "stall-2")).Chat.Completions.NewStreaming(ctx, chatParams("gpt-test"))
			return s.Next()
		}},
		{"messages", func(ctx context.Context) bool {
			s := f.anthropic().Messages.NewStreaming(ctx, messageParams("claude-test"), anthopt.WithHeader(testFault, "stall-2"))
			return s.Next()
		}},
		{"responses non-stream", func(ctx context.Context) bool {
			// stall-0 sends nothing: the caller gives up waiting for the answer.
			go func() {
				_, _ = f.openai(oaopt.WithHeader(testFault, "stall-0")).Responses.New(ctx, responses.ResponseNewParams{Model: "resp-test", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
			}()
			f.waitForStart(func(r mockupstream.Request) bool { return r.Fault == "stall-0" })
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			if !tc.stream(ctx) {
				t.Fatal("no first event")
			}
			canceledAt := time.Now()
			cancel()
			up := f.waitFor(func(r mockupstream.Request) bool {
				return r.Canceled && r.ReceivedAt.Before(canceledAt) && r.CanceledAt.After(canceledAt)
			})
			// At once: without the cancel, the upstream would hear of it at
			// the first keep-alive that fails (15 s) or the idle timeout (60 s);
			// a second leaves a loaded machine room.
			if d := up.CanceledAt.Sub(canceledAt); d > time.Second {
				t.Errorf("the upstream noticed the cancel after %v", d)
			}
			if rec := f.rec.next(t); rec.Status != 499 || rec.ErrorKind != "client_canceled" {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

// waitForStart polls (with a deadline) until the mock has received a
// matching request, finished or not.
func (f *fixture) waitForStart(match func(mockupstream.Request) bool) {
	f.t.Helper()
	poll.Until(f.t, 5*time.Second, "the upstream saw the request", func() bool {
		for _, r := range f.requests() {
			if match(r) {
				return true
			}
		}
		return false
	})
}

// held is an upstream that sends one chat chunk, then waits for release.
func held(t *testing.T) (*httptest.Server, chan struct{}) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, release
}

func TestProxy_KeepAliveOnIdleStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	up, release := held(t)
	h := f.host("held", func(h *snapshot.Host) { h.BaseURL = up.URL })
	f.key(h, "k", "sk-up-held")
	f.bind(f.model("gpt-test", true), h, wire.ShapeOpenAI, "m")
	f.cfg.KeepAlive = 5 * time.Millisecond
	f.start()

	req, _ := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true}}`))
	req.Header.Set("Authorization", "Bearer "+relayKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	released := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == ": keep-alive" && !released {
			close(release)
			released = true
		}
	}
	got := strings.Join(lines, "\n")
	if !released || !strings.HasSuffix(got, "data: [DONE]\n") || !strings.Contains(got, `"content":"b"`) {
		t.Errorf("stream:\n%s", got)
	}
}

func TestProxy_IdleTimeoutBreaksTheStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Long enough that a loaded machine does not pause 50 ms between the
	// two events the stall lets through.
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
}

func TestProxy_HeadersToAndFromUpstream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.start()
	resp, _ := f.post("/v1/chat/completions", chatBody, map[string]string{
		"X-Api-Key": relayKey, "Cookie": "session=abc", "X-Relay-Debug": "1", "X-Goog-Api-Key": "caller-google", "OpenAI-Organization": "org-caller",
		"X-Custom-Trace": "drop-me", "X-Stainless-Trace": "keep-me", "Connection": "x-stainless-hop, close", "X-Stainless-Hop": "hop",
	})
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	up := f.requests()[0].Header
	for _, gone := range []string{"X-Api-Key", "Cookie", "X-Relay-Debug", "X-Goog-Api-Key", "Openai-Organization", "X-Stainless-Hop", "X-Custom-Trace"} {
		if up.Get(gone) != "" {
			t.Errorf("%s reached the upstream", gone)
		}
	}
	if up.Get("X-Stainless-Trace") != "keep-me" || up.Get("Authorization") != "Bearer "+openaiSecret {
		t.Errorf("upstream headers %v", up)
	}

	// An Anthropic caller without anthropic-version gets the default one
	// upstream, with the host key as x-api-key and not its own bearer.
	resp, body := f.post("/v1/messages", messagesBody, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	up = f.requests()[1].Header
	if up.Get("Anthropic-Version") != "2023-06-01" || up.Get("X-Api-Key") != anthropicSecret || up.Get("Authorization") != "" {
		t.Errorf("upstream headers %v", up)
	}
}

func TestProxy_SecretsStayOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	h := f.host("echo")
	f.key(h, "auth", "sk-up-fault-401-auth-secret")
	f.key(h, "busy", "sk-up-fault-500-busy-secret")
	f.bind(f.model("flaky", true), h, wire.ShapeOpenAI, "m")
	f.start()
	// post checks every response's headers and body; the fixture checks the log.
	f.post("/v1/chat/completions", chatBody, nil)
	f.post("/v1/chat/completions", `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"x"}]}`, nil)
	f.post("/v1/chat/completions", `{"model":"flaky","messages":[{"role":"user","content":"x"}]}`, nil)
	f.post("/v1/chat/completions", chatBody, map[string]string{testFault: "400"})
	f.post("/v1/messages", messagesBody, map[string]string{testFault: "404"})
	f.post("/v1/chat/completions", chatBody, map[string]string{"Authorization": "Bearer " + revokedKey})
	if logs := f.logs.String(); !strings.Contains(logs, "echo/auth: 401") || !strings.Contains(logs, "echo/busy: 500") {
		t.Errorf("the log lacks the attempts:\n%s", logs)
	}
}

func TestProxy_NonStreamBodyCutIsSurfacedNotRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	f.key(f.data.Hosts[0], "oa-2", "sk-up-openai-spare-key")
	f.start()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Authorization", "Bearer "+relayKey)
	req.Header.Set(testFault, "reset-1") // headers and half the body, then the connection drops
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("the caller got a complete-looking body: %q", b)
	}
	if resp.StatusCode != 200 || len(b) == 0 {
		t.Errorf("status %d, %d bytes", resp.StatusCode, len(b))
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
	if rec := f.rec.next(t); rec.ErrorKind != "upstream_stream_error" {
		t.Errorf("record %+v", rec)
	}
}

// The record says what came first. An upstream whose stream failed while
// the caller was there is a stream error, even when the caller leaves the
// moment it has read the error (SDKs close the stream on an error event);
// a whole answer is a success even when the caller leaves the moment it has
// read the end (SDKs close on [DONE]); a caller that had left before the
// upstream failed is a cancellation.
// The caller's leaving is its request context canceled at the flush that
// carries the mark, before the proxy decides what to record.
func TestProxy_StreamRecordSaysWhatCameFirst(t *testing.T) {
	t.Parallel()
	f := translatedFixture(t)
	srv := httptest.NewServer(leavingCaller(f.h))
	t.Cleanup(srv.Close)
	f.srv = srv

	type inbound struct {
		path, body, errMark, endMark string
		models                       []wire.Shape // the first is the caller's own shape: passthrough
	}
	for _, in := range []inbound{
		{"/v1/chat/completions", `{"model":"%s","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"error":`, "data: [DONE]",
			[]wire.Shape{wire.ShapeOpenAI, wire.ShapeAnthropic, wire.ShapeGemini, wire.ShapeOpenAIResponses}},
		{"/v1/messages", `{"model":"%s","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "event: error", "event: message_stop",
			[]wire.Shape{wire.ShapeAnthropic, wire.ShapeOpenAI, wire.ShapeGemini, wire.ShapeOpenAIResponses}},
		{"/v1/responses", `{"model":"%s","stream":true,"input":"hi"}`, "event: error", "event: response.completed",
			[]wire.Shape{wire.ShapeOpenAIResponses, wire.ShapeOpenAI, wire.ShapeAnthropic, wire.ShapeGemini}},
	} {
		for _, m := range in.models {
			body := fmt.Sprintf(in.body, m)
			_, got := f.post(in.path, body, map[string]string{leaveHeader: in.endMark})
			if !strings.Contains(got, in.endMark) {
				t.Fatalf("%s %s: no end:\n%s", in.path, m, got)
			}
			if rec := f.rec.next(t); rec.ErrorKind != "" || rec.Status != 200 {
				t.Errorf("%s %s, caller left after the end: record %d %s, want 200 and no error", in.path, m, rec.Status, rec.ErrorKind)
			}
			_, got = f.post(in.path, body, map[string]string{testFault: "midstream-3", leaveHeader: in.errMark})
			if !strings.Contains(got, in.errMark) {
				t.Fatalf("%s %s: no error event:\n%s", in.path, m, got)
			}
			if rec := f.rec.next(t); rec.ErrorKind != "upstream_stream_error" || rec.Status != 200 {
				t.Errorf("%s %s, caller left after the error: record %d %s, want 200 upstream_stream_error", in.path, m, rec.Status, rec.ErrorKind)
			}
			// Gone once the headers are out, before the upstream's error.
			f.post(in.path, body, map[string]string{testFault: "midstream-3", leaveHeader: leaveAtOnce})
			if rec := f.rec.next(t); rec.ErrorKind != "client_canceled" || rec.Status != 499 {
				t.Errorf("%s %s, caller left first: record %d %s, want 499 client_canceled", in.path, m, rec.Status, rec.ErrorKind)
			}
		}
	}
}

// leaveHeader names the mark after which leavingCaller's caller leaves;
// leaveAtOnce, for the first flush (the response headers).
const (
	leaveHeader = "X-Test-Leave-After"
	leaveAtOnce = "*"
)

// leavingCaller serves h to a caller that goes away (its request context is
// canceled) as soon as a flushed response holds the text of the request's
// leaveHeader, or at the first flush for leaveAtOnce. The connection stays open, so the test still reads what the
// proxy went on to write.
func leavingCaller(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mark := r.Header.Get(leaveHeader)
		if mark == "" {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		lw := &leavingWriter{ResponseWriter: w, mark: mark, seen: mark == leaveAtOnce, leave: cancel}
		h.ServeHTTP(lw, r.WithContext(ctx))
	})
}

// leavingWriter is called under the proxy's stream writer lock, or from the
// handler alone before the stream begins.
type leavingWriter struct {
	http.ResponseWriter
	mark  string
	seen  bool
	leave context.CancelFunc
}

func (w *leavingWriter) Write(p []byte) (int, error) {
	w.seen = w.seen || strings.Contains(string(p), w.mark)
	return w.ResponseWriter.Write(p)
}

func (w *leavingWriter) Flush() {
	w.ResponseWriter.(http.Flusher).Flush()
	if w.seen {
		w.leave()
	}
}
