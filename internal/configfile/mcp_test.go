package configfile_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/configfile/configfiletest"
	"github.com/relay-llm/relay/openapi/models"
)

func mcpServers(t *testing.T, srv *configfiletest.Server) map[string]models.McpServer {
	t.Helper()
	r, err := srv.Client.ListMcpServersWithResponse(t.Context(), nil)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("list MCP servers: %v %s", err, r.Body)
	}
	out := map[string]models.McpServer{}
	for _, m := range r.JSON200.Items {
		out[m.Slug] = m
	}
	return out
}

func rateLimitIDs(t *testing.T, srv *configfiletest.Server) map[string]string {
	t.Helper()
	r, err := srv.Client.ListRateLimitsWithResponse(t.Context(), nil)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("list rate limits: %v %s", err, r.Body)
	}
	out := map[string]string{}
	for _, rl := range r.JSON200.Items {
		out[rl.ID.String()] = rl.Slug
	}
	return out
}

// TestApply_MCPServersAreCatalogData: MCP server documents become the
// control API's servers (rate limits by slug, the credential as an env
// reference), the export writes them back, and applying it is a no-op.
func TestApply_MCPServersAreCatalogData(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})

	got := mcpServers(t, srv)
	rls := rateLimitIDs(t, srv)
	gh, docs := got["github"], got["docs"]
	if gh.URL != "https://mcp.example.com/github" || gh.Name != "GitHub" || !gh.Enabled || gh.TimeoutMs != 30000 ||
		gh.RateLimitID == nil || rls[gh.RateLimitID.String()] != "standard" || gh.AuthHeader != "Authorization" ||
		gh.AuthSecretSource != models.McpServerAuthSecretSourceEnv || gh.AuthSecretRef == nil || *gh.AuthSecretRef != "env:GITHUB_MCP_TOKEN" {
		t.Errorf("github = %+v", gh)
	}
	if len(gh.ToolRateLimits) != 2 || rls[gh.ToolRateLimits["create_issue"].String()] != "openai-tier-1" || rls[gh.ToolRateLimits["search_code"].String()] != "standard" {
		t.Errorf("github tool rate limits = %v", gh.ToolRateLimits)
	}
	if docs.Enabled || docs.TimeoutMs != 60000 || docs.AuthSecretSource != models.McpServerAuthSecretSourceNone || docs.RateLimitID != nil {
		t.Errorf("docs = %+v", docs)
	}

	out := export(t, srv)
	want := "kind: MCPServer\nspec:\n  slug: github\n  name: GitHub\n  url: https://mcp.example.com/github\n  timeout_ms: 30000\n" +
		"  rate_limit: standard\n  tool_rate_limits:\n    create_issue: openai-tier-1\n    search_code: standard\n" +
		"  auth_header: Authorization\n  auth_secret_ref: env:GITHUB_MCP_TOKEN\n---\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "kind: MCPServer\nspec:\n  slug: docs\n  url: http://10.0.0.5:8080/mcp\n  enabled: false\n") {
		t.Errorf("export lacks the MCP servers:\n%s", out)
	}
	// MCP servers come after host keys and before the policies that grant them.
	if h, m, p := strings.Index(out, "kind: HostKey\n"), strings.Index(out, "kind: MCPServer\n"), strings.Index(out, "kind: Policy\n"); !(h < m && m < p) {
		t.Errorf("kinds out of order: HostKey at %d, MCPServer at %d, Policy at %d", h, m, p)
	}
	if p := plan(t, srv, parse(t, out), configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("re-applying the export changes something:\n%s", printed(t, p))
	}
}

