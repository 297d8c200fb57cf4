package guardhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/upstream"
)

// Call is what a webhook is asked: the text and who sent it.
type Call struct {
	// Stage is "input" (the request) or "output" (the answer).
	Stage   string
	Policy  string // the policy's slug
	Project string // the caller's project id
	Model   string // the model the caller asked for
	Texts   []string
}

// body is the webhook's request, as docs/guardrails.md describes it.
type body struct {
	Guardrail string   `json:"guardrail"`
	Stage     string   `json:"stage"`
	Policy    string   `json:"policy,omitempty"`
	Project   string   `json:"project,omitempty"`
	Model     string   `json:"model,omitempty"`
	Texts     []string `json:"texts"`
}

// answer is the webhook's response: {"verdict": "allow" | "block"}.
type answer struct {
	Verdict string `json:"verdict"`
}

// maxAnswerBytes bounds what is read of a webhook's answer.
const maxAnswerBytes = 64 << 10

// Failures, as a Finding's Failure names them.
const (
	FailTimeout     = "timeout"
	FailBusy        = "busy"
	FailUnreachable = "unreachable"
	FailStatus      = "status"
	FailUnreadable  = "unreadable"
)

// Caller calls webhooks through one transport.
type Caller struct {
	client upstream.Client
}

// New returns a Caller sending through c (in Relay, the upstreams'
// guarded transport).
func New(c upstream.Client) *Caller {
	return &Caller{client: c}
}

// Check asks the webhook of rule r about call. It returns the finding
// when there is one to record — the webhook said block (with the rule's
// action: block or log), or the call failed (Failure set; Action block
// when the rule fails closed, log when it fails open) — and nil when the
// webhook allowed the text. ctx is the request's: a caller gone cancels
// the call.
func (c *Caller) Check(ctx context.Context, r *guardrail.Rule, call *Call) *guardrail.Finding {
	w := r.Webhook
	failed := func(why string) *guardrail.Finding {
		f := &guardrail.Finding{Rule: r.Name, Kind: guardrail.WebhookKind, Action: guardrail.ActionBlock, Failure: why}
		if w.FailOpen {
			f.Action = guardrail.ActionLog
		}
		return f
	}
	if !w.Acquire() {
		return failed(FailBusy)
	}
	defer w.Release()
	verdict, why := c.ask(ctx, r, call)
	switch {
	case why != "":
		return failed(why)
	case verdict == "block":
		return &guardrail.Finding{Rule: r.Name, Kind: guardrail.WebhookKind, Action: r.Action}
	}
	return nil
}

func (c *Caller) ask(ctx context.Context, r *guardrail.Rule, call *Call) (verdict, failure string) {
	w := r.Webhook
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	var buf bytes.Buffer
	texts := call.Texts
	if texts == nil {
		texts = []string{}
	}
	if err := json.NewEncoder(&buf).Encode(&body{Guardrail: r.Name, Stage: call.Stage, Policy: call.Policy, Project: call.Project, Model: call.Model, Texts: texts}); err != nil {
		return "", FailUnreadable
	}
	req, err := http.NewRequestWithContext(upstream.Attempt(ctx, w.Timeout, nil), http.MethodPost, w.URL, bytes.NewReader(buf.Bytes()))
	if err != nil {
		return "", FailUnreachable
	}
	req.ContentLength = int64(buf.Len())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "relay-guardrail")
	resp, err := c.client.RoundTrip(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
			return "", FailTimeout
		}
		return "", FailUnreachable
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return "", FailTimeout
		}
		return "", FailUnreachable
	}
	if resp.StatusCode/100 != 2 {
		return "", FailStatus
	}
	var a answer
	if len(raw) > maxAnswerBytes || json.Unmarshal(raw, &a) != nil {
		return "", FailUnreadable
	}
	switch a.Verdict {
	case "allow", "block":
		return a.Verdict, ""
	}
	return "", FailUnreadable
}
