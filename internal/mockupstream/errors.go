package mockupstream

import (
	"net/http"
	"strconv"
	"time"
)

type errKind uint8

const (
	errInvalid errKind = iota
	errAuth
	errBilling
	errPermission
	errNotFound
	errMethod
	errTooLarge
	errRateLimit
	errQuota
	errServer
	errUnavailable
	errTimeout
	errOverloaded
)

// apiError is a provider-neutral error; fail renders it in the caller's shape.
type apiError struct {
	status     int     // 0 = the kind's usual status for the provider
	kind       errKind //
	msg        string  // "" = the provider's usual message for the kind
	param      string  // OpenAI param, "" = null
	code       string  // OpenAI code, "" = the kind's default (often null)
	reason     string  // Gemini google.rpc.ErrorInfo reason, "" = none
	retryAfter int     // seconds, rate limits only
}

func kindForStatus(st int) errKind {
	switch st {
	case 401:
		return errAuth
	case 402:
		return errBilling
	case 403:
		return errPermission
	case 404:
		return errNotFound
	case 405:
		return errMethod
	case 413:
		return errTooLarge
	case 429:
		return errRateLimit
	case 503:
		return errUnavailable
	case 504:
		return errTimeout
	case 529:
		return errOverloaded
	}
	if st >= 500 {
		return errServer
	}
	return errInvalid
}

func (c *call) errorStatus(e *apiError) int {
	if e.status != 0 {
		return e.status
	}
	switch e.kind {
	case errAuth:
		return http.StatusUnauthorized
	case errBilling:
		return http.StatusPaymentRequired
	case errPermission:
		return http.StatusForbidden
	case errNotFound:
		return http.StatusNotFound
	case errMethod:
		return http.StatusMethodNotAllowed
	case errTooLarge:
		return http.StatusRequestEntityTooLarge
	case errRateLimit:
		return http.StatusTooManyRequests
	case errQuota:
		if c.prov == provAnthropic {
			return http.StatusBadRequest
		}
		return http.StatusTooManyRequests
	case errServer:
		return http.StatusInternalServerError
	case errUnavailable:
		return http.StatusServiceUnavailable
	case errTimeout:
		return http.StatusGatewayTimeout
	case errOverloaded:
		return 529
	}
	return http.StatusBadRequest
}

// errorMessage is e's message, or the provider's usual one for its kind.
func (c *call) errorMessage(e *apiError) string {
	if e.msg != "" {
		return e.msg
	}
	switch c.prov {
	case provAnthropic:
		return anthropicErrorMessage(c, e)
	case provGemini:
		return geminiErrorMessage(c, e)
	}
	return openAIErrorMessage(c, e)
}

func openAIErrorMessage(c *call, e *apiError) string {
	switch e.kind {
	case errAuth:
		return "Incorrect API key provided: " + maskKey(c.cred) + ". You can find your API key at https://platform.openai.com/account/api-keys."
	case errBilling:
		return "Billing hard limit has been reached."
	case errPermission:
		return "Country, region, or territory not supported"
	case errNotFound:
		return "The model `" + c.model + "` does not exist or you do not have access to it."
	case errTooLarge:
		return "Request too large."
	case errRateLimit:
		return "Rate limit reached for " + c.model + " in organization org-mockupstream on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in " +
			strconv.Itoa(max(e.retryAfter, 1)) + "s. Visit https://platform.openai.com/account/rate-limits to learn more."
	case errQuota:
		return "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
	case errServer:
		return "The server had an error while processing your request. Sorry about that!"
	case errUnavailable, errOverloaded:
		return "The server is overloaded or not ready yet."
	case errTimeout:
		return "Request timed out."
	}
	return "Invalid request (injected by mockupstream)."
}

func anthropicErrorMessage(c *call, e *apiError) string {
	switch e.kind {
	case errAuth:
		return "invalid x-api-key"
	case errBilling, errQuota:
		return "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
	case errPermission:
		return "Your API key does not have permission to use the specified resource."
	case errNotFound:
		if c.model != "" {
			return "model: " + c.model
		}
		return "Not Found"
	case errTooLarge:
		return "Request exceeds the maximum allowed number of bytes."
	case errRateLimit:
		return "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later."
	case errServer:
		return "Internal server error"
	case errUnavailable:
		return "Service unavailable"
	case errTimeout:
		return "Request timeout"
	case errOverloaded:
		return "Overloaded"
	case errMethod:
		return "Method Not Allowed"
	}
	return "invalid request (injected by mockupstream)"
}

