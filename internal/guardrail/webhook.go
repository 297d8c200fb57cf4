package guardrail

import (
	"fmt"
	"net/url"
	"sync/atomic"
	"time"
)

// WebhookSettings make a rule an external guardrail: the operator's own
// classifier, called over HTTP with the text of the request or the answer
// (package guardhook does the calling; this package keeps it pure data).
type WebhookSettings struct {
	// URL is an absolute http or https URL. Relay dials it through the
	// same egress guard as its upstreams.
	URL string `json:"url"`
	// TimeoutMS bounds one call (0: DefaultWebhookTimeout).
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Fail is what a call that fails — a timeout, a refused connection, a
	// status other than 2xx, an answer that cannot be read, the rule's
	// concurrency cap reached — does: "closed" (the default) blocks,
	// "open" lets the text through (and counts the failure).
	Fail string `json:"fail,omitempty"`
	// MaxConcurrent caps the calls of this rule one pod has in flight
	// (0: DefaultWebhookConcurrency); a call over the cap fails at once.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
}

// Bounds and defaults of WebhookSettings.
const (
	DefaultWebhookTimeout     = time.Second
	MaxWebhookTimeout         = 10 * time.Second
	DefaultWebhookConcurrency = 16
	MaxWebhookConcurrency     = 1024
	maxWebhookURLBytes        = 2048
)

// Fail modes of a webhook.
const (
	FailClosed = "closed"
	FailOpen   = "open"
)

// Webhook is a compiled external guardrail. The snapshot holds one per
// rule, so its slots are the rule's concurrency cap in this pod.
type Webhook struct {
	URL           string
	Timeout       time.Duration
	FailOpen      bool
	MaxConcurrent int
	inflight      atomic.Int64
}

// Acquire takes one of the webhook's MaxConcurrent slots; false when all
// are taken (nothing taken then).
func (w *Webhook) Acquire() bool {
	if w.inflight.Add(1) > int64(w.MaxConcurrent) {
		w.inflight.Add(-1)
		return false
	}
	return true
}

// Release gives back a slot Acquire took.
func (w *Webhook) Release() { w.inflight.Add(-1) }

// InFlight is how many calls hold a slot now.
func (w *Webhook) InFlight() int64 { return w.inflight.Load() }

func (w *WebhookSettings) validate(i int, a Action) error {
	u, err := url.Parse(w.URL)
	if err != nil || len(w.URL) > maxWebhookURLBytes || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("rules[%d].webhook.url must be an absolute http or https URL without credentials, at most %d bytes", i, maxWebhookURLBytes)
	}
	if w.TimeoutMS < 0 || time.Duration(w.TimeoutMS)*time.Millisecond > MaxWebhookTimeout {
		return fmt.Errorf("rules[%d].webhook.timeout_ms must be 0 to %d", i, MaxWebhookTimeout.Milliseconds())
	}
	switch w.Fail {
	case "", FailClosed, FailOpen:
	default:
		return fmt.Errorf("rules[%d].webhook.fail must be open or closed", i)
	}
	if w.MaxConcurrent < 0 || w.MaxConcurrent > MaxWebhookConcurrency {
		return fmt.Errorf("rules[%d].webhook.max_concurrent must be 0 to %d", i, MaxWebhookConcurrency)
	}
	if a == ActionRedact {
		return fmt.Errorf("rules[%d]: a webhook rule blocks or logs; it cannot redact", i)
	}
	return nil
}

func (w *WebhookSettings) compile() *Webhook {
	c := &Webhook{URL: w.URL, FailOpen: w.Fail == FailOpen, Timeout: DefaultWebhookTimeout, MaxConcurrent: DefaultWebhookConcurrency}
	if w.TimeoutMS > 0 {
		c.Timeout = time.Duration(w.TimeoutMS) * time.Millisecond
	}
	if w.MaxConcurrent > 0 {
		c.MaxConcurrent = w.MaxConcurrent
	}
	return c
}

// Hooks are the webhook rules among rs.
func Hooks(rs []Rule) []Rule {
	var out []Rule
	for _, r := range rs {
		if r.Webhook != nil {
			out = append(out, r)
		}
	}
	return out
}

// HoldsWhole reports whether a streamed answer must be held whole before
// any of it reaches the caller: an output webhook rule blocks, and it
// judges the answer only once it has all of it.
func (p *Policy) HoldsWhole() bool {
	for _, r := range p.Output {
		if r.Webhook != nil && r.Action == ActionBlock {
			return true
		}
	}
	return false
}

// Webhook is the kind of a webhook rule's findings.
const WebhookKind Kind = "webhook"
