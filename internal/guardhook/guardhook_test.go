package guardhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/guardhook"
	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/upstream"
)

// rule compiles one webhook rule of action a against url.
func rule(t *testing.T, a guardrail.Action, w guardrail.WebhookSettings) *guardrail.Rule {
	t.Helper()
	s := guardrail.Settings{Rules: []guardrail.RuleSettings{{Name: "classifier", Stage: guardrail.StageBoth, Action: a, Webhook: &w}}}
	if err := s.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	p, err := s.Compile()
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return &p.Input[0]
}

func call() *guardhook.Call {
	return &guardhook.Call{Stage: "input", Policy: "p", Project: "proj", Model: "m", Texts: []string{"hello", "card 4111 1111 1111 1111"}}
}

func TestCheck_Verdicts(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &b); err != nil || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad", 400)
			return
		}
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		switch r.URL.Path {
		case "/block":
			io.WriteString(w, `{"verdict":"block"}`)
		case "/allow":
			io.WriteString(w, `{"verdict":"allow"}`)
		case "/500":
			http.Error(w, "down", 500)
		default:
			io.WriteString(w, `{"verdict":"maybe"}`)
		}
	}))
	t.Cleanup(srv.Close)
	c := guardhook.New(upstream.NewTransport())
	ctx := context.Background()

	if f := c.Check(ctx, rule(t, guardrail.ActionBlock, guardrail.WebhookSettings{URL: srv.URL + "/allow"}), call()); f != nil {
		t.Fatalf("allow: finding %+v", f)
	}
	f := c.Check(ctx, rule(t, guardrail.ActionBlock, guardrail.WebhookSettings{URL: srv.URL + "/block"}), call())
	if f == nil || f.Action != guardrail.ActionBlock || f.Rule != "classifier" || f.Kind != guardrail.WebhookKind || f.Failure != "" {
		t.Fatalf("block: finding %+v", f)
	}
	f = c.Check(ctx, rule(t, guardrail.ActionLog, guardrail.WebhookSettings{URL: srv.URL + "/block"}), call())
	if f == nil || f.Action != guardrail.ActionLog {
		t.Fatalf("block under a log rule: finding %+v", f)
	}
	f = c.Check(ctx, rule(t, guardrail.ActionBlock, guardrail.WebhookSettings{URL: srv.URL + "/500"}), call())
	if f == nil || f.Action != guardrail.ActionBlock || f.Failure != guardhook.FailStatus {
		t.Fatalf("500, fail closed: finding %+v", f)
	}
	f = c.Check(ctx, rule(t, guardrail.ActionBlock, guardrail.WebhookSettings{URL: srv.URL + "/odd", Fail: "open"}), call())
	if f == nil || f.Action != guardrail.ActionLog || f.Failure != guardhook.FailUnreadable {
		t.Fatalf("unknown verdict, fail open: finding %+v", f)
	}
	mu.Lock()
	b := got[0]
	mu.Unlock()
	if b["guardrail"] != "classifier" || b["stage"] != "input" || b["project"] != "proj" || b["model"] != "m" {
		t.Fatalf("webhook got %v", b)
	}
	if ts, _ := b["texts"].([]any); len(ts) != 2 || ts[1] != "card 4111 1111 1111 1111" {
		t.Fatalf("webhook texts %v", b["texts"])
	}
}

// stuck is a webhook that answers only once the test ends; entered gets a
// value as each call arrives.
func stuck(t *testing.T) (url string, entered chan struct{}) {
	t.Helper()
	entered = make(chan struct{}, 8)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, `{"verdict":"allow"}`)
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL, entered
}

func TestCheck_TimeoutFailsClosed(t *testing.T) {
	t.Parallel()
	url, _ := stuck(t)
	c := guardhook.New(upstream.NewTransport())
	f := c.Check(context.Background(), rule(t, guardrail.ActionBlock, guardrail.WebhookSettings{URL: url, TimeoutMS: 50}), call())
	if f == nil || f.Action != guardrail.ActionBlock || f.Failure != guardhook.FailTimeout {
		t.Fatalf("finding %+v, want a block for a timeout", f)
	}
}

