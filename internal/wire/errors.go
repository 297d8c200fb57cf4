package wire

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Relay's user-facing error kinds. Errorf wraps one with a message for the
// caller; Classify maps it to an HTTP status and a code. docs/errors.md
// lists them.
var (
	ErrMissingKey          = errors.New("missing relay key")
	ErrInvalidKey          = errors.New("invalid relay key")
	ErrMalformedRequest    = errors.New("malformed request")
	ErrShapeNotServed      = errors.New("shape not served")
	ErrUnsupportedFeature  = errors.New("unsupported feature")
	ErrForbidden           = errors.New("model not granted")
	ErrModelNotFound       = errors.New("model not found")
	ErrNotFound            = errors.New("not found")
	ErrMethodNotAllowed    = errors.New("method not allowed")
	ErrRequestTooLarge     = errors.New("request too large")
	ErrRateLimited         = errors.New("rate limited")
	ErrBudgetExceeded      = errors.New("budget exceeded")
	ErrOverloaded          = errors.New("overloaded")
	ErrUpstreamRateLimited = errors.New("upstream rate limited")
	ErrUpstream            = errors.New("upstream error")
	ErrNoUsableHostKey     = errors.New("no usable host key")
	ErrUnavailable         = errors.New("unavailable")
	ErrLimiterUnavailable  = errors.New("limiter unavailable")
	ErrUpstreamTimeout     = errors.New("upstream timeout")
	ErrHeadersTooLarge     = errors.New("request headers too large")
	ErrGuardrail           = errors.New("blocked by guardrail")
)

// ErrGuardrailCode is the code of ErrGuardrail, and the error kind a
// record of a stream a guardrail ended carries.
const ErrGuardrailCode = "guardrail_blocked"

// kinds is the one mapping from error kind to status and code. Read only.
var kinds = [...]struct {
	kind   error
	status int
	code   string
}{
	{ErrMissingKey, http.StatusUnauthorized, "missing_api_key"},
	{ErrInvalidKey, http.StatusUnauthorized, "invalid_api_key"},
	{ErrMalformedRequest, http.StatusBadRequest, "invalid_request"},
	{ErrShapeNotServed, http.StatusBadRequest, "shape_not_supported"},
	{ErrUnsupportedFeature, http.StatusBadRequest, "unsupported_feature"},
	{ErrForbidden, http.StatusForbidden, "model_not_granted"},
	{ErrModelNotFound, http.StatusNotFound, "model_not_found"},
	{ErrNotFound, http.StatusNotFound, "not_found"},
	{ErrMethodNotAllowed, http.StatusMethodNotAllowed, "method_not_allowed"},
	{ErrRequestTooLarge, http.StatusRequestEntityTooLarge, "request_too_large"},
	{ErrRateLimited, http.StatusTooManyRequests, "rate_limited"},
	{ErrBudgetExceeded, http.StatusTooManyRequests, "budget_exceeded"},
	{ErrOverloaded, http.StatusTooManyRequests, "overloaded"},
	{ErrUpstreamRateLimited, http.StatusTooManyRequests, "upstream_rate_limited"},
	{ErrUpstream, http.StatusBadGateway, "upstream_error"},
	{ErrNoUsableHostKey, http.StatusServiceUnavailable, "no_usable_host_key"},
	{ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
	{ErrLimiterUnavailable, http.StatusServiceUnavailable, "limiter_unavailable"},
	{ErrUpstreamTimeout, http.StatusGatewayTimeout, "upstream_timeout"},
	{ErrHeadersTooLarge, http.StatusRequestHeaderFieldsTooLarge, "request_headers_too_large"},
	{ErrGuardrail, http.StatusBadRequest, ErrGuardrailCode},
}

// Error is a user-facing error: a kind from the list above and a message
// fit for the caller (never a secret).
type Error struct {
	Kind       error
	Msg        string
	Param      string        // the offending request field, if any
	RetryAfter time.Duration // sent as Retry-After when positive
}

// Errorf returns an Error of the given kind.
func Errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// Classify returns the status and code for err; anything that is not one
// of Relay's kinds is a 502 upstream_error.
func Classify(err error) (status int, code string) {
	for _, k := range kinds {
		if errors.Is(err, k.kind) {
			return k.status, k.code
		}
	}
	return http.StatusBadGateway, "upstream_error"
}

// OpenAIType is the OpenAI error "type" Relay sends for a status.
func OpenAIType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusGatewayTimeout:
		return "timeout_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// AnthropicType is Anthropic's error.type for a status.
func AnthropicType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// GeminiStatus is the google.rpc status name Gemini's error bodies carry
// for an HTTP status.
func GeminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusPaymentRequired, http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusBadGateway, http.StatusServiceUnavailable, 529:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// AppendGeminiError appends Gemini's error object, {"error":{"code",
// "message","status"}}, with Relay's own code (and the offending field)
// in a google.rpc.ErrorInfo detail whose domain is relay.
func AppendGeminiError(dst []byte, status int, msg, code, param string) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, `,"message":`...)
	dst = AppendString(dst, msg)
	dst = append(dst, `,"status":`...)
	dst = AppendString(dst, GeminiStatus(status))
	if code != "" {
		dst = append(dst, `,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":`...)
		dst = AppendString(dst, code)
		dst = append(dst, `,"domain":"relay"`...)
		if param != "" {
			dst = append(dst, `,"metadata":{"param":`...)
			dst = AppendString(dst, param)
			dst = append(dst, '}')
		}
		dst = append(dst, "}]"...)
	}
	return append(dst, "}}"...)
}

