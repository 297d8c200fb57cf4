package mockupstream

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// The OpenAI-compatible servers' faces, at /compat/{server}/v1/…: each
// refuses what the real server refuses of OpenAI's chat request — as
// documented by the server or seen from it — with the server's kind of
// error, then serves the call as OpenAI. They hold Relay's profiles to the
// servers, not to themselves.

// compatRule is what one server refuses.
type compatRule struct {
	streamOptions       bool // stream_options (Mistral: extra_forbidden, 422)
	developer           bool // the developer role
	maxCompletionTokens bool // max_completion_tokens
	status              int  // the status of a refusal
	// reasoning is the member a reasoning model's thoughts come in.
	reasoning string
}

var compatRules = map[string]compatRule{
	"vllm":       {reasoning: "reasoning_content"},
	"ollama":     {developer: true, maxCompletionTokens: true, status: http.StatusBadRequest, reasoning: "reasoning"},
	"lmstudio":   {streamOptions: true, developer: true, maxCompletionTokens: true, status: http.StatusBadRequest},
	"llamacpp":   {developer: true, maxCompletionTokens: true, status: http.StatusBadRequest, reasoning: "reasoning_content"},
	"groq":       {developer: true, status: http.StatusBadRequest, reasoning: "reasoning"},
	"mistral":    {streamOptions: true, developer: true, maxCompletionTokens: true, status: http.StatusUnprocessableEntity},
	"deepseek":   {developer: true, maxCompletionTokens: true, status: http.StatusBadRequest, reasoning: "reasoning_content"},
	"together":   {developer: true, maxCompletionTokens: true, status: http.StatusBadRequest, reasoning: "reasoning"},
	"fireworks":  {developer: true, maxCompletionTokens: true, status: http.StatusBadRequest, reasoning: "reasoning_content"},
	"openrouter": {maxCompletionTokens: true, status: http.StatusBadRequest, reasoning: "reasoning"},
}

func (c *Cloud) compat(w http.ResponseWriter, r *http.Request) {
	server, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/compat/"), "/")
	rule, ok := compatRules[server]
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return
	}
	if strings.HasSuffix(rest, "chat/completions") {
		var req struct {
			StreamOptions       json.RawMessage `json:"stream_options"`
			MaxCompletionTokens json.RawMessage `json:"max_completion_tokens"`
			Messages            []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		refuse := func(field string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rule.status)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
				"message": server + " does not accept " + field, "type": "invalid_request_error", "param": field, "code": nil,
			}})
		}
		switch {
		case rule.streamOptions && req.StreamOptions != nil:
			refuse("stream_options")
			return
		case rule.maxCompletionTokens && req.MaxCompletionTokens != nil:
			refuse("max_completion_tokens")
			return
		}
		for _, m := range req.Messages {
			if rule.developer && m.Role == "developer" {
				refuse("messages.role")
				return
			}
		}
	}
	c.forward(w, withQuirks(r, faceQuirks{reasoning: rule.reasoning}), "/"+rest, body, func(h http.Header) { h.Set("Authorization", "Bearer compat-face") })
}