// TestApply_MCPServerUpdatesAndPrune: a changed server is one PATCH with
// only what changed, a credential on a new header goes with it, and
// --prune deletes the servers the files leave out.
func TestApply_MCPServerUpdatesAndPrune(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	before := srv.AuditRows(t)

	docs := parse(t, `
kind: MCPServer
spec:
  slug: github
  name: GitHub
  url: https://mcp.example.com/github
  timeout_ms: 10000
  rate_limit: standard
  tool_rate_limits: {create_issue: standard}
  auth_header: X-Token
  auth_secret_ref: env:GITHUB_MCP_TOKEN_2
`)
	p := apply(t, srv, docs, configfile.Options{Prune: true})
	want := "~ update MCPServer github (timeout_ms: 30000 → 10000, tool_rate_limits: {create_issue: openai-tier-1, search_code: standard} → {create_issue: standard}, " +
		"auth_header: Authorization → X-Token, auth_secret_ref: env:GITHUB_MCP_TOKEN → env:GITHUB_MCP_TOKEN_2)\n" +
		"- delete MCPServer docs\n" +
		"plan: 0 to create, 1 to update, 1 to delete\n"
	if got := printed(t, p); got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	if n := srv.AuditRows(t) - before; n != 2 {
		t.Errorf("%d audit rows; want 2 (one PATCH, one delete)", n)
	}
	got := mcpServers(t, srv)
	if _, ok := got["docs"]; ok || len(got) != 1 {
		t.Errorf("servers after the prune: %v", got)
	}
	if gh := got["github"]; gh.AuthHeader != "X-Token" || gh.AuthSecretRef == nil || *gh.AuthSecretRef != "env:GITHUB_MCP_TOKEN_2" || len(gh.ToolRateLimits) != 1 {
		t.Errorf("github = %+v", gh)
	}
	if p := plan(t, srv, docs, configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("not converged:\n%s", printed(t, p))
	}
	// No header: the credential goes.
	bare := parse(t, "kind: MCPServer\nspec: {slug: github, name: GitHub, url: https://mcp.example.com/github, timeout_ms: 10000, rate_limit: standard, tool_rate_limits: {create_issue: standard}}\n")
	apply(t, srv, bare, configfile.Options{})
	if gh := mcpServers(t, srv)["github"]; gh.AuthHeader != "" || gh.AuthSecretSource != models.McpServerAuthSecretSourceNone {
		t.Errorf("the credential stayed: %+v", gh)
	}
	if p := plan(t, srv, bare, configfile.Options{}); !p.Empty() {
		t.Errorf("not converged:\n%s", printed(t, p))
	}
}

