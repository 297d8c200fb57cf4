package controlapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/mcpgw"
	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/models"
)

// MCP servers (docs/mcp.md) are catalog rows like hosts: read with
// ReadCatalog, written by system admins. Their credential is write-only,
// sealed as host keys' secrets are. A policy's MCP grants are the policy's
// and follow its write rule (its team, or the system).

func mcpServerOut(r store.MCPServer) models.McpServer {
	src := models.McpServerAuthSecretSourceNone
	switch {
	case r.AuthSecretRef != nil:
		src = models.McpServerAuthSecretSourceEnv
	case len(r.AuthSecretCiphertext) > 0:
		src = models.McpServerAuthSecretSourceSealed
	}
	out := models.McpServer{
		ID: r.ID, Slug: r.Slug, Name: r.Name, URL: r.URL, Enabled: r.Enabled, TimeoutMs: r.TimeoutMs,
		RateLimitID: r.RateLimitID, ToolRateLimits: toolRateLimitsOut(r.ToolRateLimits), CallPrice: r.CallPrice, AuthHeader: r.AuthHeader,
		AuthSecretSource: src, AuthSecretRef: r.AuthSecretRef, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		ToolPrices: models.McpToolPrices{},
	}
	_ = json.Unmarshal(r.ToolPrices, &out.ToolPrices) // an object the API wrote
	if r.OAuthTokenURL != "" {
		o := &models.McpOAuth{TokenURL: r.OAuthTokenURL, ClientID: r.OAuthClientID, ClientSecretRef: r.OAuthClientSecretRef,
			ClientSecretSource: models.McpOAuthClientSecretSourceSealed, Scopes: r.OAuthScopes, Audience: r.OAuthAudience,
			Resource: r.OAuthResource, AuthMethod: models.McpOAuthAuthMethod(r.OAuthAuthMethod)}
		if r.OAuthClientSecretRef != nil {
			o.ClientSecretSource = models.McpOAuthClientSecretSourceEnv
		}
		if o.Scopes == nil {
			o.Scopes = []string{}
		}
		out.Oauth = o
	}
	return out
}

// mcpToolPattern is what a key of tool_prices may be: a tool's name, or a
// glob over names with *.
var mcpToolPattern = regexp.MustCompile(`^[A-Za-z0-9_.*-]{1,128}$`)

// toolPricesIn checks per-tool prices as they will be stored.
func toolPricesIn(in *models.McpToolPrices) (json.RawMessage, error) {
	if in == nil {
		return nil, nil
	}
	for pattern, price := range *in {
		if _, err := path.Match(pattern, ""); err != nil || !mcpToolPattern.MatchString(pattern) {
			return nil, invalid(fmt.Sprintf("tool_prices: %q is not a tool name or glob", pattern), "tool_prices")
		}
		if price < 0 {
			return nil, invalid(fmt.Sprintf("tool_prices: %q has a negative price", pattern), "tool_prices")
		}
	}
	j, err := json.Marshal(*in)
	if err != nil {
		return nil, fmt.Errorf("encode tool prices: %w", err)
	}
	return j, nil
}

