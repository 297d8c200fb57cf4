package proxy

import (
	"net/http"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// rootBody is what GET / on the inference port says: what Relay is and
// where its endpoints are — nothing about the catalog or its secrets.
var rootBody = []byte(`{"name":"Relay","description":"LLM gateway: keep your SDK, change only the base URL.","endpoints":["/v1/chat/completions","/v1/responses","/v1/messages","/v1/messages/count_tokens","/v1/embeddings","/v1/generate","/v1/models","/healthz","/readyz"]}` + "\n")

// serveRoot answers GET and HEAD / (clients such as Claude Code probe the
// base URL before their first request) without authentication.
func serveRoot(rq *request) {
	if m := rq.r.Method; m != http.MethodGet && m != http.MethodHead {
		rq.fail(wire.Errorf(wire.ErrMethodNotAllowed, "Use GET for /."))
	} else {
		rq.respond(http.StatusOK, "application/json", rootBody)
	}
	rq.finish()
}

// serveModels answers GET /v1/models with the models the caller's policy
// grants that have an enabled binding on an enabled host, in OpenAI's list
// shape, or Anthropic's for an Anthropic-shaped caller. With a name
// (GET /v1/models/{name}) it answers that one model, or 404 when the caller
// may not use it.
func (h *Handler) serveModels(rq *request, name string) {
	if !rq.authenticate() {
		return
	}
	policy := rq.caller.Policy
	usable := func(m *snapshot.Model) bool {
		return m != nil && policy != nil && policy.GrantsModel(m.ID) && reachable(rq.snap, m)
	}
	d, b := rq.call.Dialect, rq.out[:0]
	if name != "" {
		m := rq.snap.ModelByName(name)
		if !usable(m) {
			rq.fail(wire.Errorf(wire.ErrModelNotFound, "The model %q does not exist or you do not have access to it.", name))
			return
		}
		entry := listEntry(m)
		b = d.AppendModel(b, &entry)
	} else {
		var listed []wire.Model
		for _, m := range rq.snap.Models() {
			if usable(m) {
				listed = append(listed, listEntry(m))
			}
		}
		b = d.AppendModelList(b, listed)
	}
	b = append(b, '\n')
	rq.out = b
	rq.respond(200, "application/json", b)
}

// listEntry is what a model list says of m.
func listEntry(m *snapshot.Model) wire.Model {
	return wire.Model{Name: m.Name, Provider: m.Provider, Embedding: m.Kind == "embedding",
		ContextWindow: int64(m.ContextWindow), MaxOutputTokens: int64(m.MaxOutputTokens), CreatedAt: m.CreatedAt}
}

// reachable reports whether some enabled binding of m sits on an enabled host.
func reachable(s *snapshot.Snapshot, m *snapshot.Model) bool {
	for _, b := range s.Bindings(m.ID) {
		if h := s.Host(b.HostID); b.Enabled && h != nil && h.Enabled {
			return true
		}
	}
	return false
}
