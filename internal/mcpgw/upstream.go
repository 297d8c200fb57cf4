package mcpgw

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/snapshot"
	relayupstream "github.com/relay-llm/relay/internal/upstream"
)

// Server is what Relay needs of an MCP server to talk to it.
type Server struct {
	URL string
	// The credential: a static header (AuthHeader "" for none), or OAuth
	// client credentials (OAuth.TokenURL "" for none), never both.
	AuthHeader string
	AuthValue  string
	OAuth      OAuth
	Timeout    time.Duration
}

// ServerOf is the connection settings of a catalog row.
func ServerOf(m *snapshot.MCPServer) Server {
	return Server{URL: m.URL, AuthHeader: m.AuthHeader, AuthValue: m.AuthValue.Reveal(), OAuth: oauthOf(m), Timeout: m.Timeout}
}

// newTransport is the Streamable HTTP transport Relay talks to one MCP
// server with: through internal/upstream's Transport (every connection held
// to the egress guard, nil: none, the token endpoint's too), the server's
// credential on every request and the caller's own Authorization (its
// relay key) never. tokens is the server's token cache when it has OAuth
// client credentials, else nil.
func newTransport(guard *egress.Guard, roots *x509.CertPool, s Server, now func() time.Time) (t *mcp.StreamableClientTransport, tokens *tokenSource) {
	base := relayupstream.New(relayupstream.Options{Guard: guard, Roots: roots})
	hc := relayupstream.HTTPClient(base, s.AuthHeader, s.AuthValue)
	if s.OAuth.TokenURL != "" {
		tokens = newTokenSource(s.OAuth, base, now)
		hc = relayupstream.HTTPClient(&bearerTransport{base: base, tokens: tokens}, "", "")
	}
	return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, tokens
}

// connect opens an MCP client session to s over Streamable HTTP.
func connect(ctx context.Context, t *mcp.StreamableClientTransport) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "relay", Version: "1"}, nil)
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect mcp server: %w", err)
	}
	return cs, nil
}

// listAll is every tool of a session, through its pages.
func listAll(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		if len(out) > maxTools {
			return nil, fmt.Errorf("more than %d tools", maxTools)
		}
	}
	return out, nil
}

// maxTools bounds what one server may list.
const maxTools = 1000

// Discover asks the server at s for its tools now, on a session of its own
// (the control plane's listing; the gateway keeps its sessions).
func Discover(ctx context.Context, guard *egress.Guard, s Server) ([]*mcp.Tool, error) {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	t, _ := newTransport(guard, nil, s, nil)
	cs, err := connect(ctx, t)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cs.Close() }()
	tools, err := listAll(ctx, cs)
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	return tools, nil
}

// upstream is this pod's link to one MCP server at one version of its row:
// a client session shared by every caller, opened on first use and again
// after it broke, and the tools the server listed last.
type upstream struct {
	srv    Server
	mt     *mcp.StreamableClientTransport
	tokens *tokenSource // the server's access token (OAuth), nil for none

	mu       sync.Mutex // guards the fields below
	cs       *mcp.ClientSession
	tools    map[string]toolEntry
	listedAt time.Time
}

// toolEntry is one upstream tool and its fingerprint.
type toolEntry struct {
	tool *mcp.Tool
	fp   string
}

// session returns the open session, opening one if there is none.
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	// Opened outside the lock: a slow server must not hold the others'
	// callers. Two first callers may both open one; the second is closed.
	cctx, cancel := upstreamCtx(ctx, u.srv.Timeout)
	defer cancel()
	cs, err := connect(cctx, u.mt)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != nil {
		_ = cs.Close()
		return u.cs, nil
	}
	u.cs = cs
	return cs, nil
}

// broken drops cs after a transport failure, so the next call reconnects.
func (u *upstream) broken(cs *mcp.ClientSession) {
	u.mu.Lock()
	if u.cs == cs {
		u.cs = nil
	}
	u.mu.Unlock()
	_ = cs.Close()
}

// close ends the session (the row changed or went).
func (u *upstream) close() {
	u.mu.Lock()
	cs := u.cs
	u.cs = nil
	u.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}

// list asks the server for its tools and keeps them.
func (u *upstream) list(ctx context.Context, now time.Time) (map[string]toolEntry, error) {
	cs, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := listAll(ctx, cs)
	if err != nil {
		if !isToolError(err) {
			u.broken(cs)
		}
		return nil, fmt.Errorf("list tools: %w", err)
	}
	m := make(map[string]toolEntry, len(tools))
	for _, t := range tools {
		m[t.Name] = toolEntry{tool: t, fp: Fingerprint(t)}
	}
	u.mu.Lock()
	u.tools, u.listedAt = m, now
	u.mu.Unlock()
	return m, nil
}

// cached returns the tools listed within ttl of now, else lists them again.
func (u *upstream) cached(ctx context.Context, now time.Time, ttl time.Duration) (map[string]toolEntry, error) {
	u.mu.Lock()
	m, at := u.tools, u.listedAt
	u.mu.Unlock()
	if m != nil && now.Sub(at) < ttl {
		return m, nil
	}
	return u.list(ctx, now)
}

// isToolError reports whether err is the server's own answer (a JSON-RPC
// error), after which the session is still good.
//
// The SDK's client reports a request its transport could not deliver (a
// 5xx, a refused connection) as JSON-RPC error -32005 "rejected by
// transport" too: that one is no answer of the server's.
func isToolError(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code != codeRejectedByTransport
}

// codeRejectedByTransport is the SDK's jsonrpc2.ErrRejected.
const codeRejectedByTransport = -32005

// codeInternalError is JSON-RPC's internal error.
const codeInternalError = -32603

// rpcCodeOf is the JSON-RPC error code of err, 0 for none.
func rpcCodeOf(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

// upstreamCtx is the context of a call to an MCP server on behalf of a
// caller: cancelled when the caller's is, bounded by the server's timeout,
// but without the caller's values, among which the SDK keeps the protocol
// version the agent spoke to Relay (the server's session has its own).
func upstreamCtx(caller context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
	}
	if d, ok := caller.Deadline(); ok {
		var c2 context.CancelFunc
		ctx, c2 = context.WithDeadline(ctx, d)
		prev := cancel
		cancel = func() { c2(); prev() }
	}
	stop := context.AfterFunc(caller, cancel)
	return ctx, func() { stop(); cancel() }
}
