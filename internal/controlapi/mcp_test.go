package controlapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-llm/relay/openapi/models"
	"github.com/relay-llm/relay/openapi/nullable"
)

type lookupIn struct {
	Q string `json:"q"`
}

// mockMCPServer is a real MCP server (the SDK's, over Streamable HTTP)
// with one tool, for the operations that discover tools.
func mockMCPServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "acc-tools", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Looks a thing up."}, func(context.Context, *mcp.CallToolRequest, lookupIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// A server's per-tool rate limits round-trip through the API, an update
// replaces them, and an unknown rate limit or a name no tool may have is
// refused naming the field.
func TestMcpServer_ToolRateLimits(t *testing.T) {
	b := setup(t)
	ctx, c := b.ctx, b.admin
	rl := b.rateLimit("tool-rl")
	created := *call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "tl", URL: mockMCPServer(t),
		ToolRateLimits: &models.McpToolRateLimits{"lookup": rl.ID}})).want(t, http.StatusCreated).JSON201
	if got := created.ToolRateLimits; len(got) != 1 || got["lookup"] != rl.ID {
		t.Fatalf("created with tool_rate_limits %v", got)
	}
	got := *call(c.GetMcpServerWithResponse(ctx, created.ID)).want(t, http.StatusOK).JSON200
	if got.ToolRateLimits["lookup"] != rl.ID {
		t.Fatalf("read back %v", got.ToolRateLimits)
	}
	upd := *call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{
		ToolRateLimits: &models.McpToolRateLimits{"other.tool": rl.ID}})).want(t, http.StatusOK).JSON200
	if len(upd.ToolRateLimits) != 1 || upd.ToolRateLimits["other.tool"] != rl.ID {
		t.Fatalf("updated to %v", upd.ToolRateLimits)
	}
	call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{
		ToolRateLimits: &models.McpToolRateLimits{"lookup": uuid.New()}})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "tool_rate_limits")
	call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{
		ToolRateLimits: &models.McpToolRateLimits{"no spaces": rl.ID}})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "tool_rate_limits")
	plain := *call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "plain", URL: mockMCPServer(t)})).want(t, http.StatusCreated).JSON201
	if plain.ToolRateLimits == nil || len(plain.ToolRateLimits) != 0 {
		t.Fatalf("a server without tool limits shows %v, want {}", plain.ToolRateLimits)
	}
}

// A server's price per call round-trips through the API (0 when not
// given), an update changes it, and a negative price is refused naming the
// field.
func TestMcpServer_CallPrice(t *testing.T) {
	b := setup(t)
	ctx, c := b.ctx, b.admin
	price := models.McpCallPrice(2500)
	created := *call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "priced", URL: mockMCPServer(t),
		CallPrice: &price})).want(t, http.StatusCreated).JSON201
	if created.CallPrice != 2500 {
		t.Fatalf("created with call_price %d, want 2500", created.CallPrice)
	}
	price = 10
	upd := *call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{CallPrice: &price})).want(t, http.StatusOK).JSON200
	if upd.CallPrice != 10 {
		t.Fatalf("updated to %d, want 10", upd.CallPrice)
	}
	if got := *call(c.GetMcpServerWithResponse(ctx, created.ID)).want(t, http.StatusOK).JSON200; got.CallPrice != 10 {
		t.Fatalf("read back %d, want 10", got.CallPrice)
	}
	price = -1
	call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{CallPrice: &price})).wantErr(t, http.StatusBadRequest, "invalid_request", "call_price")
	plain := *call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "free", URL: mockMCPServer(t)})).want(t, http.StatusCreated).JSON201
	if plain.CallPrice != 0 {
		t.Fatalf("a server without a price shows %d, want 0", plain.CallPrice)
	}
}

// A server's rate limit is left alone by an update that does not name it,
// replaced by one that names another, and taken off by "rate_limit_id":
// null; an unknown one is refused naming the field.
func TestMcpServer_RateLimitNullTakesItOff(t *testing.T) {
	b := setup(t)
	ctx, c := b.ctx, b.admin
	rl, other := b.rateLimit("srv-rl"), b.rateLimit("srv-rl-2")
	created := *call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "limited", URL: mockMCPServer(t),
		RateLimitID: &rl.ID})).want(t, http.StatusCreated).JSON201
	if created.RateLimitID == nil || *created.RateLimitID != rl.ID {
		t.Fatalf("created with rate_limit_id %v, want %s", created.RateLimitID, rl.ID)
	}
	name := "Renamed"
	upd := *call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{Name: &name})).want(t, http.StatusOK).JSON200
	if upd.RateLimitID == nil || *upd.RateLimitID != rl.ID {
		t.Fatalf("an update without rate_limit_id left %v, want %s", upd.RateLimitID, rl.ID)
	}
	upd = *call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{RateLimitID: nullable.Value(other.ID)})).want(t, http.StatusOK).JSON200
	if upd.RateLimitID == nil || *upd.RateLimitID != other.ID {
		t.Fatalf("updated to rate_limit_id %v, want %s", upd.RateLimitID, other.ID)
	}
	call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{RateLimitID: nullable.Value(uuid.New())})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "rate_limit_id")
	upd = *call(c.UpdateMcpServerWithResponse(ctx, created.ID, models.McpServerUpdate{RateLimitID: nullable.Null[uuid.UUID]()})).want(t, http.StatusOK).JSON200
	if upd.RateLimitID != nil {
		t.Fatalf(`"rate_limit_id": null left %s`, *upd.RateLimitID)
	}
	got := *call(c.GetMcpServerWithResponse(ctx, created.ID)).want(t, http.StatusOK).JSON200
	if got.RateLimitID != nil || got.Name != name {
		t.Fatalf("read back rate_limit_id %v, name %q", got.RateLimitID, got.Name)
	}
}
