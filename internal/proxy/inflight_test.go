package proxy_test

import (
	"context"
	"sync"
	"testing"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/wire"
)

// gate holds every request in Admit until released.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Admit(ctx context.Context, _ *admission.Admission) (func(wire.Usage), error) {
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return nil, nil
}

func TestProxy_MaxInflightSheds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.standard()
	g := &gate{entered: make(chan struct{}, 2), release: make(chan struct{})}
	f.cfg.Limiter = g
	f.cfg.MaxInflight = 2
	f.start()

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if resp, body := f.post("/v1/chat/completions", chatBody, nil); resp.StatusCode != 200 {
				t.Errorf("held request: %d %s", resp.StatusCode, body)
			}
		})
	}
	<-g.entered
	<-g.entered
	resp, body := f.post("/v1/messages", `{"model":"claude-test","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if e := decodeError(t, body); resp.StatusCode != 429 || e.Type != "error" || e.Error.Type != "rate_limit_error" || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("over the cap: %d %s (Retry-After %q)", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	close(g.release)
	wg.Wait()
	if resp, body := f.post("/v1/chat/completions", chatBody, nil); resp.StatusCode != 200 {
		t.Fatalf("after the others finished: %d %s", resp.StatusCode, body)
	}
}
