package keypool

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/wire"
)

// Class is what one upstream outcome says failed. The proxy acts on it
// (answer, pass the error back, try the next key or binding) and reports
// the Result that comes with it to the breakers. docs/errors.md has the
// table.
type Class uint8

// Classes.
const (
	// ClassSuccess: the upstream answered.
	ClassSuccess Class = iota + 1
	// ClassRequest: request-level, the caller's own 4xx: passed back
	// unchanged, holds nothing.
	ClassRequest
	// ClassCaller: caller-level, the caller canceled or went away first:
	// never counted.
	ClassCaller
	// ClassKey: key-level (a 401/403, quota exhausted, host unreachable):
	// the next key is tried. Quota and an unreachable host hold the host
	// key for every model; a 401/403 holds (host key, upstream model) until
	// a second model is refused with the key (Result.Scope says which).
	ClassKey
	// ClassModel: model-level (5xx, 529, a per-model 429, model not found,
	// a reset or timeout before the answer): holds (host key, upstream
	// model); the next key is tried.
	ClassModel
	// ClassAfterFirstByte: the answer broke after it began (a mid-stream
	// reset or stall): the caller sees the error, no other key is tried,
	// and it counts as a model-level failure at most, never a key-level one.
	ClassAfterFirstByte
)

// String names the class for the log and the docs.
func (c Class) String() string {
	switch c {
	case ClassSuccess:
		return "success"
	case ClassRequest:
		return "request"
	case ClassCaller:
		return "caller"
	case ClassKey:
		return "key"
	case ClassModel:
		return "model"
	case ClassAfterFirstByte:
		return "after_first_byte"
	}
	return "unknown"
}

// Upstream is how one attempt ended, as Classify reads it.
type Upstream struct {
	Shape      wire.Shape    // the binding's shape: whose error bodies these are
	Status     int           // the HTTP status; 0 when no response came
	Body       []byte        // the error body of a status >= 400 (its first 64 KiB do)
	RetryAfter time.Duration // the upstream's retry hint, from its headers
	Err        error         // the transport error when Status is 0
	Reason     string        // what to call the failure; "" names the status
	CallerGone bool          // the caller went away first
	// AfterFirstByte: the failure came after the answer began.
	AfterFirstByte bool
}

// Classify says what an upstream outcome holds. It is the one place that
// reads statuses and provider error bodies for that.
func Classify(u Upstream) (Class, Result) {
	reason := u.Reason
	if reason == "" && u.Status != 0 {
		reason = strconv.Itoa(u.Status)
	}
	fail := func(c Class, o Outcome, s Scope, why string) (Class, Result) {
		return c, Result{Outcome: o, Scope: s, Reason: why}
	}
	switch s := u.Status; {
	case u.CallerGone:
		return ClassCaller, Result{Outcome: OutcomeNeutral}
	case u.AfterFirstByte:
		return network(fail(ClassAfterFirstByte, OutcomeFailure, ScopeModel, reason))
	case s == 0 && dialFailure(u.Err):
		return network(fail(ClassKey, OutcomeFailure, ScopeKey, reason))
	case s == 0:
		return network(fail(ClassModel, OutcomeFailure, ScopeModel, reason))
	case s >= 200 && s < 300:
		return ClassSuccess, Result{Outcome: OutcomeSuccess}
	case s < 400:
		return ClassRequest, Result{Outcome: OutcomeSuccess}
	}
	e := readError(u.Body)
	switch s := u.Status; {
	case e.invalidKey():
		return fail(ClassKey, OutcomeAuth, ScopeKey, reason)
	case s == 401 || s == 403:
		// The key may be good for the host's other models: the breakers
		// hold the key itself once a second model is refused with it.
		return fail(ClassKey, OutcomeAuth, ScopeModel, reason)
	case s == 402 || e.quota():
		return fail(ClassKey, OutcomeQuota, ScopeKey, reason+e.quotaReason())
	case s == 429:
		c, r := fail(ClassModel, OutcomeRateLimited, ScopeModel, reason)
		r.RetryAfter = u.RetryAfter
		return c, r
	case s == 404 && e.modelNotFound():
		return fail(ClassModel, OutcomeFailure, ScopeModel, "404 model not found")
	case s == 408 || s >= 500:
		c, r := fail(ClassModel, OutcomeFailure, ScopeModel, reason)
		r.Evidence = EvidenceServer
		return c, r
	}
	return ClassRequest, Result{Outcome: OutcomeSuccess}
}