// TestExport_SealedMCPCredentialIsNeverWritten: a literal auth_secret needs
// --allow-secrets, is sealed, never appears in an export (a comment and a
// warning instead), and the export re-applies as a no-op.
func TestExport_SealedMCPCredentialIsNeverWritten(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	docs := parse(t, "kind: MCPServer\nspec: {slug: gh, url: https://mcp.example.com/gh, auth_header: Authorization, auth_secret: Bearer ghp-very-secret-value}\n")
	if _, err := configfile.NewPlan(t.Context(), srv.Client, docs, configfile.Options{}); err == nil ||
		!strings.Contains(err.Error(), "test.yaml:1 (line 1) MCPServer gh: auth_secret: a literal secret in a file is refused") {
		t.Fatalf("a literal secret without --allow-secrets: err = %v", err)
	}
	apply(t, srv, docs, configfile.Options{AllowSecrets: true})
	if gh := mcpServers(t, srv)["gh"]; gh.AuthSecretSource != models.McpServerAuthSecretSourceSealed {
		t.Fatalf("gh = %+v", gh)
	}

	var out bytes.Buffer
	warnings, err := configfile.Export(t.Context(), srv.Client, &out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "ghp-very-secret-value") || strings.Contains(out.String(), "auth_secret:") {
		t.Fatalf("export leaks the credential:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "# The credential of this MCP server is sealed") || len(warnings) != 1 || !strings.Contains(warnings[0], "MCPServer gh") {
		t.Errorf("want a comment and one warning; warnings %q\n%s", warnings, out.String())
	}
	if p := plan(t, srv, parse(t, out.String()), configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("re-applying the export changes something:\n%s", printed(t, p))
	}
	// The same literal again replaces nothing: a sealed value is never compared.
	if p := plan(t, srv, docs, configfile.Options{AllowSecrets: true}); !p.Empty() {
		t.Errorf("a literal over a sealed credential changes something:\n%s", printed(t, p))
	}
	_, err = configfile.NewPlan(t.Context(), configfiletest.New(t).Client, parse(t, out.String()), configfile.Options{})
	if err == nil || !strings.Contains(err.Error(), "MCPServer gh: auth_header: a new MCP server's credential needs auth_secret_ref") {
		t.Errorf("into an empty control plane: err = %v", err)
	}
}

// TestPlan_BadMCPServersNameTheDocument: what the format, the references
// and the API's schema rule out fails the plan naming the document and the
// field, and what the control API cannot do (a new header without its
// credential) is refused before anything is written.
func TestPlan_BadMCPServersNameTheDocument(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	before := srv.AuditRows(t)
	tests := []struct{ name, text, want string }{
		{"required", "kind: MCPServer\nspec: {slug: x}\n", "test.yaml:1 (line 1) MCPServer x: slug, url is required"},
		{"pattern", "kind: MCPServer\nspec: {slug: Bad_Slug, url: https://mcp.example.com}\n", "MCPServer Bad_Slug: slug: string doesn't match the regular expression"},
		{"url", "kind: MCPServer\nspec: {slug: x, url: ftp://mcp.example.com}\n", "MCPServer x: url: string doesn't match the regular expression"},
		{"both secrets", "kind: MCPServer\nspec: {slug: x, url: https://a.example, auth_header: A, auth_secret_ref: env:A, auth_secret: b}\n", "MCPServer x: give only one of auth_secret_ref, auth_secret"},
		{"secret without header", "kind: MCPServer\nspec: {slug: x, url: https://a.example, auth_secret_ref: env:A}\n", "MCPServer x: auth_header: a credential needs the header"},
		{"unknown rate limit", "kind: MCPServer\nspec: {slug: x, url: https://a.example, tool_rate_limits: {lookup: gold}}\n", "MCPServer x: tool_rate_limits.lookup: no RateLimit \"gold\" in the files or in Relay"},
		{"header without credential", "kind: MCPServer\nspec: {slug: github, url: https://mcp.example.com/github, rate_limit: standard, auth_header: X-Other}\n",
			"MCPServer github: auth_header: a new header needs its credential"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := configfile.Parse("test.yaml", []byte(tt.text))
			if err == nil {
				_, err = configfile.NewPlan(t.Context(), srv.Client, docs, configfile.Options{})
			}
			var de *configfile.DocError
			if err == nil || !errors.As(err, &de) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want a DocError with %q", err, tt.want)
			}
		})
	}
	// The API's own rule on references: env:RELAY_MASTER_KEY is refused at apply.
	docs := parse(t, "kind: MCPServer\nspec: {slug: stolen, url: https://a.example, auth_header: Authorization, auth_secret_ref: env:RELAY_MASTER_KEY}\n")
	if _, err := plan(t, srv, docs, configfile.Options{}).Apply(t.Context()); err == nil || !strings.Contains(err.Error(), "test.yaml:1 (line 1) MCPServer stolen: ") || !strings.Contains(err.Error(), "secret_ref") {
		t.Errorf("env:RELAY_MASTER_KEY: err = %v", err)
	}
	if n := srv.AuditRows(t) - before; n != 0 {
		t.Errorf("bad documents wrote %d audit rows", n)
	}
}

