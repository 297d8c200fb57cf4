package proxy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/event"
)

// capturer keeps the payloads the proxy hands over.
type capturer struct{ ch chan event.Payload }

func (c *capturer) Capture(p event.Payload) {
	select {
	case c.ch <- p:
	default:
	}
}

func captureFixture(t *testing.T, on bool, maxBytes int) (*fixture, *capturer) {
	f := newFixture(t)
	c := &capturer{ch: make(chan event.Payload, 8)}
	f.cfg.Capturer = c
	f.policy.CapturePayloads, f.policy.CaptureMaxBytes = on, maxBytes
	f.standard()
	f.start()
	return f, c
}

func TestProxy_CapturesPayloadsWhenThePolicySaysSo(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		f, c := captureFixture(t, true, 0)
		body := `{"model":"gpt-test","messages":[{"role":"user","content":"capture this prompt"}]}`
		if stream {
			body = `{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"capture this prompt"}]}`
		}
		resp, out := f.post("/v1/chat/completions", body, map[string]string{"X-Request-ID": "req-capture-1"})
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		rec := f.rec.next(t)
		select {
		case p := <-c.ch:
			if p.RequestID != resp.Header.Get("X-Relay-Request-Id") || p.RequestID != rec.RequestID || p.ClientRequestID != "req-capture-1" || string(p.Request) != body || string(p.Response) != out || p.Truncated ||
				p.Status != 200 || p.Model != "gpt-test" || p.ProjectID != rec.ProjectID || p.RelayKeyID != rec.CredentialID || p.PolicyID != f.policy.ID {
				t.Errorf("stream=%v: capture %+v\nwant request %q response %q", stream, p, body, out)
			}
			for _, s := range f.secrets {
				if strings.Contains(string(p.Request)+string(p.Response), s) {
					t.Errorf("the capture holds the secret %q", s)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("stream=%v: nothing captured", stream)
		}
	}
}

func TestProxy_CaptureIsCappedAndOffByDefault(t *testing.T) {
	t.Parallel()
	f, c := captureFixture(t, true, 1024)
	long := strings.Repeat("x", 3000)
	body := `{"model":"gpt-test","messages":[{"role":"user","content":"` + long + `"}]}`
	if resp, out := f.post("/v1/chat/completions", body, nil); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	f.rec.next(t)
	p := <-c.ch
	if len(p.Request) != 1024 || string(p.Request) != body[:1024] || !p.Truncated {
		t.Errorf("capped capture: %d bytes, truncated=%v", len(p.Request), p.Truncated)
	}

	off, c2 := captureFixture(t, false, 0)
	if resp, out := off.post("/v1/chat/completions", `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`, nil); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	off.rec.next(t) // the request is over: a capture would have been handed over before the record
	select {
	case p := <-c2.ch:
		t.Errorf("captured with capture off: %+v", p)
	default:
	}
}

// A relay key pasted into a body is not stored.
func TestProxy_CaptureRedactsTheRelayKey(t *testing.T) {
	t.Parallel()
	f, c := captureFixture(t, true, 0)
	body := `{"model":"gpt-test","messages":[{"role":"user","content":"my key is ` + relayKey + `"}]}`
	if resp, out := f.post("/v1/chat/completions", body, nil); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	f.rec.next(t)
	p := <-c.ch
	if strings.Contains(string(p.Request), relayKey) || !strings.Contains(string(p.Request), "my key is [redacted]") {
		t.Errorf("captured request %q", p.Request)
	}
}

// TestProxy_CaptureIsKeyedByRelaysRequestID: two requests that send the same
// X-Request-ID (two tenants may) get captures under two Relay request ids,
// the caller's id kept as an attribute of each.
func TestProxy_CaptureIsKeyedByRelaysRequestID(t *testing.T) {
	t.Parallel()
	f, c := captureFixture(t, true, 0)
	ids := map[string]bool{}
	for i := range 2 {
		resp, out := f.post("/v1/chat/completions", `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`,
			map[string]string{"X-Request-ID": "victims-id"})
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		rec := f.rec.next(t)
		p := <-c.ch
		if p.RequestID == "victims-id" || p.RequestID != resp.Header.Get("X-Relay-Request-Id") || p.RequestID != rec.RequestID ||
			p.ClientRequestID != "victims-id" || rec.ClientRequestID != "victims-id" {
			t.Errorf("request %d: capture id %q (client %q), record %q, header %q", i, p.RequestID, p.ClientRequestID, rec.RequestID, resp.Header.Get("X-Relay-Request-Id"))
		}
		ids[p.RequestID] = true
	}
	if len(ids) != 2 {
		t.Errorf("two requests, capture ids %v", ids)
	}
}
