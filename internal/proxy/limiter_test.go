package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/wire"
)

type limiter struct {
	err  error
	seen chan string // what Admit saw: the Admission is valid only during the call
	done chan wire.Usage
}

func (l *limiter) Admit(_ context.Context, a *admission.Admission) (func(wire.Usage), error) {
	l.seen <- fmt.Sprintf("%s %s %d bindings=%d stream=%v", a.Model.Name, a.Caller.Policy.Slug, a.BodyBytes, len(a.Plan.Bindings), a.Stream)
	if l.err != nil {
		return nil, l.err
	}
	return func(u wire.Usage) { l.done <- u }, nil
}

func TestProxy_LimiterHook(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"admits", nil, 200, ""},
		{"rate limited", &wire.Error{Kind: wire.ErrRateLimited, Msg: "Slow down.", RetryAfter: 2500 * time.Millisecond}, 429, "rate_limited"},
		{"broken", errors.New("redis: connection refused"), 503, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.standard()
			l := &limiter{err: tt.err, seen: make(chan string, 1), done: make(chan wire.Usage, 1)}
			f.cfg.Limiter = l
			f.start()
			resp, body := f.post("/v1/chat/completions", chatBody, nil)
			if resp.StatusCode != tt.status {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if got, want := <-l.seen, fmt.Sprintf("gpt-test default %d bindings=1 stream=false", len(chatBody)); got != want {
				t.Errorf("admission %q, want %q", got, want)
			}
			if tt.err != nil {
				if e := decodeError(t, body); e.Error.Code != tt.code {
					t.Errorf("body %s", body)
				}
				if tt.status == 429 && resp.Header.Get("Retry-After") != "3" {
					t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
				}
				if len(f.requests()) != 0 {
					t.Error("a refused request reached the upstream")
				}
				return
			}
			rec := f.rec.next(t)
			if u := <-l.done; u != rec.Usage || u.Input == 0 {
				t.Errorf("settled %+v, recorded %+v", u, rec.Usage)
			}
		})
	}
}
