package canonical

// Response is one whole generation.
type Response struct {
	// ID is the upstream's response id; caller encoders add their prefix.
	ID string `json:"id"`
	// Model is the model the upstream says answered.
	Model string `json:"model"`
	// Created is the Unix time of the response (synthesized when the
	// upstream has none).
	Created int64 `json:"created"`
	// Parts is the output in order: PartThinking, PartRedactedThinking,
	// PartText, PartRefusal and PartToolCall parts.
	Parts  []Part       `json:"parts"`
	Finish FinishReason `json:"finish"`
	// StopSequence is the stop sequence that ended the output, when the
	// upstream said which.
	StopSequence string `json:"stop_sequence,omitempty"`
	Usage        Usage  `json:"usage"`
}

// FinishReason is why generation ended, in the union of every shape's
// vocabulary. Translators map it by the table in docs/translation.md.
type FinishReason string

// Finish reasons.
const (
	FinishNone          FinishReason = ""
	FinishStop          FinishReason = "stop"           // natural end
	FinishStopSequence  FinishReason = "stop_sequence"  // a stop sequence matched
	FinishLength        FinishReason = "length"         // the output limit
	FinishContextWindow FinishReason = "context_window" // the context window filled up
	FinishToolCalls     FinishReason = "tool_calls"     // the model called tools
	FinishContentFilter FinishReason = "content_filter" // a safety system cut the output
	FinishRefusal       FinishReason = "refusal"        // the model declined
	FinishPause         FinishReason = "pause"          // Anthropic pause_turn
	FinishOther         FinishReason = "other"          // anything else (Gemini OTHER, MALFORMED_FUNCTION_CALL …)
)

// Usage is the token count of one response, with wire.Usage's semantics:
// Input counts every prompt token, cached or not; CacheRead and CacheWrite
// are the parts of Input read from and written to the prompt cache. Output
// counts every generated token; Reasoning is the part of Output spent on
// reasoning. The field set matches wire.Usage so one converts to the other.
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
	Reasoning  int64 `json:"reasoning"`
}

// Total is Input + Output.
func (u Usage) Total() int64 { return u.Input + u.Output }

// ErrorKind classifies an upstream error by what it means to the caller.
type ErrorKind string

// Error kinds; each caller shape has a type for every one.
const (
	ErrInvalidRequest ErrorKind = "invalid_request"
	ErrAuthentication ErrorKind = "authentication"
	ErrPermission     ErrorKind = "permission"
	ErrNotFound       ErrorKind = "not_found"
	ErrTooLarge       ErrorKind = "too_large"
	ErrRateLimit      ErrorKind = "rate_limit"
	ErrOverloaded     ErrorKind = "overloaded"
	ErrTimeout        ErrorKind = "timeout"
	ErrServer         ErrorKind = "server"
)

// Error is an error an upstream reported, in a stream or as a body.
type Error struct {
	Kind ErrorKind `json:"kind"`
	// Status is the HTTP status the error maps to (the upstream's own for
	// a body; the kind's usual one in a stream).
	Status  int    `json:"status"`
	Message string `json:"message"`
	// Code is the upstream's own code (OpenAI code, Gemini status, Anthropic
	// type), for the caller's information.
	Code string `json:"code,omitempty"`
	// Param is the offending field, when the upstream named one.
	Param string `json:"param,omitempty"`
}

// KindForStatus is the error kind an HTTP status usually means.
func KindForStatus(status int) ErrorKind {
	switch status {
	case 401:
		return ErrAuthentication
	case 402, 403:
		return ErrPermission
	case 404:
		return ErrNotFound
	case 408, 504:
		return ErrTimeout
	case 413:
		return ErrTooLarge
	case 429:
		return ErrRateLimit
	case 503, 529:
		return ErrOverloaded
	}
	if status >= 500 {
		return ErrServer
	}
	return ErrInvalidRequest
}

// StatusForKind is the usual HTTP status of an error kind.
func StatusForKind(k ErrorKind) int {
	switch k {
	case ErrAuthentication:
		return 401
	case ErrPermission:
		return 403
	case ErrNotFound:
		return 404
	case ErrTimeout:
		return 504
	case ErrTooLarge:
		return 413
	case ErrRateLimit:
		return 429
	case ErrOverloaded:
		return 503
	case ErrServer:
		return 500
	}
	return 400
}
