package mockupstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
)

// The Azure OpenAI face: deployment paths
// (/openai/deployments/{deployment}/chat/completions|embeddings?api-version=…,
// /openai/responses?api-version=…) and the /openai/v1/… surface, an
// api-key header or an Entra ID token, Azure's error bodies. A deployment
// whose name holds "content-filter" refuses the prompt as Azure's content
// filter does (400 code content_filter); one whose name holds
// "completion-filter" has its completion cut by the output filter
// (finish_reason content_filter). Chat answers carry Azure's
// prompt_filter_results and content_filter_results. The call is then served by the
// inner Server as OpenAI, with the deployment as the model.

func azureError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Apim-Request-Id", "mock-apim-1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

func (c *Cloud) azure(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	var inner, deployment string
	if rest, ok := strings.CutPrefix(p, "/openai/v1/"); ok {
		inner = "/v1/" + rest
	} else {
		if r.URL.Query().Get("api-version") == "" {
			azureError(w, http.StatusNotFound, "404", "Resource not found")
			return
		}
		switch rest, _ := strings.CutPrefix(p, "/openai"); {
		case strings.HasPrefix(rest, "/deployments/"):
			d, op, ok := strings.Cut(rest[len("/deployments/"):], "/")
			if !ok || d == "" || (op != "chat/completions" && op != "embeddings") {
				azureError(w, http.StatusNotFound, "404", "Resource not found")
				return
			}
			deployment, inner = d, "/v1/"+op
		case rest == "/responses":
			inner = "/v1/responses"
		default:
			azureError(w, http.StatusNotFound, "404", "Resource not found")
			return
		}
	}
	switch key := r.Header.Get("Api-Key"); {
	case key != "":
		if !slices.Contains(c.opts.APIKeys, key) {
			azureError(w, http.StatusUnauthorized, "401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
			return
		}
	case !c.validToken(r.Header):
		azureError(w, http.StatusUnauthorized, "PermissionDenied", "Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return
	}
	q := faceQuirks{azureFilters: true}
	if deployment != "" {
		if strings.Contains(deployment, "content-filter") {
			contentFiltered(w)
			return
		}
		q.completionFiltered = strings.Contains(deployment, "completion-filter")
		body = setMember(body, "model", deployment)
	}
	c.forward(w, withQuirks(r, q), inner, body, func(h http.Header) { h.Set("Authorization", "Bearer azure-face") })
}

// contentFiltered is Azure's refusal of a prompt its content filter caught.
func contentFiltered(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"high"}}}}}`)
}

// forward serves the call with the inner Server at path, with body, the
// caller's other headers and the credential header the inner shape wants.
func (c *Cloud) forward(w http.ResponseWriter, r *http.Request, path string, body []byte, cred func(http.Header)) {
	in := r.Clone(r.Context())
	in.URL.Path, in.URL.RawPath = path, ""
	in.RequestURI = ""
	in.Header.Del("Api-Key")
	in.Header.Del("Authorization")
	cred(in.Header)
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.ContentLength = int64(len(body))
	c.inner.ServeHTTP(w, in)
}

// setMember sets a top-level member of a JSON object body (or deletes it
// for a nil value); a body that is not an object stays as it is, for the
// inner Server to refuse.
func setMember(body []byte, name string, v any) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if v == nil {
		delete(m, name)
	} else {
		m[name], _ = json.Marshal(v)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}