// mcpOAuthIn checks OAuth client credentials and writes them on r (nil in:
// none). A client secret left out keeps the one r has (an update of the
// other fields); a server without one needs one. OAuth and a static
// header are exclusive.
func (s *Server) mcpOAuthIn(ctx context.Context, in *models.McpOAuthInput, r *store.MCPServer) error {
	if in == nil {
		r.OAuthTokenURL, r.OAuthClientID, r.OAuthClientSecretRef, r.OAuthClientSecretCiphertext = "", "", nil, nil
		r.OAuthScopes, r.OAuthAudience, r.OAuthResource, r.OAuthAuthMethod = []string{}, "", "", snapshot.MCPOAuthBasic
		return nil
	}
	if r.AuthHeader != "" {
		return invalid("oauth: a server has one credential: OAuth client credentials or auth_header, not both", "oauth")
	}
	if err := s.cfg.Egress.CheckURL(ctx, in.TokenURL, nil); err != nil {
		return invalid("oauth.token_url: "+err.Error(), "oauth.token_url")
	}
	had := r.OAuthTokenURL != "" && (r.OAuthClientSecretRef != nil || len(r.OAuthClientSecretCiphertext) > 0)
	if in.ClientSecret != nil || in.ClientSecretRef != nil || !had {
		ref, sealed, err := s.sealSecret(in.ClientSecret, in.ClientSecretRef, true)
		if err != nil {
			return renamed(err, "oauth.client_secret")
		}
		r.OAuthClientSecretRef, r.OAuthClientSecretCiphertext = ref, sealed
	}
	r.OAuthTokenURL, r.OAuthClientID = in.TokenURL, in.ClientID
	r.OAuthScopes = deref(in.Scopes, []string{})
	r.OAuthAudience, r.OAuthResource = deref(in.Audience, ""), deref(in.Resource, "")
	r.OAuthAuthMethod = string(deref(in.AuthMethod, models.McpOAuthAuthMethodClientSecretBasic))
	return nil
}

// renamed is a secret's validation error (sealSecret names secret and
// secret_ref) as the field name says.
func renamed(err error, field string) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusUnprocessableEntity {
		return invalid(field+": "+ae.message, field)
	}
	return err
}

// toolRateLimitsOut is a row's per-tool rate limits as the API shows them
// (the column is an object the API wrote, so it decodes).
func toolRateLimitsOut(j json.RawMessage) models.McpToolRateLimits {
	out := models.McpToolRateLimits{}
	_ = json.Unmarshal(j, &out)
	return out
}

// mcpToolName is what a tool's name may be (mcp_tool_approvals.tool).
var mcpToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// toolRateLimitsIn checks per-tool rate limits as they will be stored:
// tool names a server may use, rate limits that exist.
func (s *Server) toolRateLimitsIn(ctx context.Context, in *models.McpToolRateLimits) (json.RawMessage, error) {
	if in == nil {
		return nil, nil
	}
	for tool, id := range *in {
		if !mcpToolName.MatchString(tool) {
			return nil, invalid(fmt.Sprintf("tool_rate_limits: %q is not a tool name", tool), "tool_rate_limits")
		}
		if err := got(s.st.RateLimits().Get(ctx, id)).exists("tool_rate_limits", "rate limit"); err != nil {
			return nil, err
		}
	}
	j, err := json.Marshal(*in)
	if err != nil {
		return nil, fmt.Errorf("encode tool rate limits: %w", err)
	}
	return j, nil
}

// mcpAuthIn checks a server's credential fields as they will be stored: a
// header with exactly one of a value or a reference, or no header and neither.
func (s *Server) mcpAuthIn(header string, value, ref *string) (*string, []byte, error) {
	if header == "" {
		if value != nil || ref != nil {
			return nil, nil, invalid("auth_secret: a credential needs auth_header", "auth_header")
		}
		return nil, nil, nil
	}
	if http.CanonicalHeaderKey(header) == "Host" || strings.EqualFold(header, "content-length") {
		return nil, nil, invalid("auth_header: not a credential header", "auth_header")
	}
	return s.sealSecret(value, ref, true)
}

// ListMcpServers is the operation of the same name in openapi/control.yaml.
func (v *Service) ListMcpServers(ctx context.Context, params models.ListMcpServersParams) (out models.McpServerList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListMcpServers")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	_, ok, err := systemList(ctx, rbac.ReadCatalog)
	if err != nil || !ok {
		return models.McpServerList{Items: []models.McpServer{}}, err
	}
	rows, err := s.st.MCPServers().List(ctx, store.Page{After: after, Limit: fetch})
	if err != nil {
		return out, err
	}
	rows, next := cut(rows, fetch, func(r store.MCPServer) uuid.UUID { return r.ID })
	return models.McpServerList{Items: convertAll(rows, mcpServerOut), NextCursor: next}, nil
}

