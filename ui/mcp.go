package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

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
		l, err := h.svc.ListMcpServers(p.ctx, models.ListMcpServersParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			cred := string(x.AuthSecretSource)
			if x.AuthHeader != "" {
				cred = x.AuthHeader + " (" + cred + ")"
			}
			if x.Oauth != nil {
				cred = "OAuth " + x.Oauth.ClientID + " (" + string(x.Oauth.ClientSecretSource) + ")"
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
			withHelp(text("oauth_token_url", "Or OAuth: token URL", v.str("oauth_token_url")),
				"OAuth client credentials instead of a header: Relay fetches a bearer token here (client_credentials grant). Empty for none (on an edit, empty takes them off)."),
			text("oauth_client_id", "OAuth client ID", v.str("oauth_client_id")),
			{Name: "oauth_client_secret", Label: "OAuth client secret", Kind: "secret", Help: oauthHelp(editing)},
			withHelp(text("oauth_client_secret_ref", "Or an environment variable", v.str("oauth_client_secret_ref")), "env:NAME holding the client secret."),
			withHelp(text("oauth_scopes", "OAuth scopes", v.str("oauth_scopes")), "Space-separated."),
			text("oauth_audience", "OAuth audience", v.str("oauth_audience")),
			withHelp(text("oauth_resource", "OAuth resource", v.str("oauth_resource")), "RFC 8707's resource indicator, if the token endpoint wants one."),
			selectOf("oauth_auth_method", "OAuth client authentication", v.str("oauth_auth_method"),
				enumOptions(string(models.McpOAuthAuthMethodClientSecretBasic), string(models.McpOAuthAuthMethodClientSecretPost))),
			withHelp(text("tool_prices", "Tool prices", v.str("tool_prices")),
				"tool=micro-units a call, space-separated; a name or a glob (search_*), over the server's price."),
			checkbox("enabled", "Enabled", en),
		}, nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.McpServerCreate{Slug: v.str("slug"), Name: v.optStr("name"), URL: v.str("url"), Enabled: v.onPtr("enabled"),
			TimeoutMs: v.optInt32("timeout_ms"), RateLimitID: v.optID("rate_limit_id"), AuthHeader: v.optStr("auth_header"),
			AuthSecret: v.optStr("auth_secret"), AuthSecretRef: v.optStr("auth_secret_ref"), Oauth: mcpOAuthIn(v), ToolPrices: mcpToolPricesIn(v)}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/mcp-servers", b); err != nil {
			return err
		}
		_, err := h.svc.CreateMcpServer(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetMcpServer(p.ctx, id)
		if err != nil {
			return nil, err
		}
		ref := ""
		if x.AuthSecretRef != nil {
			ref = *x.AuthSecretRef
		}
		out := url.Values{"slug": {x.Slug}, "name": {x.Name}, "url": {x.URL}, "timeout_ms": {strconv.Itoa(int(x.TimeoutMs))},
			"rate_limit_id": {idStr(x.RateLimitID)}, "auth_header": {x.AuthHeader}, "auth_secret_ref": {ref}, "enabled": {onOff(x.Enabled)},
			"tool_prices": {toolPricesText(x.ToolPrices)}}
		if o := x.Oauth; o != nil {
			out.Set("oauth_token_url", o.TokenURL)
			out.Set("oauth_client_id", o.ClientID)
			if o.ClientSecretRef != nil {
				out.Set("oauth_client_secret_ref", *o.ClientSecretRef)
			}
			out.Set("oauth_scopes", strings.Join(o.Scopes, " "))
			out.Set("oauth_audience", o.Audience)
			out.Set("oauth_resource", o.Resource)
			out.Set("oauth_auth_method", string(o.AuthMethod))
		}
		return out, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name, u, header := v.str("slug"), v.str("name"), v.str("url"), v.str("auth_header")
		b := models.McpServerUpdate{Slug: &slug, Name: &name, URL: &u, Enabled: v.onPtr("enabled"), TimeoutMs: v.optInt32("timeout_ms"),
			RateLimitID: relaynull.FromPointer(v.optID("rate_limit_id")), AuthHeader: &header, AuthSecret: v.optStr("auth_secret"), AuthSecretRef: v.optStr("auth_secret_ref"),
			Oauth: relaynull.FromPointer(mcpOAuthIn(v)), ToolPrices: mcpToolPricesIn(v)}
		if b.ToolPrices == nil {
			b.ToolPrices = &models.McpToolPrices{} // an empty field takes the prices off
		}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/mcp-servers/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateMcpServer(p.ctx, id, &b)
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		return h.svc.DeleteMcpServer(p.ctx, id)
	}
	return k
}

func oauthHelp(editing bool) string {
	if editing {
		return "Leave empty to keep the stored client secret."
	}
	return "Sealed at once; it is never shown again."
}

// mcpOAuthIn is the form's OAuth client credentials, nil without a token URL.
func mcpOAuthIn(v *vals) *models.McpOAuthInput {
	u := v.str("oauth_token_url")
	if u == "" {
		return nil
	}
	in := &models.McpOAuthInput{TokenURL: u, ClientID: v.str("oauth_client_id"), ClientSecret: v.optStr("oauth_client_secret"),
		ClientSecretRef: v.optStr("oauth_client_secret_ref"), Audience: v.optStr("oauth_audience"), Resource: v.optStr("oauth_resource")}
	if sc := strings.Fields(v.str("oauth_scopes")); len(sc) > 0 {
		in.Scopes = &sc
	}
	if m := v.str("oauth_auth_method"); m != "" {
		am := models.McpOAuthAuthMethod(m)
		in.AuthMethod = &am
	}
	return in
}

// mcpToolPricesIn reads "tool=price …" (micro-units), nil when empty.
func mcpToolPricesIn(v *vals) *models.McpToolPrices {
	fs := strings.Fields(strings.ReplaceAll(v.str("tool_prices"), ",", " "))
	if len(fs) == 0 {
		return nil
	}
	out := models.McpToolPrices{}
	for _, f := range fs {
		name, price, ok := strings.Cut(f, "=")
		n, err := strconv.ParseInt(price, 10, 64)
		if !ok || name == "" || err != nil || n < 0 {
			v.errs["tool_prices"] = "write tool=micro-units, e.g. search=1500 get_*=10"
			return nil
		}
		out[name] = n
	}
	return &out
}

// toolPricesText is a server's tool prices as the form writes them.
func toolPricesText(tp models.McpToolPrices) string {
	names := make([]string, 0, len(tp))
	for n := range tp {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.FormatInt(tp[n], 10)
	}
	return strings.Join(parts, " ")
}

// mcpTools lists a server's tools as it lists them now, with their
// approval state; system admins get Approve (the tool as it is now) and
// Withhold (the approval taken back).
func (h *Handler) mcpTools(p *page) {
	id, ok := pathID(p)
	if !ok {
		return
	}
	srv, err := h.svc.GetMcpServer(p.ctx, id)
	if err != nil {
		h.failErr(p, err)
		return
	}
	l, err := h.svc.ListMcpServerTools(p.ctx, id)
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
	if _, err := h.svc.ApproveMcpTool(p.ctx, id, tool, &b); err != nil {
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
	if _, err := h.svc.WithholdMcpTool(p.ctx, id, tool); err != nil {
		h.failErr(p, err)
		return
	}
	redirect(p.w, p.r, "/mcp-servers/"+id.String()+"/tools")
}
