package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/redistest"
	"github.com/relay-llm/relay/internal/store"
)

// mcpEchoArgs are the arguments of the mock MCP server's echo tool.
type mcpEchoArgs struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

// TestMultipod_MCPGateway runs the MCP gateway on three `relay serve`
// processes sharing Postgres and Redis, with the official SDK's client as
// the agent and a load balancer that is not sticky: every request of one
// MCP session goes to the next pod. A tool limited to 5 calls an hour is
// called 12 times across the pods: exactly 5 reach the server, 7 are
// refused in MCP's error shape, and the ledger holds all 12 exactly. The
// server sees its own credential, never the caller's relay key.
func TestMultipod_MCPGateway(t *testing.T) {
	const limit, calls = 5, 12
	var echoed atomic.Int64
	var mu sync.Mutex
	var sawAuth []string // the Authorization headers the MCP server got
	srv := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes its text back."}, func(_ context.Context, _ *mcp.CallToolRequest, in mcpEchoArgs) (*mcp.CallToolResult, any, error) {
		echoed.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "secret", Description: "Not granted."}, func(context.Context, *mcp.CallToolRequest, mcpEchoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sawAuth = append(sawAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)

	c := newCluster(t, 3, redistest.URL(t), "100ms")
	c.apply(fmt.Sprintf("kind: RateLimit\nspec:\n  slug: mcp-five\n  rules:\n    - {meter: requests, amount: %d, window_seconds: 3600}\n", limit))
	control := c.pods[0].control
	rateLimit := findID(t, control, "/api/rate-limits", "mcp-five")
	policy := findID(t, control, "/api/policies", "open")
	body, _ := json.Marshal(map[string]any{"slug": "tools", "url": up.URL, "tool_rate_limits": map[string]string{"echo": rateLimit},
		"auth_header": "Authorization", "auth_secret": "Bearer mcp-server-own-secret"})
	if status, b := e2eDo(t, "POST", control+"/api/mcp-servers", string(body)); status != 201 {
		t.Fatalf("create the MCP server: %d %s", status, b)
	}
	if status, b := e2eDo(t, "POST", control+"/api/policies/"+policy+"/mcp", `{"grants":["tools__echo"]}`); status != 200 {
		t.Fatalf("grant tools__echo: %d %s", status, b)
	}
	key := c.mint("load")

	// Every pod follows the catalog: each lists the granted tool alone.
	for _, p := range c.pods {
		poll.Until(t, 15*time.Second, p.inference+" lists tools__echo", func() bool {
			names, err := mcpToolNames(p.inference, key)
			return err == nil && strings.Join(names, ",") == "tools__echo"
		})
	}

	// One session, every request on the next pod.
	var pods []string
	for _, p := range c.pods {
		pods = append(pods, p.inference)
	}
	rr := &roundRobin{key: key, pods: pods}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: pods[0] + "/mcp",
		HTTPClient: &http.Client{Transport: rr}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	ok, limited := 0, 0
	for i := range calls {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tools__echo", Arguments: map[string]any{"text": fmt.Sprint(i)}})
		switch {
		case err == nil && !res.IsError:
			ok++
		case err != nil && strings.Contains(err.Error(), "retry after"):
			limited++
		default:
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tools__secret", Arguments: map[string]any{"text": "x"}}); err == nil || !strings.Contains(err.Error(), "not granted") {
		t.Fatalf("tools__secret: %v, want refused", err)
	}
	if ok != limit || limited != calls-limit || echoed.Load() != limit {
		t.Fatalf("%d calls across 3 pods: %d answered, %d limited, %d reached the server; want %d, %d, %d",
			calls, ok, limited, echoed.Load(), limit, calls-limit, limit)
	}
	if rr.served() < 3 {
		t.Fatalf("the session's requests did not spread over the pods: %v", rr.counts)
	}
	mu.Lock()
	for _, a := range sawAuth {
		if a != "Bearer mcp-server-own-secret" {
			t.Errorf("the MCP server got Authorization %q, want its own credential", a)
		}
	}
	mu.Unlock()

	// The ledger: every call, exactly, from whichever pod served it.
	st, err := store.Open(context.Background(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	poll.Until(t, 20*time.Second, "the ledger holds every tools/call", func() bool {
		var answered, refused, other int
		err := st.Pool().QueryRow(context.Background(), `SELECT
			count(*) FILTER (WHERE status = 200 AND model = 'tools__echo'),
			count(*) FILTER (WHERE status = 429 AND model = 'tools__echo' AND error_kind = 'rate_limited'),
			count(*) FILTER (WHERE status NOT IN (200, 429) OR model <> 'tools__echo')
			FROM usage_events WHERE inbound_shape = 'mcp'`).Scan(&answered, &refused, &other)
		if err != nil {
			t.Fatal(err)
		}
		if answered > limit || refused > calls-limit {
			t.Fatalf("the ledger holds %d answered and %d limited calls, more than made (%d, %d)", answered, refused, limit, calls-limit)
		}
		return answered == limit && refused == calls-limit && other == 1 // the refused tools__secret
	})
}

// roundRobin sends each request to the next pod with the relay key: a load
// balancer that is not sticky.
type roundRobin struct {
	key  string
	pods []string

	mu     sync.Mutex
	next   int
	counts map[string]int // guarded by mu
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	rr.mu.Lock()
	pod := rr.pods[rr.next%len(rr.pods)]
	rr.next++
	if rr.counts == nil {
		rr.counts = map[string]int{}
	}
	rr.counts[pod]++
	rr.mu.Unlock()
	u, err := url.Parse(pod)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = u.Host, u.Host
	r.Header.Set("Authorization", "Bearer "+rr.key)
	return http.DefaultTransport.RoundTrip(r)
}

// served is how many pods got a request.
func (rr *roundRobin) served() int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return len(rr.counts)
}

// mcpToolNames is the tools/list of one pod's /mcp for key.
func mcpToolNames(base, key string) ([]string, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: &roundRobin{key: key, pods: []string{base}}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cs.Close() }()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names, nil
}

// findID is the id of the item with slug in the control API's list at path.
func findID(t *testing.T, control, path, slug string) string {
	t.Helper()
	status, b := e2eDo(t, "GET", control+path+"?limit=200", "")
	if status != 200 {
		t.Fatalf("GET %s: %d %s", path, status, b)
	}
	var list struct {
		Items []struct{ ID, Slug string } `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	for _, it := range list.Items {
		if it.Slug == slug {
			return it.ID
		}
	}
	t.Fatalf("no %s in %s", slug, path)
	return ""
}

// e2eDo is adminDo with the cluster's admin token.
func e2eDo(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