// CreateMcpServer is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateMcpServer(ctx context.Context, body *models.McpServerCreate) (out models.McpServer, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateMcpServer")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := systemWrite(ctx)
	if err != nil {
		return out, err
	}
	b := body
	if err := s.checkMCPURL(ctx, b.URL); err != nil {
		return out, err
	}
	header := deref(b.AuthHeader, "")
	ref, sealed, err := s.mcpAuthIn(header, b.AuthSecret, b.AuthSecretRef)
	if err != nil {
		return out, err
	}
	if b.RateLimitID != nil {
		if err := got(s.st.RateLimits().Get(ctx, *b.RateLimitID)).exists("rate_limit_id", "rate limit"); err != nil {
			return out, err
		}
	}
	toolLimits, err := s.toolRateLimitsIn(ctx, b.ToolRateLimits)
	if err != nil {
		return out, err
	}
	prices, err := toolPricesIn(b.ToolPrices)
	if err != nil {
		return out, err
	}
	in := store.MCPServer{
		Slug: b.Slug, Name: deref(b.Name, ""), URL: b.URL, Enabled: deref(b.Enabled, true),
		TimeoutMs: deref(b.TimeoutMs, 60000), RateLimitID: b.RateLimitID, ToolRateLimits: toolLimits, ToolPrices: prices,
		CallPrice: deref(b.CallPrice, 0), AuthHeader: header, AuthSecretRef: ref, AuthSecretCiphertext: sealed,
	}
	if err := s.mcpOAuthIn(ctx, b.Oauth, &in); err != nil {
		return out, err
	}
	row, err := s.st.MCPServers().Create(ctx, c.actor, in)
	if err != nil {
		return out, err
	}
	return mcpServerOut(row), nil
}

// checkMCPURL is checkBaseURL for a server's URL, naming url.
func (s *Server) checkMCPURL(ctx context.Context, raw string) error {
	if err := s.cfg.Egress.CheckURL(ctx, raw, nil); err != nil {
		return invalid("url: "+err.Error(), "url")
	}
	return nil
}

func (s *Server) mcpServerRow(ctx context.Context, id uuid.UUID, write bool) (*caller, store.MCPServer, error) {
	return systemRow(ctx, "mcp server", rbac.ReadCatalog, write, func() (store.MCPServer, error) { return s.st.MCPServers().Get(ctx, id) })
}

// GetMcpServer is the operation of the same name in openapi/control.yaml.
func (v *Service) GetMcpServer(ctx context.Context, id uuid.UUID) (out models.McpServer, err error) {
	s, ctx, done, err := v.enter(ctx, "GetMcpServer")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := s.mcpServerRow(ctx, id, false)
	if err != nil {
		return out, err
	}
	return mcpServerOut(row), nil
}

// UpdateMcpServer is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateMcpServer(ctx context.Context, id uuid.UUID, body *models.McpServerUpdate) (out models.McpServer, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateMcpServer")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := s.mcpServerRow(ctx, id, true)
	if err != nil {
		return out, err
	}
	b := body
	if b.URL != nil {
		if err := s.checkMCPURL(ctx, *b.URL); err != nil {
			return out, err
		}
	}
	if id, ok := b.RateLimitID.Get(); ok {
		if err := got(s.st.RateLimits().Get(ctx, id)).exists("rate_limit_id", "rate limit"); err != nil {
			return out, err
		}
	}
	toolLimits, err := s.toolRateLimitsIn(ctx, b.ToolRateLimits)
	if err != nil {
		return out, err
	}
	prices, err := toolPricesIn(b.ToolPrices)
	if err != nil {
		return out, err
	}
	row, err := s.st.MCPServers().Modify(ctx, c.actor, id, func(r *store.MCPServer) error {
		if toolLimits != nil {
			r.ToolRateLimits = toolLimits
		}
		if prices != nil {
			r.ToolPrices = prices
		}
		if err := s.mcpAuthUpdate(b, r); err != nil {
			return err
		}
		if b.Oauth.IsSpecified() {
			return s.mcpOAuthIn(ctx, b.Oauth.Pointer(), r) // null takes it off
		}
		if r.OAuthTokenURL != "" && r.AuthHeader != "" {
			return invalid("oauth: a server has one credential: OAuth client credentials or auth_header, not both; set oauth to null first", "oauth")
		}
		return nil
	})
	if row, err = found("mcp server", row, err); err != nil {
		return out, err
	}
	return mcpServerOut(row), nil
}

