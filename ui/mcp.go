package ui

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"

	gen "github.com/relay-llm/relay/openapi/controlgen"
	"github.com/relay-llm/relay/openapi/models"
	relaynull "github.com/relay-llm/relay/openapi/nullable"
)

// MCP servers (docs/mcp.md): catalog rows like hosts, written by system
// admins; their credential is write-only as a host key's secret is. A
// server's tools page asks the server for its tools now (through the API's
// discovery) and shows each one's approval state, with Approve and Withhold.

func (h *Handler) mcpServerKind() *kind {
	k := &kind{slug: "mcp-servers", title: "MCP servers", one: "MCP server", write: manageSystem,
		columns: []column{{Title: "Slug"}, {Title: "Name"}, {Title: "URL"}, {Title: "Credential"}, {Title: "State"}, {Title: "Tools"}}}
	k.list = func(p *page, _ string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := success[gen.ListMcpServers200JSONResponse](h.api.ListMcpServers(p.ctx, gen.ListMcpServersRequestObject{Params: models.ListMcpServersParams{Limit: &limit, Cursor: cursor}}))
		if err != nil {
			return nil, nil, err
		}
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			cred := string(x.AuthSecretSource)
			if x.AuthHeader != "" {
				cred = x.AuthHeader + " (" + cred + ")"
			}
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: x.Name}, {Text: x.URL, Mono: true}, {Text: cred}, enabled(x.Enabled),
				{Text: "Tools", Href: "/mcp-servers/" + x.ID.String() + "/tools"}}}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, editing bool) ([]field, error) {
		en := v.on("enabled") || v.Values.Get("slug") == ""
		secretHelp := "The header's value (e.g. Bearer …), sealed at once; it is never shown again."
		if editing {
			secretHelp = "Leave empty to keep the stored credential; a new header needs a new value or reference."
		}
		return []field{
			{Name: "slug", Label: "Slug", Kind: "text", Value: v.str("slug"), Required: true, Help: "Its tools reach callers as <slug>__<tool>."},
			text("name", "Name", v.str("name")),
			{Name: "url", Label: "URL", Kind: "text", Value: v.str("url"), Required: true, Help: "The server's Streamable HTTP endpoint (stdio servers are out of scope)."},
			withHelp(number("timeout_ms", "Timeout (ms)", v.str("timeout_ms")), "Longest one call to the server may take; empty: 60000."),
			selectOf("rate_limit_id", "Rate limit", v.str("rate_limit_id"), withNone("None", h.rateLimitOptions(p))),
			withHelp(text("auth_header", "Credential header", v.str("auth_header")), "e.g. Authorization; empty for none (on an edit, empty drops the credential)."),
			{Name: "auth_secret", Label: "Credential value", Kind: "secret", Help: secretHelp},
			withHelp(text("auth_secret_ref", "Or an environment variable", v.str("auth_secret_ref")), "env:NAME, read by every pod instead of a sealed value."),
			checkbox("enabled", "Enabled", en),
		}, nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.McpServerCreate{Slug: v.str("slug"), Name: v.optStr("name"), URL: v.str("url"), Enabled: v.onPtr("enabled"),
			TimeoutMs: v.optInt32("timeout_ms"), RateLimitID: v.optID("rate_limit_id"), AuthHeader: v.optStr("auth_header"),
			AuthSecret: v.optStr("auth_secret"), AuthSecretRef: v.optStr("auth_secret_ref")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/mcp-servers", b); err != nil {
			return err
		}
		_, err := success[gen.CreateMcpServer201JSONResponse](h.api.CreateMcpServer(p.ctx, gen.CreateMcpServerRequestObject{Body: &b}))
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := success[gen.GetMcpServer200JSONResponse](h.api.GetMcpServer(p.ctx, gen.GetMcpServerRequestObject{ID: id}))
		if err != nil {
			return nil, err
		}
		ref := ""
		if x.AuthSecretRef != nil {
			ref = *x.AuthSecretRef
		}
		return url.Values{"slug": {x.Slug}, "name": {x.Name}, "url": {x.URL}, "timeout_ms": {strconv.Itoa(int(x.TimeoutMs))},
			"rate_limit_id": {idStr(x.RateLimitID)}, "auth_header": {x.AuthHeader}, "auth_secret_ref": {ref}, "enabled": {onOff(x.Enabled)}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name, u, header := v.str("slug"), v.str("name"), v.str("url"), v.str("auth_header")
		b := models.McpServerUpdate{Slug: &slug, Name: &name, URL: &u, Enabled: v.onPtr("enabled"), TimeoutMs: v.optInt32("timeout_ms"),
			RateLimitID: relaynull.FromPointer(v.optID("rate_limit_id")), AuthHeader: &header, AuthSecret: v.optStr("auth_secret"), AuthSecretRef: v.optStr("auth_secret_ref")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/mcp-servers/"+id.String(), b); err != nil {
			return err
		}
		_, err := success[gen.UpdateMcpServer200JSONResponse](h.api.UpdateMcpServer(p.ctx, gen.UpdateMcpServerRequestObject{ID: id, Body: &b}))
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		_, err := success[gen.DeleteMcpServer204Response](h.api.DeleteMcpServer(p.ctx, gen.DeleteMcpServerRequestObject{ID: id}))
		return err
	}
	return k
}

