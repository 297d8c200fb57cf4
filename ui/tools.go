package ui

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/rbac"
)

// The tools: payload captures (read and redact) and the routing explain.

type payloadsView struct {
	Projects                    []option
	Project, ProjectLabel, CSRF string
	RequestID                   string
	Requests                    table
	CanDelete                   bool
}

type captureView struct {
	RequestID, Project, CSRF string
	Stats                    []stat
	Truncated                bool
	Request, Response        string
}

// payloads lists a project's recent requests (from the usage ledger, the
// last 7 days, newest first) with a link to each one's capture, or opens a
// capture by its request id.
func (h *Handler) payloads(p *page) {
	q := p.r.URL.Query()
	if rid := strings.TrimSpace(q.Get("request_id")); rid != "" {
		redirect(p.w, p.r, "/payloads/"+url.PathEscape(rid))
		return
	}
	v := payloadsView{CSRF: p.who.CSRFToken}
	project := strings.TrimSpace(q.Get("project_id"))
	projects := h.projectOptions(p)
	v.Projects = selectOf("project_id", "", project, withNone("Choose a project", projects)).Options
	if project != "" {
		id, err := uuid.Parse(project)
		if err != nil {
			p.fail(controlapi.Problem{Status: http.StatusNotFound, Message: "There is no such project."})
			return
		}
		v.Project, v.ProjectLabel = id.String(), labels(projects).of(id)
		// Offer the delete only where the API would do it: manage_project
		// on this project (a project the viewer cannot see offers nothing).
		if pr, err := h.svc.GetProject(p.ctx, id); err == nil {
			v.CanDelete = p.who.Can(rbac.ManageProject, rbac.InProject(pr.TeamID, pr.ID))
		}
		to := time.Now().UTC()
		from, limit := to.Add(-7*24*time.Hour), int32(pageSize)
		params := models.ListUsageEventsParams{From: &from, To: &to, ProjectID: &id, Limit: &limit}
		if c := q.Get("cursor"); c != "" {
			params.Cursor = &c
		}
		l, err := h.svc.ListUsageEvents(p.ctx, params)
		if err != nil {
			h.failErr(p, err)
			return
		}
		v.Requests = table{Columns: []column{{Title: "Request id"}, {Title: "When"}, {Title: "Model"}, {Title: "Status", Num: true}},
			Empty: "No requests of this project in the last 7 days."}
		for _, e := range l.Items {
			v.Requests.Rows = append(v.Requests.Rows, row{Cells: []cell{{Text: e.RequestID, Href: "/payloads/" + url.PathEscape(e.RequestID), Mono: true},
				{Text: e.CreatedAt.UTC().Format("2006-01-02 15:04:05")}, {Text: e.Model, Mono: true}, {Text: strconv.Itoa(int(e.Status)), Num: true}}})
		}
		if l.NextCursor != nil {
			v.Requests.Next = "/payloads?" + url.Values{"project_id": {project}, "cursor": {*l.NextCursor}}.Encode()
		}
		if params.Cursor != nil {
			v.Requests.First = "/payloads?" + url.Values{"project_id": {project}}.Encode()
		}
	}
	p.render(http.StatusOK, "Payload captures", "payloads", payloadsPage(v))
}

func (h *Handler) capture(p *page) {
	rid := p.r.PathValue("request_id")
	x, err := h.svc.GetPayloadCapture(p.ctx, rid)
	if errors.Is(err, controlapi.ErrNotFound) {
		p.fail(controlapi.Problem{Status: http.StatusNotFound, Message: "There is no capture for this request."})
		return
	}
	if err != nil {
		h.failErr(p, err)
		return
	}
	v := captureView{RequestID: x.RequestID, Project: x.ProjectID.String(), CSRF: p.who.CSRFToken, Truncated: x.Truncated,
		Request: x.RequestBody, Response: x.ResponseBody,
		Stats: []stat{{"When", x.CreatedAt.UTC().Format("2006-01-02 15:04:05")}, {"Model", x.Model}, {"Status", strconv.Itoa(int(x.Status))}}}
	p.render(http.StatusOK, "Capture", "payloads", capturePage(v))
}

func (h *Handler) deleteCapture(p *page) {
	rid := p.r.PathValue("request_id")
	x, err := h.svc.GetPayloadCapture(p.ctx, rid)
	if err != nil {
		h.failErr(p, err)
		return
	}
	project := x.ProjectID.String()
	if err := h.svc.DeletePayloadCapture(p.ctx, rid); err != nil {
		h.failErr(p, err)
		return
	}
	redirect(p.w, p.r, "/payloads?"+url.Values{"project_id": {project}}.Encode())
}

func (h *Handler) deleteProjectCaptures(p *page) {
	id, ok := pathID(p)
	if !ok {
		return
	}
	if _, err := h.svc.DeleteProjectPayloadCaptures(p.ctx, id); err != nil {
		h.failErr(p, err)
		return
	}
	redirect(p.w, p.r, "/payloads?"+url.Values{"project_id": {id.String()}}.Encode())
}

