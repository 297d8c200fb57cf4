package mcpgw_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-llm/relay/internal/snapshot"
)

// addPromptsAndResources gives a mock server, before anyone connects to it,
// the prompts echo (a tool's name too) and review, the resource
// file:///readme.md and the template file:///notes/{name}, each answer
// naming who (the server's name) answered.
func addPromptsAndResources(m *mockServer, who string) {
	for _, name := range []string{"echo", "review"} {
		m.srv.AddPrompt(&mcp.Prompt{Name: name, Description: "The " + name + " prompt.",
			Arguments: []*mcp.PromptArgument{{Name: "topic"}}},
			func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Description: who, Messages: []*mcp.PromptMessage{{Role: "user",
					Content: &mcp.TextContent{Text: name + " about " + req.Params.Arguments["topic"]}}}}, nil
			})
	}
	m.srv.AddResource(&mcp.Resource{URI: "file:///readme.md", Name: "readme", MIMEType: "text/markdown"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown",
				Text: "# readme of " + who}}}, nil
		})
	m.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///notes/{name}", Name: "notes"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Blob: []byte("note " + who)}}}, nil
		})
}

// promptSetup is newSetup with prompts and resources on the server tools,
// a second server docs (granted to no key but docsKey), and keys whose
// policies grant one tool (toolKey: "tools__echo") or the server by glob
// (globKey: "tools__*").
type promptSetup struct {
	*setup
	docs                      *mockServer
	toolKey, globKey, docsKey string
}

func newPromptSetup(t testing.TB) *promptSetup {
	t.Helper()
	s := &promptSetup{setup: newSetup(t), docs: newMockServer(t), toolKey: "sk-wr-tool", globKey: "sk-wr-glob", docsKey: "sk-wr-docs"}
	addPromptsAndResources(s.mock, "tools")
	addPromptsAndResources(s.docs, "docs")
	s.data.MCPServers = append(s.data.MCPServers, &snapshot.MCPServer{ID: uuid.New(), Slug: "docs", URL: s.docs.url,
		Enabled: true, Usable: true, Timeout: 30 * time.Second, AuthHeader: "Authorization",
		AuthValue: snapshot.NewSecret("Bearer upstream-secret"), Approved: map[string]string{}, UpdatedAt: time.Now()})
	proj := s.data.Projects[0].ID
	for key, grant := range map[string]string{s.toolKey: "tools__echo", s.globKey: "tools__*", s.docsKey: "docs"} {
		pol := &snapshot.Policy{ID: uuid.New(), Slug: "p-" + grant, MCPGrants: []string{grant}}
		s.data.Policies = append(s.data.Policies, pol)
		s.data.RelayKeys = append(s.data.RelayKeys, &snapshot.RelayKey{ID: uuid.New(), Hash: sha256.Sum256([]byte(key)), ProjectID: proj, PolicyID: pol.ID})
	}
	s.snap.Store(snapshot.Build(s.data, s.snap.Load().Version()+1, time.Now()))
	return s
}

func promptNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var out []string
	for _, p := range res.Prompts {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

func resourceURIs(t *testing.T, cs *mcp.ClientSession) (resources, templates string) {
	t.Helper()
	rs, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	ts, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	var r, tt []string
	for _, x := range rs.Resources {
		r = append(r, x.URI)
	}
	for _, x := range ts.ResourceTemplates {
		tt = append(tt, x.URITemplate)
	}
	return strings.Join(r, ","), strings.Join(tt, ",")
}

func TestGateway_InitializeAdvertisesPromptsAndResources(t *testing.T) {
	s := newPromptSetup(t)
	caps := agent(t, s.relay, "/mcp", s.granted).InitializeResult().Capabilities
	if caps.Prompts == nil || caps.Resources == nil || caps.Tools == nil {
		t.Fatalf("capabilities = %+v, want tools, prompts and resources", caps)
	}
	if caps.Resources.Subscribe || caps.Prompts.ListChanged || caps.Resources.ListChanged {
		t.Fatalf("capabilities = %+v: the stateless gateway can neither notify nor subscribe", caps)
	}
}

func TestGateway_ListsAndGetsGrantedPrompts(t *testing.T) {
	s := newPromptSetup(t)
	for key, want := range map[string]string{
		s.granted: "tools__echo,tools__review", // "tools": every prompt of the server
		s.globKey: "tools__echo,tools__review",
		s.toolKey: "tools__echo", // "tools__echo": the tool's grant covers the prompt of its name
		s.docsKey: "docs__echo,docs__review",
		s.other:   "",
	} {
		if got := promptNames(t, agent(t, s.relay, "/mcp", key)); got != want {
			t.Errorf("%s: prompts/list = %q, want %q", key, got, want)
		}
	}
	if got := promptNames(t, agent(t, s.relay, "/mcp/docs", s.granted)); got != "" {
		t.Errorf("/mcp/docs of a key granted tools lists %q", got)
	}
	cs := agent(t, s.relay, "/mcp", s.toolKey)
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "tools__echo", Arguments: map[string]string{"topic": "cats"}})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if res.Description != "tools" || len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "echo about cats" {
		t.Fatalf("prompts/get = %+v, want the server's own answer", res)
	}
	// Not granted, another server's, unknown, malformed: one refusal,
	// shaped as an ungranted tools/call's.
	_, callErr := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tools__review", Arguments: map[string]any{"text": "x"}})
	for _, name := range []string{"tools__review", "docs__echo", "tools__nope", "nope"} {
		_, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: name})
		var got, want *jsonrpc.Error
		if !errors.As(err, &got) || !errors.As(callErr, &want) || got.Code != want.Code || got.Code != jsonrpc.CodeInvalidParams ||
			got.Message != strings.Replace(strings.Replace(want.Message, "unknown tool", "unknown prompt", 1), "tools__review", name, 1) {
			t.Fatalf("prompts/get %s: %v, want the refusal shaped as %v", name, err, callErr)
		}
	}
}

func TestGateway_ListsAndReadsGrantedResources(t *testing.T) {
	s := newPromptSetup(t)
	for key, want := range map[string]string{
		s.granted: "mcp+relay://tools/file:///readme.md",
		s.globKey: "mcp+relay://tools/file:///readme.md",
		s.docsKey: "mcp+relay://docs/file:///readme.md",
		s.toolKey: "", // one tool's grant is not the server's
		s.other:   "",
	} {
		rs, ts := resourceURIs(t, agent(t, s.relay, "/mcp", key))
		wantT := strings.Replace(want, "readme.md", "notes/{name}", 1)
		if rs != want || ts != wantT {
			t.Errorf("%s: resources %q templates %q, want %q and %q", key, rs, ts, want, wantT)
		}
	}
	cs := agent(t, s.relay, "/mcp", s.granted)
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp+relay://tools/file:///readme.md"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	// The contents pass through unaltered, their URI the server's own.
	if len(res.Contents) != 1 || res.Contents[0].Text != "# readme of tools" || res.Contents[0].URI != "file:///readme.md" ||
		res.Contents[0].MIMEType != "text/markdown" {
		t.Fatalf("resources/read = %+v", res.Contents)
	}
	// A template's URI, expanded by the agent, reads through.
	res, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp+relay://tools/file:///notes/a%20b"})
	if err != nil || len(res.Contents) != 1 || string(res.Contents[0].Blob) != "note tools" || res.Contents[0].URI != "file:///notes/a%20b" {
		t.Fatalf("resources/read of a template's URI: %+v %v", res, err)
	}
	// Another server's resource through a grant of tools, the server's
	// own URI, an unknown server, a malformed URI: "Resource not found".
	for _, uri := range []string{"mcp+relay://docs/file:///readme.md", "file:///readme.md", "mcp+relay://nope/file:///readme.md",
		"mcp+relay://tools", "mcp+relay:///file:///readme.md"} {
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message != "Resource not found" {
			t.Fatalf("resources/read %s: %v, want Resource not found", uri, err)
		}
	}
	// One tool's grant reads no resource; /mcp/docs reads nothing of tools.
	for _, c := range []*mcp.ClientSession{agent(t, s.relay, "/mcp", s.toolKey), agent(t, s.relay, "/mcp/docs", s.granted)} {
		if _, err := c.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp+relay://tools/file:///readme.md"}); rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Fatalf("resources/read without the server's grant: %v", err)
		}
	}
}

