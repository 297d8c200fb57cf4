package translator

import (
	"encoding/json"
	"fmt"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/wire"
)

// Upstream side, for every upstream shape: the request-level checks
// against the pair's matrix, and reading any provider's error body.

// commonChecks rejects the request-level features the pair's matrix
// rejects, in one place for every upstream.
func commonChecks(x *encoder) error {
	r := x.r
	checks := []struct {
		on bool
		f  Feature
	}{
		{r.N > 1, FeatN},
		{r.Logprobs || r.TopLogprobs != nil, FeatLogprobs},
		{len(r.LogitBias) > 0, FeatLogitBias},
		{r.Seed != nil, FeatSeed},
		{r.PresencePenalty != nil || r.FrequencyPenalty != nil, FeatPenalties},
		{r.Verbosity != "", FeatVerbosity},
		{len(r.Metadata) > 0, FeatMetadata},
		{r.User != "", FeatUser},
		{r.State != nil && r.State.Store != nil && *r.State.Store, FeatStore},
		{r.TopK != nil, FeatTopK},
		{len(r.Stop) > 0, FeatStop},
		{r.PromptCacheKey != "", FeatPromptCacheKey},
		{r.ServiceTier != "", FeatServiceTier},
		{r.ParallelToolCalls != nil && !*r.ParallelToolCalls, FeatParallelOff},
		{r.ResponseFormat != nil && r.ResponseFormat.Type == canonical.FormatJSONObject, FeatJSONObject},
		{r.ResponseFormat != nil && r.ResponseFormat.Type == canonical.FormatJSONSchema, FeatJSONSchema},
		{r.Reasoning != nil, FeatReasoning},
		{len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == canonical.RoleAssistant, FeatPrefill},
	}
	for _, c := range checks {
		if c.on {
			if err := x.check(c.f); err != nil {
				return err
			}
		}
	}
	if err := checkTools(r.Tools, x); err != nil {
		return err
	}
	for i := range r.System {
		if r.System[i].CacheHint != nil {
			if err := x.check(FeatCacheControl); err != nil {
				return err
			}
		}
	}
	for i := range r.Messages {
		if err := checkMessage(&r.Messages[i], x); err != nil {
			return err
		}
	}
	return nil
}

// checkTools checks what the tools ask for: strict schemas, cache hints.
func checkTools(tools []canonical.Tool, x *encoder) error {
	for _, t := range tools {
		if t.Strict != nil && *t.Strict {
			if err := x.check(FeatToolStrict); err != nil {
				return err
			}
		}
		if t.CacheHint != nil {
			if err := x.check(FeatCacheControl); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkMessage checks one message: its role, its name and each part.
func checkMessage(m *canonical.Message, x *encoder) error {
	if m.Role == canonical.RoleSystem {
		if err := x.check(FeatSystemMid); err != nil {
			return err
		}
	}
	if m.Name != "" {
		if err := x.check(FeatMessageName); err != nil {
			return err
		}
	}
	for j := range m.Parts {
		if err := checkPart(&m.Parts[j], x); err != nil {
			return err
		}
	}
	return nil
}

// checkPart checks one part by its kind.
func checkPart(p *canonical.Part, x *encoder) error {
	if p.CacheHint != nil {
		if err := x.check(FeatCacheControl); err != nil {
			return err
		}
	}
	switch p.Type {
	case canonical.PartImage:
		return checkImage(p.Image, x)
	case canonical.PartAudio:
		return x.check(FeatAudioInput)
	case canonical.PartFile:
		return x.check(FeatFileInput)
	case canonical.PartToolResult:
		return checkToolResult(p.ToolResult, x)
	}
	return nil
}

func checkToolResult(tr *canonical.ToolResult, x *encoder) error {
	for _, c := range tr.Content {
		if c.Type == canonical.PartImage {
			if err := x.check(FeatToolResultImage); err != nil {
				return err
			}
		}
	}
	if tr.IsError {
		return x.check(FeatToolResultError)
	}
	return nil
}

func checkImage(img *canonical.Image, x *encoder) error {
	if img.URL != "" {
		if err := x.check(FeatImageURL); err != nil {
			return err
		}
	} else if err := x.check(FeatImageBase64); err != nil {
		return err
	}
	if img.Detail != "" && img.Detail != "auto" {
		return x.check(FeatImageDetail)
	}
	return nil
}

// --- upstream errors ---

// upstreamError reads any provider's error body: OpenAI and Gemini put
// {"error":{message,…}} at the top, Anthropic {"type":"error","error":{type,
// message}}. The status is kept: the caller's SDK decides on it.
func upstreamError(status int, body []byte) *canonical.Error {
	var b struct {
		Error json.RawMessage `json:"error"`
		Msg   string          `json:"message"`
	}
	e := &canonical.Error{Kind: canonical.KindForStatus(status), Status: status}
	if json.Unmarshal(body, &b) == nil {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Status  string          `json:"status"`
			Param   *string         `json:"param"`
		}
		if json.Unmarshal(b.Error, &inner) == nil {
			e.Message = inner.Message
			e.Code = inner.Status
			if e.Code == "" {
				var s string
				if json.Unmarshal(inner.Code, &s) == nil {
					e.Code = s
				}
			}
			if e.Code == "" {
				e.Code = inner.Type
			}
			if inner.Param != nil {
				e.Param = *inner.Param
			}
		} else if s := ""; json.Unmarshal(b.Error, &s) == nil {
			e.Message = s
		}
		if e.Message == "" {
			e.Message = b.Msg
		}
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("The upstream answered %d.", status)
	}
	return e
}

// streamErrorOf is an in-stream error whose type or status the upstream
// named: the kind follows the type when it is known, else the status.
func streamErrorOf(typ string, status int, msg string) *canonical.Error {
	k := canonical.KindForStatus(status)
	switch typ {
	case "invalid_request_error", "invalid_request", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "invalid_prompt":
		k = canonical.ErrInvalidRequest
	case "authentication_error", "UNAUTHENTICATED":
		k = canonical.ErrAuthentication
	case "permission_error", "PERMISSION_DENIED":
		k = canonical.ErrPermission
	case "not_found_error", "NOT_FOUND":
		k = canonical.ErrNotFound
	case "rate_limit_error", "rate_limit_exceeded", "RESOURCE_EXHAUSTED", "insufficient_quota":
		k = canonical.ErrRateLimit
	case "overloaded_error", "UNAVAILABLE", "server_is_overloaded":
		k = canonical.ErrOverloaded
	case "timeout_error", "DEADLINE_EXCEEDED":
		k = canonical.ErrTimeout
	case "api_error", "server_error", "INTERNAL":
		k = canonical.ErrServer
	}
	if status == 0 {
		status = canonical.StatusForKind(k)
	}
	if msg == "" {
		msg = "The upstream reported an error in the stream."
	}
	return &canonical.Error{Kind: k, Status: status, Message: msg, Code: typ}
}

// eventType is the SSE event name, else the data's "type".
func eventType(ev *wire.Event) string {
	if len(ev.Name) > 0 {
		return string(ev.Name)
	}
	if v, ok := wire.Get(ev.Data, "type"); ok {
		if s, ok := wire.Str(v); ok {
			return string(s)
		}
	}
	return ""
}
