package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/relay-llm/relay/internal/guardrail"
)

// classifier is an operator's webhook guardrail: it blocks any text that
// holds word, and keeps the texts it was asked about.
type classifier struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string // each call's texts, joined
}

func newClassifier(t *testing.T, word string) *classifier {
	t.Helper()
	c := &classifier{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Texts []string `json:"texts"`
		}
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &b); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		all := strings.Join(b.Texts, "\n")
		c.mu.Lock()
		c.seen = append(c.seen, all)
		c.mu.Unlock()
		if strings.Contains(all, word) {
			io.WriteString(w, `{"verdict":"block"}`)
			return
		}
		io.WriteString(w, `{"verdict":"allow"}`)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *classifier) calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// TestGuardrails_WebhookInputBlockInEveryShape: a request the webhook
// blocks is refused in the caller's shape, naming the guardrail and never
// the text, and nothing goes upstream; one it allows goes on.
func TestGuardrails_WebhookInputBlockInEveryShape(t *testing.T) {
	t.Parallel()
	for _, tc := range guardCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClassifier(t, "falcon")
			f := guardFixture(t, guardrail.RuleSettings{Name: "classifier", Stage: guardrail.StageInput, Action: guardrail.ActionBlock,
				Webhook: &guardrail.WebhookSettings{URL: c.srv.URL}})
			f.start()
			for _, stream := range []bool{false, true} {
				resp, body := f.post(tc.path, tc.body("tell me of project falcon", stream), nil)
				e := decodeError(t, body)
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error.Message, `guardrail "classifier" (its webhook said block)`) {
					t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, body)
				}
				if strings.Contains(body, "falcon") {
					t.Errorf("the refusal holds the text: %s", body)
				}
				if tc.path == "/v1/messages" && e.Type != "error" {
					t.Errorf("not Anthropic's shape: %s", body)
				} else if tc.path != "/v1/messages" && e.Error.Code != "guardrail_blocked" {
					t.Errorf("code %q: %s", e.Error.Code, body)
				}
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("upstream saw %d requests", n)
			}
			if calls := c.calls(); len(calls) != 2 || !strings.Contains(calls[0], "tell me of project falcon") {
				t.Errorf("webhook calls %q", calls)
			}
			if resp, body := f.post(tc.path, tc.body("tell me of project heron", false), nil); resp.StatusCode != http.StatusOK {
				t.Errorf("allowed: %d %s", resp.StatusCode, body)
			}
			if rec := f.rec.next(t); rec.ErrorKind != "guardrail_blocked" {
				t.Errorf("record error kind %q", rec.ErrorKind)
			}
		})
	}
}

// stuckWebhook answers only once the test is over.
func stuckWebhook(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, `{"verdict":"allow"}`)
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL
}

// TestGuardrails_WebhookTimeoutFailModes: a webhook that does not answer
// within its timeout blocks a rule that fails closed — request and answer,
// whole and streamed — and lets everything through a rule that fails open.
func TestGuardrails_WebhookTimeoutFailModes(t *testing.T) {
	t.Parallel()
	chat := guardCases()[0]
	for _, tc := range []struct {
		fail  string
		stage guardrail.Stage
	}{{"closed", guardrail.StageInput}, {"closed", guardrail.StageOutput}, {"open", guardrail.StageBoth}} {
		t.Run(tc.fail+"/"+string(tc.stage), func(t *testing.T) {
			t.Parallel()
			url := stuckWebhook(t)
			f := guardFixture(t, guardrail.RuleSettings{Name: "slow", Stage: tc.stage, Action: guardrail.ActionBlock,
				Webhook: &guardrail.WebhookSettings{URL: url, TimeoutMS: 50, Fail: tc.fail}})
			f.start()
			for _, stream := range []bool{false, true} {
				resp, body := f.post(chat.path, chat.body("hello there", stream), nil)
				if tc.fail == "open" {
					if resp.StatusCode != http.StatusOK || !strings.Contains(body, "hello") || strings.Contains(body, "guardrail") {
						t.Errorf("stream %v, open: %d %s", stream, resp.StatusCode, body)
					}
					continue
				}
				blocked := strings.Contains(body, `guardrail \"slow\" (its webhook failed: timeout)`) || strings.Contains(body, `guardrail "slow" (its webhook failed: timeout)`)
				if !blocked {
					t.Errorf("stream %v, closed: %d %s", stream, resp.StatusCode, body)
				}
				if tc.stage == guardrail.StageOutput && strings.Contains(body, "hello") {
					t.Errorf("stream %v: the unchecked answer reached the caller: %s", stream, body)
				}
			}
			if tc.stage == guardrail.StageInput && len(f.requests()) != 0 {
				t.Errorf("a request the webhook timed out on went upstream")
			}
		})
	}
}

// TestGuardrails_WebhookHoldsStreamWhole: with a blocking output webhook
// no byte of a streamed answer's text reaches the caller before the
// webhook has judged all of it, and the webhook gets the whole text once.
// (The mock's answers are shorter than the detectors' window;
// TestHold_WholeWindow holds a long one back whole.)
func TestGuardrails_WebhookHoldsStreamWhole(t *testing.T) {
	t.Parallel()
	for _, tc := range guardCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClassifier(t, "verboten")
			f := guardFixture(t, guardrail.RuleSettings{Name: "classifier", Stage: guardrail.StageOutput, Action: guardrail.ActionBlock,
				Webhook: &guardrail.WebhookSettings{URL: c.srv.URL}})
			f.start()
			text := "aardvark verboten"
			resp, body := f.post(tc.path, tc.body(text, true), nil)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `guardrail \"classifier\" (its webhook said block)`) {
				t.Fatalf("stream: %d %s", resp.StatusCode, body[max(0, len(body)-400):])
			}
			if strings.Contains(body, "aardvark") || strings.Contains(body, "Hello") {
				t.Errorf("the stream released text before the webhook judged it: %s", body)
			}
			calls := c.calls()
			if len(calls) != 1 || !strings.Contains(calls[0], "aardvark") || !strings.Contains(calls[0], "verboten") {
				t.Errorf("webhook calls %q, want the whole answer once", calls)
			}
			// An answer it allows comes through whole.
			resp, body = f.post(tc.path, tc.body("aardvark heron", true), nil)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "aardvark") || strings.Contains(body, "guardrail") {
				t.Errorf("allowed stream: %d %s", resp.StatusCode, body)
			}
		})
	}
}
