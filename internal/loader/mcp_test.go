package loader

import (
	"context"
	"strings"
	"testing"
)

// An MCP server's OAuth client credentials and tool prices reach the
// snapshot: the sealed client secret opened, the prices sorted for
// PriceOf; an env reference that does not resolve makes the server
// unusable, saying why without a secret.
func TestLoader_MCPServerOAuthAndToolPrices(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sealed, err := b.box.Seal("mcp-client-secret")
	if err != nil {
		t.Fatal(err)
	}
	b.exec(t, `INSERT INTO mcp_servers (slug, url, call_price, tool_prices, oauth_token_url, oauth_client_id, oauth_client_secret_ciphertext, oauth_scopes, oauth_audience, oauth_auth_method)
VALUES ('lin', 'https://mcp.example/mcp', 7, '{"get_*": 2, "get_issue": 3}', 'https://auth.example/token', 'relay', $1::bytea, '{read,write}', 'aud', 'client_secret_post')`, sealed)
	b.exec(t, `INSERT INTO mcp_servers (slug, url, oauth_token_url, oauth_client_id, oauth_client_secret_ref)
VALUES ('env', 'https://mcp.example/env', 'https://auth.example/token', 'relay', 'env:LOADER_MCP_MISSING')`)
	l := New(b.st, b.box, quiet(), Options{})
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := l.Current().MCPServerBySlug("lin")
	o := m.OAuth
	if !m.Usable || o == nil || o.TokenURL != "https://auth.example/token" || o.ClientID != "relay" || o.ClientSecret.Reveal() != "mcp-client-secret" ||
		strings.Join(o.Scopes, " ") != "read write" || o.Audience != "aud" || o.AuthMethod != "client_secret_post" {
		t.Fatalf("lin = %+v, oauth %+v", m, o)
	}
	if m.PriceOf("get_issue") != 3 || m.PriceOf("get_repo") != 2 || m.PriceOf("search") != 7 {
		t.Fatalf("prices %+v", m.ToolPrices)
	}
	if e := l.Current().MCPServerBySlug("env"); e.Usable || !strings.Contains(e.Problem, "LOADER_MCP_MISSING") {
		t.Fatalf("an unresolvable client secret: %+v", e)
	}
}
