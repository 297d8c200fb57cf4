package controlapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"
	"github.com/relay-llm/relay/openapi/nullable"
)

// OAuth client credentials round-trip through the API without their
// secret (sealed at once, shown only as its source), exclude a static
// header (422 naming oauth), keep the stored secret on an update that
// leaves it out, and "oauth": null takes them off.
func TestMcpServer_OAuthClientCredentials(t *testing.T) {
	b := setup(t)
	ctx, c := b.ctx, b.admin
	const secret = "oauth-client-secret-never-returned"
	v, scopes := secret, []string{"tools.read"}
	in := models.McpOAuthInput{TokenURL: "https://127.0.0.1:9/token", ClientID: "relay", ClientSecret: &v, Scopes: &scopes}
	r := call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "oa", URL: mockMCPServer(t), Oauth: &in})).want(t, http.StatusCreated)
	created := *r.JSON201
	o := created.Oauth
	if o == nil || o.TokenURL != in.TokenURL || o.ClientID != "relay" || o.ClientSecretSource != models.McpOAuthClientSecretSourceSealed ||
		strings.Join(o.Scopes, " ") != "tools.read" || o.AuthMethod != models.McpOAuthAuthMethodClientSecretBasic || created.AuthHeader != "" {
		t.Fatalf("created = %+v (oauth %+v)", created, o)
	}
	got := call(c.GetMcpServerWithResponse(ctx, created.ID)).want(t, http.StatusOK)
	for _, raw := range [][]byte{r.Body, got.Body} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("the client secret is in a response: %s", raw)
		}
	}
	// One credential: a header beside OAuth is refused, at create and update.
	h, hv := "Authorization", "Bearer x"
	call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "both", URL: mockMCPServer(t), Oauth: &in, AuthHeader: &h, AuthSecret: &hv})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "oauth")
	call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{AuthHeader: &h, AuthSecret: &hv})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "oauth")
	// No client secret at all is refused naming it.
	call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "nosecret", URL: mockMCPServer(t),
		Oauth: &models.McpOAuthInput{TokenURL: in.TokenURL, ClientID: "relay"}})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "oauth.client_secret")
	// An update without a secret keeps the stored one; a ref replaces it.
	post := models.McpOAuthAuthMethodClientSecretPost
	upd := *call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{
		Oauth: nullable.Value(models.McpOAuthInput{TokenURL: in.TokenURL, ClientID: "relay-2", AuthMethod: &post})})).want(t, http.StatusOK).JSON200
	if upd.Oauth == nil || upd.Oauth.ClientID != "relay-2" || upd.Oauth.ClientSecretSource != models.McpOAuthClientSecretSourceSealed || upd.Oauth.AuthMethod != post {
		t.Fatalf("updated = %+v", upd.Oauth)
	}
	ref := "env:MCP_CLIENT_SECRET"
	upd = *call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{
		Oauth: nullable.Value(models.McpOAuthInput{TokenURL: in.TokenURL, ClientID: "relay", ClientSecretRef: &ref})})).want(t, http.StatusOK).JSON200
	if upd.Oauth == nil || upd.Oauth.ClientSecretSource != models.McpOAuthClientSecretSourceEnv || *upd.Oauth.ClientSecretRef != ref {
		t.Fatalf("updated to a ref = %+v", upd.Oauth)
	}
	upd = *call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{Oauth: nullable.Null[models.McpOAuthInput]()})).want(t, http.StatusOK).JSON200
	if upd.Oauth != nil {
		t.Fatalf(`"oauth": null left %+v`, upd.Oauth)
	}
	// Without OAuth, a static header is allowed again.
	call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{AuthHeader: &h, AuthSecret: &hv})).want(t, http.StatusOK)
}

// Per-tool prices round-trip, an update replaces them, and a key that is
// no tool name or glob is refused naming the field.
func TestMcpServer_ToolPrices(t *testing.T) {
	b := setup(t)
	ctx, c := b.ctx, b.admin
	created := *call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "tp", URL: mockMCPServer(t),
		ToolPrices: &models.McpToolPrices{"lookup": 3000, "get_*": 10}})).want(t, http.StatusCreated).JSON201
	if len(created.ToolPrices) != 2 || created.ToolPrices["lookup"] != 3000 || created.ToolPrices["get_*"] != 10 {
		t.Fatalf("created with tool_prices %v", created.ToolPrices)
	}
	upd := *call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{ToolPrices: &models.McpToolPrices{"x": 1}})).want(t, http.StatusOK).JSON200
	if len(upd.ToolPrices) != 1 || upd.ToolPrices["x"] != 1 {
		t.Fatalf("updated to %v", upd.ToolPrices)
	}
	call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{ToolPrices: &models.McpToolPrices{"no spaces": 1}})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "tool_prices")
	call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{ToolPrices: &models.McpToolPrices{"[": 1}})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "tool_prices")
	plain := *call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "tp-plain", URL: mockMCPServer(t)})).want(t, http.StatusCreated).JSON201
	if plain.ToolPrices == nil || len(plain.ToolPrices) != 0 || plain.Oauth != nil {
		t.Fatalf("a plain server shows tool_prices %v, oauth %v", plain.ToolPrices, plain.Oauth)
	}
}