// network marks a failure as a network one: it opens its breaker only
// after BreakerConfig.NetworkFailures in a row.
func network(c Class, r Result) (Class, Result) {
	r.Evidence = EvidenceNetwork
	return c, r
}

// providerError is what Classify reads of an error body, in every
// provider's shape: OpenAI {"error":{"type","code","message"}}, Anthropic
// {"type":"error","error":{"type","message"}}, Gemini
// {"error":{"status","message","details":[{"reason"}]}}, and the flat
// {"error":"…"} or {"message":"…"} of Ollama and vLLM.
type providerError struct {
	typ, code, status, message string
	body                       []byte
}

func readError(body []byte) providerError {
	str := func(path ...string) string {
		v, ok := wire.Get(body, path...)
		if !ok {
			return ""
		}
		s, _ := wire.Str(v)
		return string(s)
	}
	e := providerError{
		typ: str("error", "type"), code: str("error", "code"), status: str("error", "status"),
		message: str("error", "message"), body: body,
	}
	if e.message == "" {
		e.message = str("error")
	}
	if e.message == "" {
		e.message = str("message")
	}
	return e
}

// invalidKey: Gemini answers an invalid key with 400 API_KEY_INVALID.
func (e providerError) invalidKey() bool {
	switch {
	case e.status == "INVALID_ARGUMENT" && bytes.Contains(e.body, []byte(`"API_KEY_INVALID"`)):
		return true
	case strings.HasPrefix(e.message, "The security token included in the request is"):
		// Bedrock's UnrecognizedClientException (an unknown access key) and
		// ExpiredTokenException (an expired session token): no model
		// will take this key. Its AccessDeniedException is per model.
		return true
	}
	return false
}

// quota: the key's account is out of credit, whatever the model.
// Gemini's RESOURCE_EXHAUSTED is not here: its quotas are per project and
// model, and it is held as a per-model 429.
func (e providerError) quota() bool {
	switch {
	case e.typ == "insufficient_quota" || e.code == "insufficient_quota": // OpenAI 429
		return true
	case e.typ == "billing_error": // Anthropic 402/400
		return true
	}
	return strings.Contains(e.message, "credit balance is too low") // Anthropic 400
}

// quotaReason names a quota refusal after its status: " insufficient_quota",
// " billing_error", " credit balance too low", or nothing.
func (e providerError) quotaReason() string {
	switch {
	case e.code == "insufficient_quota" || e.typ == "insufficient_quota":
		return " insufficient_quota"
	case e.typ == "billing_error":
		return " billing_error"
	case strings.Contains(e.message, "credit balance is too low"):
		return " credit balance too low"
	}
	return ""
}

// modelNotFound: a 404 about the model, not about an object the request
// names (a previous response, a file): OpenAI model_not_found, Anthropic
// not_found_error "model: …", Gemini NOT_FOUND "models/… is not found",
// Ollama and vLLM "model … not found" / "does not exist".
func (e providerError) modelNotFound() bool {
	if e.code == "model_not_found" {
		return true
	}
	if e.typ == "not_found_error" && strings.HasPrefix(e.message, "model:") {
		return true
	}
	m := strings.ToLower(e.message)
	return strings.Contains(m, "model") && (strings.Contains(m, "not found") || strings.Contains(m, "does not exist"))
}

// dialFailure reports whether err happened before the request reached the
// host: the name did not resolve, the connection was refused or timed out,
// the TLS handshake failed. Those hold the key (and so the host) for every
// model; a reset or a timeout after the request went out is the model's.
func dialFailure(err error) bool {
	if err == nil {
		return false
	}
	var (
		op     *net.OpError
		dns    *net.DNSError
		record tls.RecordHeaderError
		verify *tls.CertificateVerificationError
		auth   x509.UnknownAuthorityError
		name   x509.HostnameError
		cert   x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, &dns):
		return true
	case errors.As(err, &record), errors.As(err, &verify), errors.As(err, &auth), errors.As(err, &name), errors.As(err, &cert):
		return true
	}
	s := err.Error()
	return strings.Contains(s, "tls: ") || strings.Contains(s, "TLS handshake timeout")
}
