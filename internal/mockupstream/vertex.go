package mockupstream

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// The Vertex AI face: Gemini at
// /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:{method}
// (and /v1beta1/…),
// Anthropic at …/publishers/anthropic/models/{m}:rawPredict|streamRawPredict
// (anthropic_version in the body — "vertex-2023-10-16", or a dated
// Anthropic API version such as "2023-06-01", which anthropic-sdk-go's
// vertex option copies from its anthropic-version header and Vertex
// accepts — the model in the URL and not in the body), the OpenAI-compatible endpoint at
// …/endpoints/openapi/chat/completions; a Google access token from the
// Cloud's token endpoint; Google's error bodies.

func googleError(w http.ResponseWriter, status int, state, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": state}})
}

func (c *Cloud) vertex(w http.ResponseWriter, r *http.Request) {
	// {v1|v1beta1}/projects/{p}/locations/{l}/… (google.golang.org/genai's
	// Vertex backend calls v1beta1)
	_, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	parts := strings.SplitN(path, "/", 5)
	if len(parts) < 5 || parts[0] != "projects" || parts[2] != "locations" || parts[1] == "" || parts[3] == "" {
		googleError(w, http.StatusNotFound, "NOT_FOUND", "The requested URL was not found on this server.")
		return
	}
	if !c.validToken(r.Header) {
		googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return
	}
	rest := parts[4]
	switch {
	case strings.HasPrefix(rest, "publishers/google/models/"):
		c.forward(w, r, "/v1beta/models/"+rest[len("publishers/google/models/"):], body, func(h http.Header) { h.Set("X-Goog-Api-Key", "vertex-face") })
	case strings.HasPrefix(rest, "publishers/anthropic/models/"):
		model, method, _ := strings.Cut(rest[len("publishers/anthropic/models/"):], ":")
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
			return
		}
		if !vertexAnthropicVersion(m["anthropic_version"]) {
			googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "anthropic_version: Input should be 'vertex-2023-10-16'")
			return
		}
		if _, ok := m["model"]; ok {
			googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "model: Extra inputs are not permitted")
			return
		}
		switch method {
		case "rawPredict":
		case "streamRawPredict":
			body = setMember(body, "stream", true)
		default:
			googleError(w, http.StatusNotFound, "NOT_FOUND", "The requested URL was not found on this server.")
			return
		}
		body = setMember(setMember(body, "anthropic_version", nil), "model", model)
		c.forward(w, r, "/v1/messages", body, func(h http.Header) {
			h.Set("X-Api-Key", "vertex-face")
			h.Set("Anthropic-Version", "2023-06-01")
		})
	case rest == "endpoints/openapi/chat/completions":
		c.forward(w, r, "/v1/chat/completions", body, func(h http.Header) { h.Set("Authorization", "Bearer vertex-face") })
	default:
		googleError(w, http.StatusNotFound, "NOT_FOUND", "The requested URL was not found on this server.")
	}
}

// vertexAnthropicVersion reports whether v (JSON) is an anthropic_version
// Vertex takes: its own "vertex-2023-10-16" or a dated API version
// (YYYY-MM-DD).
func vertexAnthropicVersion(v json.RawMessage) bool {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return false
	}
	return s == "vertex-2023-10-16" || isAPIDate(s)
}
