package proxy

import (
	"strconv"
	"time"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// serveModels answers GET /v1/models with the models the caller's policy
// grants that have an enabled binding on an enabled host, in OpenAI's list
// shape, or Anthropic's for an Anthropic-shaped caller.
func (h *Handler) serveModels(rq *request) {
	if !rq.authenticate() {
		return
	}
	policy := rq.caller.Policy
	var listed []*snapshot.Model
	for _, m := range rq.snap.Models() {
		if policy != nil && policy.GrantsModel(m.ID) && reachable(rq.snap, m) {
			listed = append(listed, m)
		}
	}
	b := rq.out[:0]
	if rq.dialect == wire.DialectAnthropic {
		b = append(b, `{"data":[`...)
		for i, m := range listed {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"model","id":`...)
			b = wire.AppendString(b, m.Name)
			b = append(b, `,"display_name":`...)
			b = wire.AppendString(b, m.Name)
			b = append(b, `,"created_at":"`...)
			b = created(m).UTC().AppendFormat(b, time.RFC3339)
			b = append(b, `"}`...)
		}
		b = append(b, `],"has_more":false,"first_id":`...)
		if len(listed) == 0 {
			b = append(b, `null,"last_id":null}`...)
		} else {
			b = wire.AppendString(b, listed[0].Name)
			b = append(b, `,"last_id":`...)
			b = wire.AppendString(b, listed[len(listed)-1].Name)
			b = append(b, '}')
		}
	} else {
		b = append(b, `{"object":"list","data":[`...)
		for i, m := range listed {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = wire.AppendString(b, m.Name)
			b = append(b, `,"object":"model","created":`...)
			b = strconv.AppendInt(b, created(m).Unix(), 10)
			b = append(b, `,"owned_by":`...)
			b = wire.AppendString(b, m.Provider)
			b = append(b, '}')
		}
		b = append(b, `]}`...)
	}
	b = append(b, '\n')
	rq.out = b
	rq.respond(200, "application/json", b)
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