// mcpTools lists a server's tools as it lists them now, with their
// approval state; system admins get Approve (the tool as it is now) and
// Withhold (the approval taken back).
func (h *Handler) mcpTools(p *page) {
	id, ok := pathID(p)
	if !ok {
		return
	}
	srv, err := success[gen.GetMcpServer200JSONResponse](h.api.GetMcpServer(p.ctx, gen.GetMcpServerRequestObject{ID: id}))
	if err != nil {
		h.failErr(p, err)
		return
	}
	l, err := success[gen.ListMcpServerTools200JSONResponse](h.api.ListMcpServerTools(p.ctx, gen.ListMcpServerToolsRequestObject{ID: id}))
	if err != nil {
		h.failErr(p, err)
		return
	}
	canWrite := manageSystem(p.who)
	t := table{Columns: []column{{Title: "Tool"}, {Title: "Callers see"}, {Title: "State"}, {Title: "Description"}, {Title: "Fingerprint"}},
		Empty: "The server lists no tools."}
	base := "/mcp-servers/" + id.String() + "/tools/"
	for _, x := range l.Items {
		r := row{ID: x.Name, Cells: []cell{{Text: x.Name, Mono: true}, {Text: x.NamespacedName, Mono: true}, toolState(x.State),
			{Text: x.Description}, {Text: fingerprint(x.Fingerprint), Mono: true}}}
		if canWrite {
			if x.State != models.McpToolStateApproved {
				r.Actions = append(r.Actions, rowAction{Href: base + url.PathEscape(x.Name) + "/approve?" + url.Values{"fingerprint": {x.Fingerprint}}.Encode(),
					Label: "Approve"})
			}
			if x.ApprovedFingerprint != nil {
				r.Actions = append(r.Actions, rowAction{Href: base + url.PathEscape(x.Name) + "/withhold", Label: "Withhold", Danger: true,
					Confirm: "Withhold " + x.NamespacedName + " until it is approved again?"})
			}
		}
		t.Rows = append(t.Rows, r)
	}
	v := listView{Title: "Tools of " + srv.Slug, CSRF: p.who.CSRFToken, Href: "/mcp-servers/" + id.String() + "/tools", Table: t}
	p.render(http.StatusOK, v.Title, "mcp-servers", listPage(v))
}

func toolState(s models.McpToolState) cell {
	switch s {
	case models.McpToolStateApproved:
		return cell{Text: "approved", Badge: "ok"}
	case models.McpToolStateChanged:
		return cell{Text: "changed: withheld", Badge: "warn"}
	}
	return cell{Text: "new", Badge: "warn"}
}

// fingerprint is the first 12 characters of a fingerprint.
func fingerprint(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

func (h *Handler) approveMcpTool(p *page) {
	id, ok := pathID(p)
	if !ok {
		return
	}
	tool := p.r.PathValue("tool")
	b := models.McpToolApprovalCreate{Fingerprint: p.r.URL.Query().Get("fingerprint")}
	if err := p.check(h, http.MethodPost, "/api/mcp-servers/"+id.String()+"/tools/"+url.PathEscape(tool)+"/approval", b); err != nil {
		h.failErr(p, err)
		return
	}
	if _, err := success[gen.ApproveMcpTool200JSONResponse](h.api.ApproveMcpTool(p.ctx, gen.ApproveMcpToolRequestObject{ID: id, Tool: tool, Body: &b})); err != nil {
		h.failErr(p, err)
		return
	}
	redirect(p.w, p.r, "/mcp-servers/"+id.String()+"/tools")
}

func (h *Handler) withholdMcpTool(p *page) {
	id, ok := pathID(p)
	if !ok {
		return
	}
	tool := p.r.PathValue("tool")
	if err := p.check(h, http.MethodDelete, "/api/mcp-servers/"+id.String()+"/tools/"+url.PathEscape(tool)+"/approval", nil); err != nil {
		h.failErr(p, err)
		return
	}
	if _, err := success[gen.WithholdMcpTool200JSONResponse](h.api.WithholdMcpTool(p.ctx, gen.WithholdMcpToolRequestObject{ID: id, Tool: tool})); err != nil {
		h.failErr(p, err)
		return
	}
	redirect(p.w, p.r, "/mcp-servers/"+id.String()+"/tools")
}