func geminiErrorMessage(c *call, e *apiError) string {
	switch e.kind {
	case errAuth:
		return "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	case errPermission, errBilling:
		return "The caller does not have permission"
	case errNotFound:
		if c.model != "" {
			return "models/" + c.model + " is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."
		}
		return "Requested entity was not found."
	case errTooLarge:
		return "Request payload size exceeds the limit: 20971520 bytes."
	case errRateLimit, errQuota:
		return "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
	case errServer:
		return "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	case errUnavailable, errOverloaded:
		return "The model is overloaded. Please try again later."
	case errTimeout:
		return "Deadline expired before operation could complete."
	case errMethod:
		return "Method not allowed."
	}
	return "Request contains an invalid argument."
}

// maskKey shows a key the way OpenAI's errors do: a few characters each end.
func maskKey(k string) string {
	if len(k) <= 8 {
		return "***"
	}
	return k[:3] + "*****" + k[len(k)-4:]
}

// --- OpenAI ---

type openAIErrorBody struct {
	Error openAIError `json:"error"`
}

type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (c *call) openAIErrorBody(e *apiError) openAIErrorBody {
	typ, code := "invalid_request_error", e.code
	switch e.kind {
	case errAuth:
		if code == "" {
			code = "invalid_api_key"
		}
	case errPermission:
		typ = "request_forbidden"
		if code == "" {
			code = "unsupported_country_region_territory"
		}
	case errNotFound:
		if code == "" && c.model != "" && e.msg == "" {
			code = "model_not_found"
		}
	case errRateLimit:
		typ = "requests"
		if code == "" {
			code = "rate_limit_exceeded"
		}
	case errQuota:
		typ, code = "insufficient_quota", "insufficient_quota"
	case errBilling:
		typ = "billing_error"
	case errServer, errUnavailable, errOverloaded, errTimeout:
		typ = "server_error"
	}
	return openAIErrorBody{Error: openAIError{
		Message: c.errorMessage(e),
		Type:    typ,
		Param:   nullable(e.param),
		Code:    nullable(code),
	}}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// --- Anthropic ---

type anthropicErrorBody struct {
	Type      string         `json:"type"`
	Error     anthropicError `json:"error"`
	RequestID string         `json:"request_id"`
}

type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (c *call) anthropicErrorBody(e *apiError) anthropicErrorBody {
	typ := "invalid_request_error"
	switch e.kind {
	case errAuth:
		typ = "authentication_error"
	case errBilling:
		typ = "billing_error"
	case errPermission:
		typ = "permission_error"
	case errNotFound:
		typ = "not_found_error"
	case errTooLarge:
		typ = "request_too_large"
	case errRateLimit:
		typ = "rate_limit_error"
	case errServer, errUnavailable:
		typ = "api_error"
	case errTimeout:
		typ = "timeout_error"
	case errOverloaded:
		typ = "overloaded_error"
	}
	return anthropicErrorBody{
		Type:      "error",
		Error:     anthropicError{Type: typ, Message: c.errorMessage(e)},
		RequestID: c.ensureRequestID(),
	}
}

// --- Gemini ---

type geminiErrorBody struct {
	Error geminiError `json:"error"`
}

type geminiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []any  `json:"details,omitempty"`
}

type geminiErrorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata"`
}

type geminiQuotaFailure struct {
	Type       string                 `json:"@type"`
	Violations []geminiQuotaViolation `json:"violations"`
}

type geminiQuotaViolation struct {
	QuotaMetric     string            `json:"quotaMetric"`
	QuotaID         string            `json:"quotaId"`
	QuotaDimensions map[string]string `json:"quotaDimensions"`
	QuotaValue      string            `json:"quotaValue"`
}

type geminiRetryInfo struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
}

func (c *call) geminiErrorBody(e *apiError) geminiErrorBody {
	code := c.errorStatus(e)
	ge := geminiError{Code: code, Message: c.errorMessage(e), Status: grpcStatus(code)}
	if e.reason != "" {
		ge.Details = append(ge.Details, geminiErrorInfo{
			Type:     "type.googleapis.com/google.rpc.ErrorInfo",
			Reason:   e.reason,
			Domain:   "googleapis.com",
			Metadata: map[string]string{"service": "generativelanguage.googleapis.com"},
		})
	}
	if e.kind == errRateLimit || e.kind == errQuota {
		ge.Details = append(ge.Details, geminiQuotaFailure{
			Type: "type.googleapis.com/google.rpc.QuotaFailure",
			Violations: []geminiQuotaViolation{{
				QuotaMetric:     "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				QuotaID:         "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
				QuotaDimensions: map[string]string{"location": "global", "model": c.model},
				QuotaValue:      "15",
			}},
		})
		if e.kind == errRateLimit {
			ge.Details = append(ge.Details, geminiRetryInfo{
				Type:       "type.googleapis.com/google.rpc.RetryInfo",
				RetryDelay: strconv.Itoa(max(e.retryAfter, 1)) + "s",
			})
		}
	}
	return geminiErrorBody{Error: ge}
}

