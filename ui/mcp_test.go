package ui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type lookupIn struct {
	Q string `json:"q"`
}

// mcpServer is a real MCP server (the SDK's, over Streamable HTTP) with
// one tool, for the tools page's discovery.
func mcpServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "console-tools", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Looks a thing up."}, func(context.Context, *mcp.CallToolRequest, lookupIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

var approveAction = regexp.MustCompile(`action="(/mcp-servers/[^"]+/approve\?fingerprint=[0-9a-f]+)"`)

// TestConsole_MCPServers: an admin makes an MCP server in the console (its
// credential sealed and never rendered), edits it, opens its tools (asked
// of the server now) and approves and withholds a tool; a viewer sees the
// lists without New, Edit, Approve or Withhold, and a forced approve is
// refused by the API with nothing changed.
func TestConsole_MCPServers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	b.user("vic@example.com", "viewer")
	br := b.signedIn("ada@example.com")
	must(t, br.get("/mcp-servers/new"), http.StatusOK, "Credential header", `name="auth_secret"`)
	// A bad URL is the API's message in place, with what was typed kept.
	must(t, br.post("/mcp-servers", url.Values{"slug": {"docs"}, "url": {"ftp://nowhere"}, "enabled": {"on"}}), http.StatusBadRequest, `value="ftp://nowhere"`, "this is not in the expected form")
	u := mcpServer(t)
	a := br.post("/mcp-servers", url.Values{"slug": {"docs"}, "name": {"Docs"}, "url": {u}, "enabled": {"on"},
		"auth_header": {"Authorization"}, "auth_secret": {"Bearer sk-console-mcp-secret"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	list := br.get("/mcp-servers")
	must(t, list, http.StatusOK, "docs", "Authorization (sealed)", "New MCP server", "Tools")
	servers := b.apiCall("GET", "/api/mcp-servers", nil)["items"].([]any)
	id := servers[0].(map[string]any)["id"].(string)
	edit := br.get("/mcp-servers/" + id)
	must(t, edit, http.StatusOK, `value="Authorization"`, "Leave empty to keep")
	mustNot(t, edit, "sk-console-mcp-secret")
	// Saving without a new value keeps the credential.
	if a := br.post("/mcp-servers/"+id, url.Values{"slug": {"docs"}, "name": {"Docs v2"}, "url": {u}, "enabled": {"on"}, "auth_header": {"Authorization"}}); a.status != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", a.status, a.body)
	}
	if got := b.apiCall("GET", "/api/mcp-servers/"+id, nil); got["name"] != "Docs v2" || got["auth_secret_source"] != "sealed" {
		t.Fatalf("after edit: %v", got)
	}

	tools := br.get("/mcp-servers/" + id + "/tools")
	must(t, tools, http.StatusOK, "Tools of docs", "docs__lookup", "new", "Approve")
	mustNot(t, tools, "Withhold")
	m := approveAction.FindStringSubmatch(tools.body)
	if m == nil {
		t.Fatalf("no approve button: %s", tools.body)
	}
	approve := strings.ReplaceAll(m[1], "&amp;", "&")

	// The viewer: no buttons, and a forced approve changes nothing.
	vic := b.signedIn("vic@example.com")
	vl := vic.get("/mcp-servers")
	must(t, vl, http.StatusOK, "docs")
	mustNot(t, vl, "New MCP server", ">Edit<")
	vt := vic.get("/mcp-servers/" + id + "/tools")
	must(t, vt, http.StatusOK, "docs__lookup")
	mustNot(t, vt, "Approve", "Withhold")
	must(t, vic.post(approve, url.Values{}), http.StatusForbidden)
	must(t, br.get("/mcp-servers/"+id+"/tools"), http.StatusOK, "Approve")

	if a := br.post(approve, url.Values{}); a.status != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	tools = br.get("/mcp-servers/" + id + "/tools")
	must(t, tools, http.StatusOK, "approved", "Withhold")
	mustNot(t, tools, ">Approve<")
	must(t, vic.post("/mcp-servers/"+id+"/tools/lookup/withhold", url.Values{}), http.StatusForbidden)
	if a := br.post("/mcp-servers/"+id+"/tools/lookup/withhold", url.Values{}); a.status != http.StatusSeeOther {
		t.Fatalf("withhold: %d %s", a.status, a.body)
	}
	must(t, br.get("/mcp-servers/"+id+"/tools"), http.StatusOK, ">Approve<")
	// Without the CSRF token nothing happens.
	must(t, br.post(approve, url.Values{"csrf": {"forged"}}), http.StatusForbidden)
	must(t, br.get("/mcp-servers/"+id+"/tools"), http.StatusOK, ">Approve<")

	if a := br.post("/mcp-servers/"+id+"/delete", url.Values{}); a.status != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	must(t, br.get("/mcp-servers"), http.StatusOK, "No MCP servers yet.")
}

// An MCP server with OAuth client credentials and tool prices, made and
// edited in the console: the client secret sealed and never rendered, the
// list naming the credential, an edit without the secret keeping it, and an
// empty token URL taking the credentials off.
func TestConsole_MCPServerOAuthAndToolPrices(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")
	must(t, br.get("/mcp-servers/new"), http.StatusOK, `name="oauth_token_url"`, `name="oauth_client_secret"`, `name="tool_prices"`)
	must(t, br.post("/mcp-servers", url.Values{"slug": {"bad"}, "url": {mcpServer(t)}, "tool_prices": {"nope"}}), http.StatusUnprocessableEntity, "write tool=micro-units")
	form := url.Values{"slug": {"lin"}, "url": {mcpServer(t)}, "enabled": {"on"}, "oauth_token_url": {"https://127.0.0.1:9/token"},
		"oauth_client_id": {"relay"}, "oauth_client_secret": {"console-oauth-secret"}, "oauth_scopes": {"read write"},
		"oauth_auth_method": {"client_secret_post"}, "tool_prices": {"search=1500 get_*=10"}}
	if a := br.post("/mcp-servers", form); a.status != http.StatusSeeOther {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	list := br.get("/mcp-servers")
	must(t, list, http.StatusOK, "OAuth relay (sealed)")
	srv := b.apiCall("GET", "/api/mcp-servers", nil)["items"].([]any)[0].(map[string]any)
	id := srv["id"].(string)
	if o := srv["oauth"].(map[string]any); o["auth_method"] != "client_secret_post" || o["client_id"] != "relay" {
		t.Fatalf("oauth = %v", o)
	}
	if tp := srv["tool_prices"].(map[string]any); tp["search"] != float64(1500) || tp["get_*"] != float64(10) {
		t.Fatalf("tool_prices = %v", tp)
	}
	edit := br.get("/mcp-servers/" + id)
	must(t, edit, http.StatusOK, `value="https://127.0.0.1:9/token"`, `value="get_*=10 search=1500"`, "Leave empty to keep the stored client secret")
	mustNot(t, edit, "console-oauth-secret")
	mustNot(t, list, "console-oauth-secret")
	form.Del("oauth_client_secret")
	form.Set("oauth_client_id", "relay-2")
	if a := br.post("/mcp-servers/"+id, form); a.status != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", a.status, a.body)
	}
	srv = b.apiCall("GET", "/api/mcp-servers/"+id, nil)
	if o := srv["oauth"].(map[string]any); o["client_id"] != "relay-2" || o["client_secret_source"] != "sealed" {
		t.Fatalf("after the edit: %v", o)
	}
	form.Set("oauth_token_url", "")
	form.Set("tool_prices", "")
	if a := br.post("/mcp-servers/"+id, form); a.status != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", a.status, a.body)
	}
	srv = b.apiCall("GET", "/api/mcp-servers/"+id, nil)
	if srv["oauth"] != nil || len(srv["tool_prices"].(map[string]any)) != 0 {
		t.Fatalf("an empty token URL and prices left %v, %v", srv["oauth"], srv["tool_prices"])
	}
}