// mcpAuthUpdate applies an update's plain fields and static credential to r.
func (s *Server) mcpAuthUpdate(b *models.McpServerUpdate, r *store.MCPServer) error {
	set(&r.Slug, b.Slug)
	set(&r.Name, b.Name)
	set(&r.URL, b.URL)
	set(&r.Enabled, b.Enabled)
	set(&r.TimeoutMs, b.TimeoutMs)
	set(&r.CallPrice, b.CallPrice)
	if b.RateLimitID.IsSpecified() {
		r.RateLimitID = b.RateLimitID.Pointer() // null takes it off
	}
	if b.AuthHeader == nil && b.AuthSecret == nil && b.AuthSecretRef == nil {
		return nil
	}
	header := deref(b.AuthHeader, r.AuthHeader)
	if header != "" && b.AuthSecret == nil && b.AuthSecretRef == nil {
		if b.AuthHeader != nil && *b.AuthHeader != r.AuthHeader {
			return invalid("auth_header: a new header needs auth_secret or auth_secret_ref", "auth_header")
		}
		r.AuthHeader = header // the same header, the same credential
		return nil
	}
	ref, sealed, err := s.mcpAuthIn(header, b.AuthSecret, b.AuthSecretRef)
	if err != nil {
		return err
	}
	r.AuthHeader, r.AuthSecretRef, r.AuthSecretCiphertext = header, ref, sealed
	return nil
}

