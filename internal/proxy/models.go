package proxy

import (
	"net/http"
	"strconv"
	"time"

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
	appendModel := appendOpenAIModel
	if rq.dialect == wire.DialectAnthropic {
		appendModel = appendAnthropicModel
	}
	b := rq.out[:0]
	if name != "" {
		m := rq.snap.ModelByName(name)
		if !usable(m) {
			rq.fail(wire.Errorf(wire.ErrModelNotFound, "The model %q does not exist or you do not have access to it.", name))
			return
		}
		b = appendModel(b, m)
	} else {
		var listed []*snapshot.Model
		for _, m := range rq.snap.Models() {
			if usable(m) {
				listed = append(listed, m)
			}
		}
		b = appendModelList(b, rq.dialect, listed, appendModel)
	}
	b = append(b, '\n')
	rq.out = b
	rq.respond(200, "application/json", b)
}

// appendModelList appends listed in OpenAI's list shape, or Anthropic's
// paged one.
func appendModelList(b []byte, d wire.Dialect, listed []*snapshot.Model, appendModel func([]byte, *snapshot.Model) []byte) []byte {
	if d != wire.DialectAnthropic {
		b = append(b, `{"object":"list","data":[`...)
	} else {
		b = append(b, `{"data":[`...)
	}
	for i, m := range listed {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendModel(b, m)
	}
	if d != wire.DialectAnthropic {
		return append(b, `]}`...)
	}
	b = append(b, `],"has_more":false,"first_id":`...)
	if len(listed) == 0 {
		return append(b, `null,"last_id":null}`...)
	}
	b = wire.AppendString(b, listed[0].Name)
	b = append(b, `,"last_id":`...)
	b = wire.AppendString(b, listed[len(listed)-1].Name)
	return append(b, '}')
}

// appendAnthropicModel appends m as an Anthropic model object.
func appendAnthropicModel(b []byte, m *snapshot.Model) []byte {
	b = append(b, `{"type":"model","id":`...)
	b = wire.AppendString(b, m.Name)
	b = append(b, `,"display_name":`...)
	b = wire.AppendString(b, m.Name)
	b = append(b, `,"created_at":"`...)
	b = created(m).UTC().AppendFormat(b, time.RFC3339)
	return append(b, `"}`...)
}

// appendOpenAIModel appends m as an OpenAI model object.
func appendOpenAIModel(b []byte, m *snapshot.Model) []byte {
	b = append(b, `{"id":`...)
	b = wire.AppendString(b, m.Name)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, created(m).Unix(), 10)
	b = append(b, `,"owned_by":`...)
	b = wire.AppendString(b, m.Provider)
	return append(b, '}')
}

func created(m *snapshot.Model) time.Time {
	if m.CreatedAt.IsZero() {
		return time.Unix(0, 0)
	}
	return m.CreatedAt
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
