package ui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/openapi/models"
)

// The audit log page: GET /api/audit's rows, filtered by kind, actor and
// object, paged with its cursor.

type auditView struct {
	Kinds           []option
	Actor, ObjectID string
	Table           table
}

// auditKinds are the kinds the control plane writes audit rows for (their
// table names).
var auditKinds = []string{"hosts", "models", "bindings", "host_keys", "rate_limits", "policies", "teams", "projects",
	"service_accounts", "relay_keys", "policy_bindings", "budgets", "users", "groups", "role_bindings", "inference_tokens",
	"sessions", "payload_captures"}

func (h *Handler) audit(p *page) {
	q := p.r.URL.Query()
	kind, actor, object := strings.TrimSpace(q.Get("kind")), strings.TrimSpace(q.Get("actor")), strings.TrimSpace(q.Get("object_id"))
	limit := int32(pageSize)
	params := models.ListAuditLogParams{Limit: &limit}
	filter := url.Values{}
	for _, f := range []struct {
		name, v string
		to      **string
	}{{"kind", kind, &params.Kind}, {"actor", actor, &params.Actor}, {"object_id", object, &params.ObjectID}} {
		if f.v != "" {
			v := f.v
			*f.to = &v
			filter.Set(f.name, v)
		}
	}
	if c := q.Get("cursor"); c != "" {
		params.Cursor = &c
	}
	l, err := h.svc.ListAuditLog(p.ctx, params)
	if err != nil {
		h.failErr(p, err)
		return
	}
	t := table{Columns: []column{{Title: "#", Num: true}, {Title: "When"}, {Title: "Who"}, {Title: "Action"}, {Title: "Kind"}, {Title: "Object"}, {Title: "From"}},
		Empty: "No audit rows match."}
	for _, e := range l.Items {
		t.Rows = append(t.Rows, row{Cells: []cell{{Text: strconv.FormatInt(e.ID, 10), Num: true}, {Text: e.At.UTC().Format("2006-01-02 15:04:05")},
			{Text: e.Actor, Mono: true}, {Text: string(e.Action), Badge: auditBadge(e.Action)}, {Text: e.Kind, Mono: true}, {Text: e.ObjectID, Mono: true}, {Text: deref(e.ClientAddr), Mono: true}}})
	}
	if l.NextCursor != nil {
		next := url.Values{"cursor": {*l.NextCursor}}
		for k, v := range filter {
			next[k] = v
		}
		t.Next = "/audit?" + next.Encode()
	}
	if params.Cursor != nil {
		t.First = "/audit"
		if len(filter) > 0 {
			t.First += "?" + filter.Encode()
		}
	}
	v := auditView{Actor: actor, ObjectID: object, Table: t,
		Kinds: selectOf("kind", "", kind, withNone("Every kind", enumOptions(auditKinds...))).Options}
	p.render(http.StatusOK, "Audit log", "audit", auditPage(v))
}

func auditBadge(a models.AuditEntryAction) string {
	switch a {
	case models.AuditEntryActionDelete, models.AuditEntryActionRevoke:
		return "warn"
	case models.AuditEntryActionCreate:
		return "ok"
	}
	return ""
}