func TestGateway_HeldServerPromptsAndResources(t *testing.T) {
	s := newPromptSetup(t)
	cs := agent(t, s.relay, "/mcp", s.granted)
	if got := promptNames(t, cs); got != "tools__echo,tools__review" {
		t.Fatalf("before the outage: %q", got)
	}
	s.mock.down.Store(true)
	for i := range 3 {
		_, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "tools__echo"})
		if err == nil || strings.Contains(err.Error(), "held by its breaker") {
			t.Fatalf("get %d in the outage: %v, want the server unavailable", i, err)
		}
	}
	hits := s.mock.hits.Load()
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp+relay://tools/file:///readme.md"})
	if rpcCode(err) != jsonrpc.CodeInternalError || !strings.Contains(err.Error(), "held by its breaker") {
		t.Fatalf("read of a held server: %v, want held", err)
	}
	if got := promptNames(t, cs); got != "" {
		t.Fatalf("prompts/list of a held server: %q", got)
	}
	if rs, ts := resourceURIs(t, cs); rs != "" || ts != "" {
		t.Fatalf("resources of a held server: %q %q", rs, ts)
	}
	if s.mock.hits.Load() != hits {
		t.Fatalf("the held server got %d requests", s.mock.hits.Load()-hits)
	}
	s.mock.down.Store(false)
	s.skew.Store(int64(2 * time.Minute))
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "tools__echo"}); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
}

// Each prompts/get and resources/read is a usage event like a tools/call
// (inbound mcp, the method as its route, the server, the name, status and
// error kind, duration) and a metric; a refused one is recorded under no
// server.
func TestGateway_PromptsAndResourcesRecorded(t *testing.T) {
	s := newPromptSetup(t)
	cs := agent(t, s.relay, "/mcp", s.granted)
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "tools__review", Arguments: map[string]string{"topic": "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp+relay://tools/file:///readme.md"}); err != nil {
		t.Fatal(err)
	}
	_, _ = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "docs__echo"})
	_, _ = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp+relay://docs/file:///readme.md"})
	type row struct{ route, model, server, tool, kind string }
	var got []row
	for _, r := range s.rec.all() {
		if r.Inbound != "mcp" || r.RequestID == "" || r.CredentialKind != snapshot.CredentialRelayKey || r.Total <= 0 && r.Status == 200 {
			t.Errorf("event %+v", r)
		}
		got = append(got, row{r.Route, r.Model, r.HostSlug, r.MCPTool, r.ErrorKind + "/" + strconv.Itoa(r.Status)})
	}
	want := []row{
		{"prompts/get", "tools__review", "tools", "review", "/200"},
		{"resources/read", "mcp+relay://tools/file:///readme.md", "tools", "", "/200"},
		{"prompts/get", "docs__echo", "", "echo", "prompt_not_granted/403"},
		{"resources/read", "mcp+relay://docs/file:///readme.md", "", "", "resource_not_granted/403"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ledger:\n got %+v\nwant %+v", got, want)
	}
	rr := httptest.NewRecorder()
	s.reg.Handler().ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	for _, series := range []string{`mcp_server="tools",status="200",tool="prompts/get review"} 1`, `mcp_server="tools",status="200",tool="resources/read"} 1`,
		`mcp_server="",status="403",tool=""} 2`} {
		if !strings.Contains(rr.Body.String(), series) {
			t.Errorf("metrics lack %s", series)
		}
	}
}