type explainView struct {
	RelayKeyID, Model, Error string
	Hint, Session, Body      string
	Policies, Shapes, Hints  []option
	Models                   []string
	Shown                    bool
	Stats                    []stat
	Refusal                  string
	Route                    routeView
}

// shapes are the requests the explain asks about, by the path they arrive on.
var shapes = []struct {
	value, label string
	in           models.RouteExplainRequestInbound
}{
	{"chat", "POST /v1/chat/completions", "openai_chat"},
	{"responses", "POST /v1/responses", "openai_responses"},
	{"messages", "POST /v1/messages", "anthropic_messages"},
	{"embeddings", "POST /v1/embeddings", "openai_embeddings"},
	{"generate", "POST /v1/generate", "relay_generate"},
}

// hints are the X-Relay-Route hints a caller may send (docs/routing.md).
var hints = []option{{Value: "", Label: "none"}, {Value: "cost=min", Label: "cost=min"}, {Value: "latency=min", Label: "latency=min"}, {Value: "quality=max", Label: "quality=max"}}

// explain asks POST /api/route/explain's method where a request would go
// now: the caller (a relay key or a policy), the model and the endpoint, and
// optionally the hint (X-Relay-Route), the session (X-Relay-Session) and the
// body as the caller would send them.
func (h *Handler) explain(p *page) {
	q := p.r.URL.Query()
	v := explainView{RelayKeyID: strings.TrimSpace(q.Get("relay_key_id")), Model: strings.TrimSpace(q.Get("model")),
		Hint: q.Get("hint"), Session: strings.TrimSpace(q.Get("session")), Body: strings.TrimSpace(q.Get("body"))}
	policy, shape := strings.TrimSpace(q.Get("policy_id")), q.Get("shape")
	v.Policies = selectOf("policy_id", "", policy, withNone("—", h.policyOptions(p))).Options
	in := models.RouteExplainRequestInbound("openai_chat")
	for _, s := range shapes {
		v.Shapes = append(v.Shapes, option{Value: s.value, Label: s.label, Selected: s.value == shape})
		if s.value == shape {
			in = s.in
		}
	}
	for _, o := range hints {
		o.Selected = o.Value == v.Hint
		v.Hints = append(v.Hints, o)
	}
	for _, m := range h.modelOptions(p) {
		v.Models = append(v.Models, m.Label)
	}
	if v.Model == "" && v.Body == "" {
		p.render(http.StatusOK, "Routing explain", "explain", explainPage(v))
		return
	}
	rq := models.RouteExplainRequest{Inbound: &in}
	if v.Model != "" {
		rq.Model = &v.Model
	}
	if v.RelayKeyID != "" {
		id, err := uuid.Parse(v.RelayKeyID)
		if err != nil {
			v.Error = "The relay key id is not an id (copy it from the relay key's address)."
			p.render(http.StatusUnprocessableEntity, "Routing explain", "explain", explainPage(v))
			return
		}
		rq.RelayKeyID = &id
	}
	if policy != "" {
		if id, err := uuid.Parse(policy); err == nil {
			rq.PolicyID = &id
		}
	}
	if v.Body != "" {
		if !json.Valid([]byte(v.Body)) || !strings.HasPrefix(v.Body, "{") {
			v.Error = "The request body is not a JSON object."
			p.render(http.StatusUnprocessableEntity, "Routing explain", "explain", explainPage(v))
			return
		}
		body := json.RawMessage(v.Body)
		rq.Body = &body
	}
	headers := map[string]string{}
	if v.Hint != "" {
		headers["X-Relay-Route"] = v.Hint
	}
	if v.Session != "" {
		headers["X-Relay-Session"] = v.Session
	}
	if len(headers) > 0 {
		rq.Headers = &headers
	}
	x, err := h.svc.RouteExplain(p.ctx, &rq)
	if err != nil {
		pr := controlapi.Explain(http.MethodGet, err)
		if pr.Status >= 500 && pr.Status != http.StatusNotImplemented {
			h.failErr(p, err)
			return
		}
		if pr.Status == http.StatusForbidden {
			p.fail(pr)
			return
		}
		v.Error = pr.Message
		p.render(pr.Status, "Routing explain", "explain", explainPage(v))
		return
	}
	v.Shown, v.Refusal = true, orEmpty(x.Refusal)
	pol := orEmpty(x.Policy)
	if pol == "" {
		pol = "none"
	}
	v.Stats = []stat{{"Policy", pol}, {"Policy from", orEmpty(x.PolicyFrom)}, {"Snapshot", "v" + strconv.FormatInt(x.SnapshotVersion, 10)}}
	if c := orEmpty(x.Credential); c != "" {
		v.Stats = append([]stat{{"Relay key", c}, {"Key state", x.CredentialState}}, v.Stats...)
	}
	if x.Content != nil {
		for _, line := range *x.Content {
			v.Stats = append(v.Stats, stat{"Content", line})
		}
	}
	v.Route = routeViewOf(x.Explanation, false)
	p.render(http.StatusOK, "Routing explain", "explain", explainPage(v))
}