// DeleteMcpServer is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteMcpServer(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteMcpServer")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := s.mcpServerRow(ctx, id, true)
	if err != nil {
		return err
	}
	if _, err := found("mcp server", struct{}{}, s.st.MCPServers().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// ListMcpServerTools is the operation of the same name in openapi/control.yaml: the server's tools
// as it lists them now, each with its approval state.
func (v *Service) ListMcpServerTools(ctx context.Context, id uuid.UUID) (out models.McpToolList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListMcpServerTools")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := s.mcpServerRow(ctx, id, false)
	if err != nil {
		return out, err
	}
	srv := mcpgw.Server{URL: row.URL, AuthHeader: row.AuthHeader, Timeout: msDuration(row.TimeoutMs)}
	if row.AuthHeader != "" {
		v, err := s.cfg.Box.Resolve(row.AuthSecretRef, row.AuthSecretCiphertext, os.Getenv)
		if err != nil {
			return out, &apiError{status: http.StatusBadGateway, code: codeBadGateway, message: "mcp server " + row.Slug + ": its credential cannot be resolved"}
		}
		srv.AuthValue = v
	}
	if row.OAuthTokenURL != "" {
		v, err := s.cfg.Box.Resolve(row.OAuthClientSecretRef, row.OAuthClientSecretCiphertext, os.Getenv)
		if err != nil {
			return out, &apiError{status: http.StatusBadGateway, code: codeBadGateway, message: "mcp server " + row.Slug + ": its oauth client secret cannot be resolved"}
		}
		srv.OAuth = mcpgw.OAuth{TokenURL: row.OAuthTokenURL, ClientID: row.OAuthClientID, ClientSecret: v,
			Scopes: strings.Join(row.OAuthScopes, " "), Audience: row.OAuthAudience, Resource: row.OAuthResource,
			Post: row.OAuthAuthMethod == snapshot.MCPOAuthPost}
	}
	tools, err := mcpgw.Discover(ctx, s.cfg.Egress, srv)
	if err != nil {
		s.log.WarnContext(ctx, "mcp server did not list its tools", "mcp_server", row.Slug, "err", err)
		return out, &apiError{status: http.StatusBadGateway, code: codeBadGateway, message: "mcp server " + row.Slug + " did not list its tools"}
	}
	approvals, err := s.st.MCPServers().Approvals(ctx, row.ID)
	if err != nil {
		return out, err
	}
	m := &snapshot.MCPServer{Approved: map[string]string{}}
	for _, a := range approvals {
		m.Approved[a.Tool] = a.Fingerprint
	}
	items := make([]models.McpTool, 0, len(tools))
	for _, t := range tools {
		fp := mcpgw.Fingerprint(t)
		mt := models.McpTool{
			Name: t.Name, NamespacedName: row.Slug + snapshot.MCPToolSeparator + t.Name, Description: t.Description,
			Fingerprint: fp, State: models.McpToolState(m.ToolState(t.Name, fp).String()),
		}
		if a, ok := m.Approved[t.Name]; ok {
			mt.ApprovedFingerprint = &a
		}
		items = append(items, mt)
	}
	slices.SortFunc(items, func(a, b models.McpTool) int { return strings.Compare(a.Name, b.Name) })
	return models.McpToolList{Items: items}, nil
}

// ApproveMcpTool is the operation of the same name in openapi/control.yaml.
func (v *Service) ApproveMcpTool(ctx context.Context, id uuid.UUID, tool string, body *models.McpToolApprovalCreate) (out models.McpToolApproval, err error) {
	s, ctx, done, err := v.enter(ctx, "ApproveMcpTool")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, row, err := s.mcpServerRow(ctx, id, true)
	if err != nil {
		return out, err
	}
	a, err := s.st.MCPServers().Approve(ctx, c.actor, row.ID, tool, body.Fingerprint)
	if err != nil {
		return out, err
	}
	return mcpToolApprovalOut(a), nil
}

// WithholdMcpTool is the operation of the same name in openapi/control.yaml: the tool's approval is
// taken back and answered (404 when it has none).
func (v *Service) WithholdMcpTool(ctx context.Context, id uuid.UUID, tool string) (out models.McpToolApproval, err error) {
	s, ctx, done, err := v.enter(ctx, "WithholdMcpTool")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, row, err := s.mcpServerRow(ctx, id, true)
	if err != nil {
		return out, err
	}
	a, err := s.st.MCPServers().Withhold(ctx, c.actor, row.ID, tool)
	if a, err = found("tool approval", a, err); err != nil {
		return out, err
	}
	return mcpToolApprovalOut(a), nil
}

// SetPolicyMcpGrants is the operation of the same name in openapi/control.yaml.
func (v *Service) SetPolicyMcpGrants(ctx context.Context, id uuid.UUID, body *models.PolicyMcpGrants) (out models.PolicyMcpGrants, err error) {
	s, ctx, done, err := v.enter(ctx, "SetPolicyMcpGrants")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := s.policyRow(ctx, id, true)
	if err != nil {
		return out, err
	}
	grants := slices.Clone(body.Grants)
	for _, g := range grants {
		srv, tool, _ := strings.Cut(g, snapshot.MCPToolSeparator)
		if _, err := path.Match(srv, ""); err != nil || srv == "" {
			return out, invalid("grants: "+g+" is not a server pattern", "grants")
		}
		if _, err := path.Match(tool, ""); err != nil {
			return out, invalid("grants: "+g+" is not a tool pattern", "grants")
		}
	}
	if grants == nil {
		grants = []string{}
	}
	row, err := s.st.SetPolicyMCP(ctx, c.actor, id, grants, deref(body.RequireApproval, false))
	if row, err = found("policy", row, err); err != nil {
		return out, err
	}
	ra := row.MCPRequireApproval
	return models.PolicyMcpGrants{Grants: row.MCPGrants, RequireApproval: &ra}, nil
}

// mcpToolApprovalOut is a tool's approval as the API shows it.
func mcpToolApprovalOut(a store.MCPToolApproval) models.McpToolApproval {
	return models.McpToolApproval{
		McpServerID: a.MCPServerID, Tool: a.Tool, Fingerprint: a.Fingerprint, ApprovedBy: a.ApprovedBy, UpdatedAt: a.UpdatedAt,
	}
}

// codeBadGateway is the code of an upstream Relay asked for the caller
// (an MCP server) that did not answer usably.
const codeBadGateway = "bad_gateway"

func msDuration(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
