package clienttest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-llm/relay/internal/mcpgw"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

// TestClaudeCode_MCPThroughRelay runs `claude -p` with an HTTP MCP server
// entry (--mcp-config) pointing at Relay's /mcp, with its relay key. The
// key's policy grants tools__echo of the MCP server and not tools__secret:
// Claude Code is shown echo only, the mock upstream calls it, Claude Code
// calls it through Relay and the server answers; secret never reaches the
// model, and a call of it through the same endpoint is refused.
func TestClaudeCode_MCPThroughRelay(t *testing.T) {
	modules := install(t)
	bin := filepath.Join(modules, "node_modules", ".bin", "claude")
	r, echoed, secret := startMCPRelay(t, "mcp__relay__tools__echo")
	model := modelName(wire.ShapeAnthropic)

	home, dir := t.TempDir(), t.TempDir()
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"relay": map[string]any{
		"type": "http", "url": r.URL + "/mcp", "headers": map[string]string{"Authorization": "Bearer " + relayKey},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(baseEnv(home),
		"ANTHROPIC_BASE_URL="+r.URL,
		"ANTHROPIC_API_KEY="+relayKey,
		"ANTHROPIC_MODEL="+model,
		"ANTHROPIC_SMALL_FAST_MODEL="+model,
		"ANTHROPIC_DEFAULT_HAIKU_MODEL="+model,
		"ANTHROPIC_DEFAULT_SONNET_MODEL="+model,
		"ANTHROPIC_DEFAULT_OPUS_MODEL="+model,
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		// MCP tools are sent to the model with the request, not deferred
		// behind a tool search.
		"ENABLE_TOOL_SEARCH=false",
	)
	out, err := runClient(t, dir, env, agentTimeout, bin, "-p", "--mcp-config", cfgPath, "--strict-mcp-config", "--tools", "",
		"--allowedTools", "mcp__relay__tools__echo", "--", "Echo hello with a tool, then tell me what it said.")
	if err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	if echoed.Load() == 0 {
		t.Fatalf("the granted tool was never called through Relay:\n%s", out)
	}
	if !strings.Contains(out, "The tool returned") {
		t.Fatalf("claude -p did not answer after the MCP tool ran:\n%s", out)
	}
	if secret.Load() != 0 {
		t.Fatal("the non-granted tool was called")
	}
	if strings.Contains(out, "tools__secret") {
		t.Fatalf("the non-granted tool reached Claude Code:\n%s", out)
	}
	refusesSecret(t, r)
}

// TestCodex_MCPThroughRelay runs `codex exec` with a Streamable HTTP MCP
// server entry in its config.toml pointing at Relay's /mcp, the relay key
// read from the environment (bearer_token_env_var), and Relay as its model
// provider. As for Claude Code: Codex is shown tools__echo only, the mock
// upstream calls it, Codex calls it through Relay's /mcp; tools__secret
// never reaches the model, and a direct call of it is refused.
func TestCodex_MCPThroughRelay(t *testing.T) {
	modules := install(t)
	bin := filepath.Join(modules, "node_modules", ".bin", "codex")
	for _, b := range shapes {
		t.Run(string(b.shape), func(t *testing.T) {
			parallel(t)
			codexMCP(t, bin, modelName(b.shape))
		})
	}
}

// codexMCP is one run of TestCodex_MCPThroughRelay against model.
func codexMCP(t *testing.T, bin, model string) {
	// Codex offers an MCP server's tools inside a Responses namespace
	// tool, mcp__<server>, under the tools' own names.
	r, echoed, secret := startMCPRelay(t, "tools__echo")
	home, dir := t.TempDir(), t.TempDir()
	codexHome := codexSetup(t, home, dir, r.URL, model, `
[mcp_servers.relay]
url = "`+r.URL+`/mcp"
bearer_token_env_var = "RELAY_KEY"
# codex exec asks no one: the operator approves the server's tools here.
default_tools_approval_mode = "approve"
`)
	env := append(baseEnv(home), "CODEX_HOME="+codexHome, "RELAY_KEY="+relayKey)
	out, err := runClient(t, dir, env, agentTimeout, bin, "exec", "Echo hello with a tool, then tell me what it said.")
	if err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	if echoed.Load() == 0 {
		t.Fatalf("the granted tool was never called through Relay:\n%s", out)
	}
	if !strings.Contains(out, "The tool returned") {
		t.Fatalf("codex exec did not answer after the MCP tool ran:\n%s", out)
	}
	if secret.Load() != 0 {
		t.Fatal("the non-granted tool was called")
	}
	if strings.Contains(out, "tools__secret") {
		t.Fatalf("the non-granted tool reached Codex:\n%s", out)
	}
	refusesSecret(t, r)
}

// mcpTools counts the calls of the mock MCP server's two tools: echo,
// which a relay key's policy grants, and secret, which it does not.
type mcpTools struct{ echoed, secret atomic.Int64 }

// startMCPRelay starts Relay with its MCP gateway at /mcp in front of a
// mock MCP server "tools" with two tools, echo and secret; the relay key's
// policy grants tools__echo only. preferTools names the granted tool as
// the agent under test presents it to the model (each agent prefixes MCP
// tools its own way), so the mock upstream calls it.
func startMCPRelay(t *testing.T, preferTools ...string) (*relay, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	calls := &mcpTools{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes its text back."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		calls.echoed.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed through relay: " + in.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "secret", Description: "Not granted."}, func(context.Context, *mcp.CallToolRequest, echoArgs) (*mcp.CallToolResult, any, error) {
		calls.secret.Add(1)
		return &mcp.CallToolResult{}, nil, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(up.Close)

	var models []catalogModel
	for _, b := range shapes {
		models = append(models, catalogModel{name: modelName(b.shape), kind: "chat", shape: b.shape, upstream: b.upstream})
	}
	r := startCatalogWith(t, mockupstream.New(mockupstream.Options{ToolsWhenAsked: true}), models, preferTools,
		func(d *snapshot.Data) {
			d.Policies[0].MCPGrants = []string{"tools__echo"}
			d.MCPServers = append(d.MCPServers, &snapshot.MCPServer{ID: uuid.New(), Slug: "tools", URL: up.URL, Enabled: true, Usable: true,
				Timeout: 30 * time.Second, Approved: map[string]string{}, UpdatedAt: time.Now()})
		},
		func(inference http.Handler, snap func() *snapshot.Snapshot) http.Handler {
			gw := mcpgw.New(mcpgw.Config{Snapshot: snap, Log: slog.New(slog.DiscardHandler)})
			t.Cleanup(gw.Close)
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.URL.Path == "/mcp" || strings.HasPrefix(req.URL.Path, "/mcp/") {
					gw.ServeHTTP(w, req)
					return
				}
				inference.ServeHTTP(w, req)
			})
		})
	return r, &calls.echoed, &calls.secret
}

// refusesSecret checks that Relay's /mcp refuses the non-granted tool in
// MCP's error shape, to the official SDK's client.
func refusesSecret(t *testing.T, r *relay) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerKey{relayKey}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tools__secret", Arguments: map[string]any{"text": "x"}}); err == nil ||
		!strings.Contains(err.Error(), "not granted") {
		t.Fatalf("tools__secret: %v, want refused", err)
	}
}

// bearerKey sets a relay key on a client's requests.
type bearerKey struct{ key string }

func (b bearerKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}