func TestCheck_TimeoutFailsOpen(t *testing.T) {
	t.Parallel()
	url, _ := stuck(t)
	c := guardhook.New(upstream.NewTransport())
	f := c.Check(context.Background(), rule(t, guardrail.ActionBlock, guardrail.WebhookSettings{URL: url, TimeoutMS: 50, Fail: "open"}), call())
	if f == nil || f.Action != guardrail.ActionLog || f.Failure != guardhook.FailTimeout {
		t.Fatalf("finding %+v, want a logged timeout", f)
	}
}

func TestCheck_ConcurrencyCap(t *testing.T) {
	t.Parallel()
	url, entered := stuck(t)
	c := guardhook.New(upstream.NewTransport())
	r := rule(t, guardrail.ActionBlock, guardrail.WebhookSettings{URL: url, TimeoutMS: 10000, MaxConcurrent: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *guardrail.Finding, 1)
	go func() { done <- c.Check(ctx, r, call()) }()
	<-entered // the first call holds the rule's one slot
	if n := r.Webhook.InFlight(); n != 1 {
		t.Fatalf("in flight %d, want 1", n)
	}
	f := c.Check(context.Background(), r, call())
	if f == nil || f.Failure != guardhook.FailBusy || f.Action != guardrail.ActionBlock {
		t.Fatalf("second call: finding %+v, want busy and blocked", f)
	}
	// Another rule of the same webhook has its own cap.
	other := rule(t, guardrail.ActionBlock, guardrail.WebhookSettings{URL: url, TimeoutMS: 10000, MaxConcurrent: 1})
	go func() { _ = c.Check(ctx, other, call()) }()
	<-entered
	cancel()
	if f := <-done; f == nil || f.Failure != guardhook.FailUnreachable {
		t.Fatalf("canceled first call: finding %+v", f)
	}
	if n := r.Webhook.InFlight(); n != 0 {
		t.Fatalf("in flight %d after the call, want 0", n)
	}
}

func TestCheck_EgressGuardRefuses(t *testing.T) {
	t.Parallel()
	var called atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called.Store(true) }))
	t.Cleanup(srv.Close)
	g, err := egress.New([]string{"10.0.0.0/8"}) // the loopback test server is not listed
	if err != nil {
		t.Fatal(err)
	}
	c := guardhook.New(upstream.NewGuardedTransport(g))
	f := c.Check(context.Background(), rule(t, guardrail.ActionBlock, guardrail.WebhookSettings{URL: srv.URL}), call())
	if f == nil || f.Failure != guardhook.FailUnreachable || called.Load() {
		t.Fatalf("finding %+v, called %v: want the dial refused", f, called.Load())
	}
}

func TestSettings_WebhookValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		w    guardrail.WebhookSettings
		a    guardrail.Action
		want string
	}{
		{guardrail.WebhookSettings{URL: "ftp://x"}, guardrail.ActionBlock, "webhook.url"},
		{guardrail.WebhookSettings{URL: "http://u:p@x/"}, guardrail.ActionBlock, "webhook.url"},
		{guardrail.WebhookSettings{URL: "/relative"}, guardrail.ActionBlock, "webhook.url"},
		{guardrail.WebhookSettings{URL: "http://x", TimeoutMS: 20000}, guardrail.ActionBlock, "timeout_ms"},
		{guardrail.WebhookSettings{URL: "http://x", Fail: "maybe"}, guardrail.ActionBlock, "fail"},
		{guardrail.WebhookSettings{URL: "http://x", MaxConcurrent: -1}, guardrail.ActionBlock, "max_concurrent"},
		{guardrail.WebhookSettings{URL: "http://x"}, guardrail.ActionRedact, "cannot redact"},
	} {
		s := guardrail.Settings{Rules: []guardrail.RuleSettings{{Name: "h", Stage: guardrail.StageInput, Action: tc.a, Webhook: &tc.w}}}
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.w, err, tc.want)
		}
	}
}