// grpcStatus is the google.rpc.Code name Google's HTTP APIs pair with status.
func grpcStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 500:
		return "INTERNAL"
	case 501:
		return "UNIMPLEMENTED"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// --- authentication ---

// authenticate checks the credential (and Anthropic's version header) the way
// each provider does.
func (c *call) authenticate() *apiError {
	switch c.prov {
	case provBedrock:
		return c.authenticateBedrock()
	case provAnthropic:
		switch {
		case c.cred == "":
			return &apiError{kind: errAuth, msg: "x-api-key header is required"}
		case !c.s.keyAccepted(c.cred):
			return &apiError{kind: errAuth}
		case c.r.Header.Get("Anthropic-Version") == "":
			return &apiError{kind: errInvalid, msg: "anthropic-version: header is required"}
		}
	case provGemini:
		switch {
		case c.cred == "":
			return &apiError{
				status: http.StatusForbidden, kind: errPermission,
				msg: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
			}
		case !c.s.keyAccepted(c.cred):
			return &apiError{kind: errInvalid, msg: "API key not valid. Please pass a valid API key.", reason: "API_KEY_INVALID"}
		}
	default:
		switch {
		case c.cred == "":
			return &apiError{
				kind: errAuth,
				msg:  "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys.",
			}
		case !c.s.keyAccepted(c.cred):
			return &apiError{kind: errAuth}
		}
	}
	return nil
}

func (c *call) unknownRouteMessage() string {
	switch c.prov {
	case provAnthropic:
		return "Not Found"
	case provGemini:
		return "The requested URL " + c.r.URL.Path + " was not found on this server."
	}
	return "Invalid URL (" + c.r.Method + " " + c.r.URL.Path + ")"
}

// --- response headers ---

func (c *call) ensureRequestID() string {
	if c.requestID == "" {
		if c.prov == provAnthropic {
			c.requestID = anthropicReqID()
		} else {
			c.requestID = openAIRequestID()
		}
	}
	return c.requestID
}

func (c *call) openAIHeaders(h http.Header, status int) {
	remaining, reset := "9999", "6ms"
	if status == http.StatusTooManyRequests {
		remaining = "0"
		if ra := h.Get("Retry-After"); ra != "" {
			reset = ra + "s"
		}
	}
	h["X-Request-Id"] = []string{c.ensureRequestID()}
	h["Openai-Version"] = []string{"2020-10-01"}
	h["Openai-Organization"] = []string{"org-mockupstream"}
	h["Openai-Project"] = []string{"proj_mockupstream"}
	h["Openai-Processing-Ms"] = []string{strconv.FormatInt(time.Since(c.received).Milliseconds(), 10)}
	h["X-Ratelimit-Limit-Requests"] = []string{"10000"}
	h["X-Ratelimit-Remaining-Requests"] = []string{remaining}
	h["X-Ratelimit-Reset-Requests"] = []string{reset}
	h["X-Ratelimit-Limit-Tokens"] = []string{"30000000"}
	h["X-Ratelimit-Remaining-Tokens"] = []string{"29999000"}
	h["X-Ratelimit-Reset-Tokens"] = []string{"2ms"}
}

func (c *call) anthropicHeaders(h http.Header, status int) {
	now := time.Now().UTC()
	reset := now.Add(time.Second).Format(time.RFC3339)
	reqRemaining := "3999"
	if status == http.StatusTooManyRequests {
		reqRemaining = "0"
		if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
			reset = now.Add(time.Duration(s) * time.Second).Format(time.RFC3339)
		}
	}
	h["Request-Id"] = []string{c.ensureRequestID()}
	h["Anthropic-Organization-Id"] = []string{"00000000-0000-4000-8000-00006d6f636b"}
	h["Anthropic-Ratelimit-Requests-Limit"] = []string{"4000"}
	h["Anthropic-Ratelimit-Requests-Remaining"] = []string{reqRemaining}
	h["Anthropic-Ratelimit-Requests-Reset"] = []string{reset}
	h["Anthropic-Ratelimit-Tokens-Limit"] = []string{"280000"}
	h["Anthropic-Ratelimit-Tokens-Remaining"] = []string{"279000"}
	h["Anthropic-Ratelimit-Tokens-Reset"] = []string{reset}
	h["Anthropic-Ratelimit-Input-Tokens-Limit"] = []string{"200000"}
	h["Anthropic-Ratelimit-Input-Tokens-Remaining"] = []string{"199000"}
	h["Anthropic-Ratelimit-Input-Tokens-Reset"] = []string{reset}
	h["Anthropic-Ratelimit-Output-Tokens-Limit"] = []string{"80000"}
	h["Anthropic-Ratelimit-Output-Tokens-Remaining"] = []string{"80000"}
	h["Anthropic-Ratelimit-Output-Tokens-Reset"] = []string{reset}
}
