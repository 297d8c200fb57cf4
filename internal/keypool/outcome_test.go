package keypool

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/wire"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	const (
		oaAuth     = `{"error":{"message":"Incorrect API key provided: sk-***abcd.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
		oaQuota    = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
		oaRate     = `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM).","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
		oaNoModel  = `{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`
		oaNoPrev   = `{"error":{"message":"Previous response with id 'resp_1' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`
		oaInvalid  = `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":null}}`
		oa500      = `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`
		anCredit   = `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`
		anBilling  = `{"type":"error","error":{"type":"billing_error","message":"Billing issue."}}`
		anRate     = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization."}}`
		anOverload = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
		anNoModel  = `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`
		anTooLarge = `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`
		geBadKey   = `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`
		geBadArg   = `{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}`
		geQuota    = `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaDimensions":{"model":"gemini-2.0-flash"}}]}]}}`
		geNoModel  = `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta.","status":"NOT_FOUND"}}`
		ollamaNone = `{"error":"model \"llama9\" not found, try pulling it first"}`
		brBadKey   = `{"message":"The security token included in the request is invalid."}`
		brExpired  = `{"message":"The security token included in the request is expired"}`
		brDenied   = `{"message":"You don't have access to the model with the specified model ID."}`
		brThrottle = `{"message":"Too many requests, please wait before trying again."}`
		brNotReady = `{"message":"Model is not ready for inference. Wait and try your request again."}`
		brUnavail  = `{"message":"Bedrock is unable to process your request."}`
	)
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name    string
		u       Upstream
		class   Class
		outcome Outcome
		scope   Scope
		reason  string
	}{
		{"200", Upstream{Status: 200}, ClassSuccess, OutcomeSuccess, ScopeKey, ""},
		// Bedrock: an unknown access key or expired session token holds the
		// key; access denied is per model; throttling and a model not
		// ready hold the model.
		{"bedrock unrecognized client", Upstream{Status: 403, Body: []byte(brBadKey)}, ClassKey, OutcomeAuth, ScopeKey, "403"},
		{"bedrock expired token", Upstream{Status: 403, Body: []byte(brExpired)}, ClassKey, OutcomeAuth, ScopeKey, "403"},
		{"bedrock access denied", Upstream{Status: 403, Body: []byte(brDenied)}, ClassKey, OutcomeAuth, ScopeModel, "403"},
		{"bedrock throttling", Upstream{Status: 429, Body: []byte(brThrottle)}, ClassModel, OutcomeRateLimited, ScopeModel, "429"},
		{"bedrock model not ready", Upstream{Status: 429, Body: []byte(brNotReady)}, ClassModel, OutcomeRateLimited, ScopeModel, "429"},
		{"bedrock unavailable", Upstream{Status: 503, Body: []byte(brUnavail)}, ClassModel, OutcomeFailure, ScopeModel, "503"},
		{"caller gone", Upstream{Status: 0, Err: context.Canceled, CallerGone: true}, ClassCaller, OutcomeNeutral, ScopeKey, ""},
		{"caller gone mid-stream", Upstream{AfterFirstByte: true, CallerGone: true}, ClassCaller, OutcomeNeutral, ScopeKey, ""},
		{"mid-stream reset", Upstream{AfterFirstByte: true, Reason: "connection reset"}, ClassAfterFirstByte, OutcomeFailure, ScopeModel, "connection reset"},
		{"mid-stream stall", Upstream{AfterFirstByte: true, Reason: "idle timeout"}, ClassAfterFirstByte, OutcomeFailure, ScopeModel, "idle timeout"},

		{"connection refused", Upstream{Err: dial, Reason: "connection refused"}, ClassKey, OutcomeFailure, ScopeKey, "connection refused"},
		{"dns", Upstream{Err: &net.DNSError{Err: "no such host", Name: "x"}}, ClassKey, OutcomeFailure, ScopeKey, ""},
		{"connect timeout", Upstream{Err: &net.OpError{Op: "dial", Err: context.DeadlineExceeded}}, ClassKey, OutcomeFailure, ScopeKey, ""},
		{"tls", Upstream{Err: fmt.Errorf("wrap: %w", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"})}, ClassKey, OutcomeFailure, ScopeKey, ""},
		{"tls alert", Upstream{Err: errors.New("remote error: tls: handshake failure")}, ClassKey, OutcomeFailure, ScopeKey, ""},
		{"reset before the answer", Upstream{Err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}}, ClassModel, OutcomeFailure, ScopeModel, ""},
		{"closed before the answer", Upstream{Err: io.ErrUnexpectedEOF}, ClassModel, OutcomeFailure, ScopeModel, ""},
		{"first-byte timeout", Upstream{Err: context.Canceled, Reason: "first-byte timeout"}, ClassModel, OutcomeFailure, ScopeModel, "first-byte timeout"},

		{"openai 401", Upstream{Shape: wire.ShapeOpenAI, Status: 401, Body: []byte(oaAuth)}, ClassKey, OutcomeAuth, ScopeModel, "401"},
		{"403", Upstream{Status: 403}, ClassKey, OutcomeAuth, ScopeModel, "403"},
		{"402", Upstream{Status: 402}, ClassKey, OutcomeQuota, ScopeKey, "402"},
		{"openai insufficient_quota", Upstream{Status: 429, Body: []byte(oaQuota), RetryAfter: time.Second}, ClassKey, OutcomeQuota, ScopeKey, "429 insufficient_quota"},
		{"anthropic credit balance", Upstream{Shape: wire.ShapeAnthropic, Status: 400, Body: []byte(anCredit)}, ClassKey, OutcomeQuota, ScopeKey, "400 credit balance too low"},
		{"anthropic billing_error", Upstream{Shape: wire.ShapeAnthropic, Status: 402, Body: []byte(anBilling)}, ClassKey, OutcomeQuota, ScopeKey, "402 billing_error"},
		{"gemini API_KEY_INVALID", Upstream{Shape: wire.ShapeGemini, Status: 400, Body: []byte(geBadKey)}, ClassKey, OutcomeAuth, ScopeKey, "400"},

		{"openai per-model 429", Upstream{Status: 429, Body: []byte(oaRate), RetryAfter: 20 * time.Second}, ClassModel, OutcomeRateLimited, ScopeModel, "429"},
		{"anthropic 429", Upstream{Shape: wire.ShapeAnthropic, Status: 429, Body: []byte(anRate)}, ClassModel, OutcomeRateLimited, ScopeModel, "429"},
		{"gemini RESOURCE_EXHAUSTED", Upstream{Shape: wire.ShapeGemini, Status: 429, Body: []byte(geQuota)}, ClassModel, OutcomeRateLimited, ScopeModel, "429"},
		{"429 without a body", Upstream{Status: 429}, ClassModel, OutcomeRateLimited, ScopeModel, "429"},
		{"500", Upstream{Status: 500, Body: []byte(oa500)}, ClassModel, OutcomeFailure, ScopeModel, "500"},
		{"503 html", Upstream{Status: 503, Body: []byte("<html>bad gateway</html>")}, ClassModel, OutcomeFailure, ScopeModel, "503"},
		{"529", Upstream{Shape: wire.ShapeAnthropic, Status: 529, Body: []byte(anOverload)}, ClassModel, OutcomeFailure, ScopeModel, "529"},
		{"408", Upstream{Status: 408}, ClassModel, OutcomeFailure, ScopeModel, "408"},
		{"openai model_not_found", Upstream{Status: 404, Body: []byte(oaNoModel)}, ClassModel, OutcomeFailure, ScopeModel, "404 model not found"},
		{"anthropic model not found", Upstream{Shape: wire.ShapeAnthropic, Status: 404, Body: []byte(anNoModel)}, ClassModel, OutcomeFailure, ScopeModel, "404 model not found"},
		{"gemini model not found", Upstream{Shape: wire.ShapeGemini, Status: 404, Body: []byte(geNoModel)}, ClassModel, OutcomeFailure, ScopeModel, "404 model not found"},
		{"ollama model not found", Upstream{Status: 404, Body: []byte(ollamaNone)}, ClassModel, OutcomeFailure, ScopeModel, "404 model not found"},

		{"404 previous response", Upstream{Shape: wire.ShapeOpenAIResponses, Status: 404, Body: []byte(oaNoPrev)}, ClassRequest, OutcomeSuccess, ScopeKey, ""},
		{"400 invalid", Upstream{Status: 400, Body: []byte(oaInvalid)}, ClassRequest, OutcomeSuccess, ScopeKey, ""},
		{"gemini 400 invalid argument", Upstream{Shape: wire.ShapeGemini, Status: 400, Body: []byte(geBadArg)}, ClassRequest, OutcomeSuccess, ScopeKey, ""},
		{"413", Upstream{Shape: wire.ShapeAnthropic, Status: 413, Body: []byte(anTooLarge)}, ClassRequest, OutcomeSuccess, ScopeKey, ""},
		{"422 not json", Upstream{Status: 422, Body: []byte("nope")}, ClassRequest, OutcomeSuccess, ScopeKey, ""},
		{"304", Upstream{Status: 304}, ClassRequest, OutcomeSuccess, ScopeKey, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, r := Classify(tt.u)
			if c != tt.class || r.Outcome != tt.outcome || r.Scope != tt.scope || r.Reason != tt.reason {
				t.Errorf("Classify = %s %+v, want %s outcome %d scope %s reason %q", c, r, tt.class, tt.outcome, tt.scope, tt.reason)
			}
			if tt.outcome == OutcomeRateLimited && r.RetryAfter != tt.u.RetryAfter {
				t.Errorf("RetryAfter %v, want %v", r.RetryAfter, tt.u.RetryAfter)
			}
		})
	}
}

// A server error or a network blip is one event among many; a model not
// found or an unreadable answer is definite.
func TestClassify_Evidence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		u    Upstream
		want Evidence
	}{
		{"500", Upstream{Status: 500}, EvidenceServer},
		{"529", Upstream{Status: 529}, EvidenceServer},
		{"408", Upstream{Status: 408}, EvidenceServer},
		{"reset before the answer", Upstream{Err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}}, EvidenceNetwork},
		{"connection refused", Upstream{Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, EvidenceNetwork},
		{"mid-stream reset", Upstream{AfterFirstByte: true, Reason: "connection reset"}, EvidenceNetwork},
		{"model not found", Upstream{Status: 404, Body: []byte(`{"error":{"code":"model_not_found"}}`)}, EvidenceDefinite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, r := Classify(tt.u); r.Evidence != tt.want {
				t.Errorf("Evidence = %d, want %d", r.Evidence, tt.want)
			}
		})
	}
}