// AppendErrorBody appends the error body for err in the dialect's shape and
// returns it with the status to send. The message is err's text: build
// errors with Errorf so it is fit for the caller.
func AppendErrorBody(dst []byte, d Dialect, err error, requestID string) ([]byte, int) {
	status, code := Classify(err)
	msg := err.Error()
	var param string
	var e *Error
	if errors.As(err, &e) {
		param = e.Param
	}
	if d == DialectGemini {
		return append(AppendGeminiError(dst, status, msg, code, param), '\n'), status
	}
	if d == DialectAnthropic {
		dst = append(dst, `{"type":"error","error":{"type":`...)
		dst = AppendString(dst, AnthropicType(status))
		dst = append(dst, `,"message":`...)
		dst = AppendString(dst, msg)
		dst = append(dst, `},"request_id":`...)
		dst = AppendString(dst, requestID)
		return append(dst, "}\n"...), status
	}
	dst = append(dst, `{"error":{"message":`...)
	dst = AppendString(dst, msg)
	dst = append(dst, `,"type":`...)
	dst = AppendString(dst, OpenAIType(status))
	dst = append(dst, `,"param":`...)
	if param == "" {
		dst = append(dst, "null"...)
	} else {
		dst = AppendString(dst, param)
	}
	dst = append(dst, `,"code":`...)
	dst = AppendString(dst, code)
	return append(dst, "}}\n"...), status
}

// StreamErrorCode is the code of the error event Relay puts into a stream
// that failed after it started.
const StreamErrorCode = "upstream_stream_error"

// AppendStreamError appends an SSE error event in the inbound shape, for a
// stream that broke after bytes reached the caller. seq is the Responses
// sequence number to use.
func AppendStreamError(dst []byte, in Inbound, msg string, seq int64) []byte {
	switch in {
	case InboundMessages:
		dst = append(dst, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":"...)
		dst = AppendString(dst, msg)
		return append(dst, "}}\n\n"...)
	case InboundGenerate:
		return AppendGenerateStreamError(dst, msg, "server_error", "", StreamErrorCode)
	case InboundGemini:
		dst = append(dst, "data: "...)
		dst = AppendGeminiError(dst, http.StatusBadGateway, msg, StreamErrorCode, "")
		return append(dst, "\n\n"...)
	case InboundResponses:
		dst = append(dst, "event: error\ndata: {\"type\":\"error\",\"code\":\""+StreamErrorCode+"\",\"message\":"...)
		dst = AppendString(dst, msg)
		dst = append(dst, `,"param":null,"sequence_number":`...)
		dst = fmt.Appendf(dst, "%d", seq)
		return append(dst, "}\n\n"...)
	}
	dst = append(dst, "data: {\"error\":{\"message\":"...)
	dst = AppendString(dst, msg)
	return append(dst, ",\"type\":\"server_error\",\"param\":null,\"code\":\""+StreamErrorCode+"\"}}\n\n"...)
}

// AppendGenerateStreamError appends /v1/generate's error event: its data is
// {"type":"error","error":{…}} with the same error object as Relay's error
// bodies.
func AppendGenerateStreamError(dst []byte, msg, typ, param, code string) []byte {
	dst = append(dst, "event: error\ndata: {\"type\":\"error\",\"error\":{\"message\":"...)
	dst = AppendString(dst, msg)
	dst = append(dst, `,"type":`...)
	dst = AppendString(dst, typ)
	dst = append(dst, `,"param":`...)
	if param == "" {
		dst = append(dst, "null"...)
	} else {
		dst = AppendString(dst, param)
	}
	dst = append(dst, `,"code":`...)
	dst = AppendString(dst, code)
	return append(dst, "}}\n\n"...)
}