// TestApply_PolicyMCPGrantsRoundTrip: a policy's mcp block reaches the
// policy, is compared with the policy's mcp_grants and mcp_require_approval
// (a re-apply is a no-op that writes no audit row, a change shows old and
// new), export writes it and re-applying the export is a no-op, and a
// document without the block withdraws the grants, as leaving out
// response_cache turns the cache off.
func TestApply_PolicyMCPGrantsRoundTrip(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	grants := func() ([]string, bool) {
		t.Helper()
		p, err := srv.Store.Policies().GetBySlug(t.Context(), "everything")
		if err != nil {
			t.Fatal(err)
		}
		return p.MCPGrants, p.MCPRequireApproval
	}
	const pol = "kind: Policy\nspec:\n  slug: everything\n  all_models: true\n  all_host_keys: true\n  limiter_failure_mode: closed\n  route_strategy: cost\n  affinity: binding\n"
	withMCP := parse(t, pol+"  mcp: {grants: [github, docs__search*], require_approval: true}\n")
	p := apply(t, srv, withMCP, configfile.Options{})
	if got := printed(t, p); !strings.Contains(got, "~ update Policy everything (") ||
		!strings.Contains(got, "mcp: null → [github, docs__search*] requiring approval)\n") {
		t.Errorf("plan:\n%s", got)
	}
	if g, ra := grants(); strings.Join(g, ",") != "github,docs__search*" || !ra {
		t.Errorf("grants = %v, require_approval %v", g, ra)
	}

	// The same block again: nothing to do, nothing written.
	before := srv.AuditRows(t)
	if p := apply(t, srv, withMCP, configfile.Options{}); !p.Empty() {
		t.Errorf("re-applying the same grants changes something:\n%s", printed(t, p))
	}
	if n := srv.AuditRows(t) - before; n != 0 {
		t.Errorf("re-applying the same grants wrote %d audit rows", n)
	}

	// Export writes the block, and applying the export changes nothing.
	var out bytes.Buffer
	warnings, err := configfile.Export(t.Context(), srv.Client, &out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "  mcp:\n    grants:\n      - github\n      - docs__search*\n    require_approval: true\n") ||
		strings.Contains(strings.Join(warnings, "\n"), "MCP grants") {
		t.Errorf("warnings %q\n%s", warnings, out.String())
	}
	if p := plan(t, srv, parse(t, out.String()), configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("re-applying the export changes something:\n%s", printed(t, p))
	}

	// A change shows what Relay has and what the document wants.
	p = apply(t, srv, parse(t, pol+"  mcp: {grants: [github]}\n"), configfile.Options{})
	if got := printed(t, p); !strings.Contains(got, "mcp: [github, docs__search*] requiring approval → [github])\n") {
		t.Errorf("plan:\n%s", got)
	}
	if g, ra := grants(); strings.Join(g, ",") != "github" || ra {
		t.Errorf("grants = %v, require_approval %v", g, ra)
	}

	// Without the block (the fixture's own document): the grants are withdrawn.
	p = apply(t, srv, load(t, fixture), configfile.Options{})
	if got := printed(t, p); !strings.Contains(got, "mcp: [github] → null)\n") {
		t.Errorf("plan:\n%s", got)
	}
	if g, ra := grants(); len(g) != 0 || ra {
		t.Errorf("a document without mcp left grants %v, require_approval %v", g, ra)
	}
	// An empty list is the same as no block: nothing to do.
	apply(t, srv, parse(t, pol), configfile.Options{})
	if p := plan(t, srv, parse(t, pol+"  mcp: {grants: []}\n"), configfile.Options{}); !p.Empty() {
		t.Errorf("mcp: {grants: []} over no grants changes something:\n%s", printed(t, p))
	}

	for _, bad := range []string{"grants: ['gh/x']", "grants: ['__tool']"} {
		docs, err := configfile.Parse("test.yaml", []byte(pol+"  mcp: {"+bad+"}\n"))
		if err == nil || !strings.Contains(err.Error(), "test.yaml:1 (line 1) Policy everything: mcp.grants.0: ") {
			t.Errorf("%s: docs %v, err = %v", bad, docs, err)
		}
	}
}

// TestApply_MCPServerRateLimitComesOff: a document that drops an MCP
// server's rate_limit takes it off the server ("rate_limit_id": null),
// and applying it again is a no-op.
func TestApply_MCPServerRateLimitComesOff(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	apply(t, srv, load(t, fixture), configfile.Options{})
	if gh := mcpServers(t, srv)["github"]; gh.RateLimitID == nil {
		t.Fatalf("the fixture's github server has no rate limit: %+v", gh)
	}
	const doc = "kind: MCPServer\nspec: {slug: github, name: GitHub, url: https://mcp.example.com/github, timeout_ms: 30000, " +
		"tool_rate_limits: {create_issue: openai-tier-1, search_code: standard}, auth_header: Authorization, auth_secret_ref: env:GITHUB_MCP_TOKEN}\n"
	p := apply(t, srv, parse(t, doc), configfile.Options{})
	if got := printed(t, p); !strings.Contains(got, "~ update MCPServer github (rate_limit: standard → \"\")") {
		t.Errorf("plan:\n%s", got)
	}
	gh := mcpServers(t, srv)["github"]
	if gh.RateLimitID != nil || len(gh.ToolRateLimits) != 2 || gh.AuthHeader != "Authorization" {
		t.Errorf("github = %+v", gh)
	}
	if p := plan(t, srv, parse(t, doc), configfile.Options{}); !p.Empty() {
		t.Errorf("re-applying changes something:\n%s", printed(t, p))
	}
}

