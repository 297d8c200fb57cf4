package proxy

import (
	"bytes"
	"net/http"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Payload capture. When the caller's policy has CapturePayloads on and the
// handler has a Capturer, the request body as the caller sent it and the
// bytes Relay sent back (a stream's events as they went out, an error body
// too) are handed to the Capturer once the request has ended, each cut at
// the policy's CaptureMaxBytes. Headers are never captured, and the
// caller's relay key or the host key are replaced by "[redacted]" should
// a body hold them. With capture
// off nothing is copied: the response writer is not wrapped.

// DefaultCaptureMaxBytes caps a captured body when the policy sets no cap.
const DefaultCaptureMaxBytes = 64 << 10

// Capturer receives captured payloads. Capture must not block: an
// implementation hands the payload to a bounded queue and drops (and
// counts) when it is full. It owns the payload's slices.
type Capturer interface {
	Capture(event.Payload)
}

// captureWriter keeps a copy of what goes to the caller, up to limit.
type captureWriter struct {
	http.ResponseWriter
	buf       []byte
	limit     int
	truncated bool
}

func (c *captureWriter) Write(p []byte) (int, error) {
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
		c.truncated = c.truncated || len(p) > room
	} else if len(p) > 0 {
		c.truncated = true
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// startCapture wraps the response writer when the policy captures.
func (rq *request) startCapture() {
	p := rq.caller.Policy
	if p == nil || !p.CapturePayloads || rq.h.capturer == nil {
		return
	}
	limit := p.CaptureMaxBytes
	if limit <= 0 {
		limit = DefaultCaptureMaxBytes
	}
	rq.cw = &captureWriter{ResponseWriter: rq.w, limit: limit}
	rq.w = rq.cw
}

// capture hands the captured payload over.
func (rq *request) capture() {
	cw := rq.cw
	body := rq.body.Bytes()
	if rq.form.spilled != nil {
		body = rq.form.head
	}
	req := make([]byte, min(len(body), cw.limit))
	copy(req, body)
	// A credential a caller pasted into its body, or a host key an
	// upstream echoed, is not stored.
	if k := wire.PresentedKey(rq.r.Header); k != "" && bytes.Contains(body, []byte(k)) {
		req = bytes.ReplaceAll(body, []byte(k), []byte("[redacted]"))
		req = req[:min(len(req), cw.limit)]
	}
	if rq.attempt.key != nil {
		if sec := rq.attempt.key.Secret.Reveal(); sec != "" && bytes.Contains(cw.buf, []byte(sec)) {
			cw.buf = bytes.ReplaceAll(cw.buf, []byte(sec), []byte("[redacted]"))
		}
	}
	p := event.Payload{
		RequestID: rq.id, ClientRequestID: rq.client, At: rq.at, ProjectID: rq.caller.ProjectID,
		PolicyID: rq.caller.Policy.ID, Model: rq.scan.Model, Status: rq.status,
		Request: req, Response: cw.buf, Truncated: cw.truncated || len(body) > cw.limit,
	}
	if m := rq.plan.Model; m != nil {
		p.Model = m.Name
	}
	if rq.caller.Kind == snapshot.CredentialInferenceToken {
		p.InferenceTokenID = rq.caller.CredentialID
	} else {
		p.RelayKeyID = rq.caller.CredentialID
	}
	rq.h.capturer.Capture(p)
}