// An MCP server's OAuth client credentials and tool prices round-trip
// through apply and export (the client secret as its env reference),
// re-applying the export is a no-op, a literal client secret is refused
// without --allow-secrets and, sealed, never exported, and a document
// without oauth takes it off.
func TestApply_MCPServerOAuthAndToolPrices(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	const doc = "kind: MCPServer\nspec:\n  slug: lin\n  url: https://mcp.example.com/lin\n  tool_prices: {search: 2000, \"get_*\": 5}\n" +
		"  oauth: {token_url: https://auth.example.com/token, client_id: relay, client_secret_ref: env:LIN_SECRET, scopes: [read, write], auth_method: client_secret_post}\n"
	apply(t, srv, parse(t, doc), configfile.Options{})
	lin := mcpServers(t, srv)["lin"]
	if o := lin.Oauth; o == nil || o.ClientID != "relay" || *o.ClientSecretRef != "env:LIN_SECRET" || strings.Join(o.Scopes, " ") != "read write" ||
		o.AuthMethod != models.McpOAuthAuthMethodClientSecretPost || lin.ToolPrices["search"] != 2000 || lin.ToolPrices["get_*"] != 5 {
		t.Fatalf("lin = %+v oauth %+v", lin, lin.Oauth)
	}
	var out bytes.Buffer
	if _, err := configfile.Export(t.Context(), srv.Client, &out, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "client_secret_ref: env:LIN_SECRET") {
		t.Fatalf("export lacks the reference:\n%s", out.String())
	}
	if p := plan(t, srv, parse(t, out.String()), configfile.Options{Prune: true}); !p.Empty() {
		t.Errorf("re-applying the export changes something:\n%s", printed(t, p))
	}

	const secret = "lin-client-secret-literal"
	literal := strings.Replace(doc, "client_secret_ref: env:LIN_SECRET", "client_secret: "+secret, 1)
	if _, err := configfile.NewPlan(t.Context(), srv.Client, parse(t, literal), configfile.Options{}); err == nil ||
		!strings.Contains(err.Error(), "oauth.client_secret: a literal secret in a file is refused") {
		t.Fatalf("a literal client secret without --allow-secrets: %v", err)
	}
	p := plan(t, srv, parse(t, literal), configfile.Options{AllowSecrets: true})
	if s := printed(t, p); strings.Contains(s, secret) || !strings.Contains(s, "(sealed)") {
		t.Fatalf("the plan shows the literal:\n%s", s)
	}
	apply(t, srv, parse(t, literal), configfile.Options{AllowSecrets: true})
	if o := mcpServers(t, srv)["lin"].Oauth; o == nil || o.ClientSecretSource != models.McpOAuthClientSecretSourceSealed {
		t.Fatalf("after the literal: %+v", o)
	}
	out.Reset()
	warnings, err := configfile.Export(t.Context(), srv.Client, &out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), secret) || len(warnings) != 1 || !strings.Contains(warnings[0], "sealed oauth client secret not exported") {
		t.Fatalf("export of a sealed client secret: warnings %q\n%s", warnings, out.String())
	}
	if p := plan(t, srv, parse(t, literal), configfile.Options{AllowSecrets: true}); !p.Empty() {
		t.Errorf("the same literal over a sealed secret changes something:\n%s", printed(t, p))
	}

	apply(t, srv, parse(t, "kind: MCPServer\nspec: {slug: lin, url: https://mcp.example.com/lin}\n"), configfile.Options{})
	if lin := mcpServers(t, srv)["lin"]; lin.Oauth != nil || len(lin.ToolPrices) != 0 {
		t.Fatalf("a document without oauth and tool_prices left %+v, %v", lin.Oauth, lin.ToolPrices)
	}
	both := "kind: MCPServer\nspec: {slug: x, url: https://mcp.example.com/x, auth_header: Authorization, auth_secret_ref: env:X, oauth: {token_url: https://a.example.com/t, client_id: c, client_secret_ref: env:Y}}\n"
	if _, err := configfile.Parse("test.yaml", []byte(both)); err == nil || !strings.Contains(err.Error(), "oauth: a server has one credential") {
		t.Fatalf("both credentials: %v", err)
	}
}
