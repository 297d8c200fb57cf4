package mcpgw

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/genai"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Config is what a Gateway is built from.
type Config struct {
	Snapshot func() *snapshot.Snapshot // the current snapshot (never nil once serving)
	// Admit admits every tools/call against the rate limits of its
	// server and of its tool, each under counters of its own (scopes):
	// one request, no tokens, no wait, through the same limiter and
	// counters store as model calls (cmd/relay passes them on as
	// admission.Scoped), so the limits are exact across pods on Redis;
	// nil: no limits. price is the price of one call of the tool
	// (snapshot.MCPServer.PriceOf: the tool's, else the server's
	// CallPrice; micro-units), counted against the
	// caller's budgets (admission.Admission.CallPrice): a call is admitted
	// when its scopes or its price ask for it. A refusal unwraps to a
	// *wire.Error of kind wire.ErrRateLimited, or wire.ErrBudgetExceeded
	// for a budget. A func, so that this package links neither the
	// limiter nor the routing its admission carries (the control plane
	// imports it for discovery).
	Admit func(ctx context.Context, caller *snapshot.Caller, snap *snapshot.Snapshot, scopes []LimitScope, price int64) (done func(wire.Usage), err error)
	// Observe counts one tools/call in the metrics (metrics.Registry's
	// MCPCall; nil: none). server and tool are "" where the call named no
	// server of the catalog or a tool it was refused (not granted), so
	// a caller cannot mint series.
	Observe func(server, tool string, status int, d time.Duration)
	// TracerProvider traces every tools/call as a server span with the
	// GenAI conventions' execute_tool attributes (nil: no spans).
	TracerProvider trace.TracerProvider
	// Recorder gets one usage event per tools/call (nil: none).
	Recorder interface{ Record(event.Record) }
	// NewID mints request ids for usage events (proxy.NewRequestID).
	NewID func() string
	// Breakers hold servers and tools that fail (nil: none).
	Breakers Breakers
	Guard    *egress.Guard // egress rules for every connection to a server or its token endpoint (nil: none)
	// Roots verify TLS servers and token endpoints instead of the system
	// pool (a private CA, a test's TLS mock); nil: the system's.
	Roots *x509.CertPool
	Log   *slog.Logger
	Now   func() time.Time
	// ToolsTTL is how long a server's tool list is trusted for tools/call
	// before it is asked again (default 10s); tools/list always asks.
	ToolsTTL time.Duration
}

// Gateway serves /mcp and /mcp/{server}.
type Gateway struct {
	cfg    Config
	tracer trace.Tracer // nil: no spans
	server *mcp.Server
	h      http.Handler

	mu        sync.Mutex // guards upstreams
	upstreams map[snapshot.ID]*upstream
}

// New makes a gateway; it opens no connection until a caller asks.
func New(cfg Config) *Gateway {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Breakers == nil {
		cfg.Breakers = noBreakers{}
	}
	if cfg.ToolsTTL <= 0 {
		cfg.ToolsTTL = 10 * time.Second
	}
	g := &Gateway{cfg: cfg, upstreams: make(map[snapshot.ID]*upstream)}
	if cfg.TracerProvider != nil {
		g.tracer = cfg.TracerProvider.Tracer("github.com/relay-llm/relay/internal/mcpgw")
	}
	g.server = mcp.NewServer(&mcp.Implementation{Name: "relay", Version: "1"}, &mcp.ServerOptions{
		// Tools, prompts and resources are each the granted servers' (an
		// empty list where none serves any); no list-changed notices and no
		// subscriptions: the gateway is stateless.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{},
			Prompts: &mcp.PromptCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
	})
	g.server.AddReceivingMiddleware(g.middleware)
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: cfg.Log})
	g.h = auth.RequireBearerToken(g.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
	return g
}

// ServeHTTP implements http.Handler for /mcp and /mcp/{server}.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		// Anthropic-style clients send the relay key as x-api-key.
		if k := r.Header.Get("X-Api-Key"); k != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+k)
		}
	}
	g.h.ServeHTTP(&privateWriter{ResponseWriter: w}, r)
}

// privateWriter gives every answer a private cache scope as its header is
// written (after the SDK set its own Cache-Control): each is the caller's
// own (tools/list shows what its policy grants), so no shared cache may
// keep one for another caller.
type privateWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *privateWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		h := w.ResponseWriter.Header()
		h.Set("Cache-Control", "private, no-store, no-transform")
		h.Add("Vary", "Authorization, X-Api-Key")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *privateWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes on, for the SDK's event streams.
func (w *privateWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush() // a writer that cannot flush writes on close
}

// Unwrap lets http.ResponseController reach the connection.
func (w *privateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// principal is an authenticated caller of /mcp, in the request's token info.
type principal struct {
	caller snapshot.Caller
	snap   *snapshot.Snapshot
	only   string // /mcp/{server}: that server's tools only
}

const principalKey = "relay.principal"

// verify authenticates a relay key or inference token against the snapshot.
func (g *Gateway) verify(_ context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	snap := g.cfg.Snapshot()
	if snap == nil {
		return nil, errors.New("not ready")
	}
	c, res := snap.Authenticate(sha256.Sum256([]byte(token)), g.cfg.Now())
	if res != snapshot.AuthOK {
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, res)
	}
	p := &principal{caller: c, snap: snap}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/mcp/"); ok {
		p.only = strings.Trim(rest, "/")
	}
	return &auth.TokenInfo{UserID: c.CredentialID.String(), Extra: map[string]any{principalKey: p}}, nil
}

func principalOf(req mcp.Request) *principal {
	x := req.GetExtra()
	if x == nil || x.TokenInfo == nil {
		return nil
	}
	p, _ := x.TokenInfo.Extra[principalKey].(*principal)
	return p
}

// middleware answers tools/list, tools/call, prompts/list, prompts/get,
// resources/list, resources/templates/list and resources/read itself;
// everything else (initialize, ping …) is the SDK's.
func (g *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "prompts/list", "prompts/get", "resources/list", "resources/templates/list", "resources/read":
			p := principalOf(req)
			if p == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not authenticated"}
			}
			return g.promptsAndResources(ctx, method, p, req)
		case "tools/list":
			p := principalOf(req)
			if p == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not authenticated"}
			}
			return g.listTools(ctx, p)
		case "tools/call":
			p := principalOf(req)
			if p == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not authenticated"}
			}
			params, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs params"}
			}
			return g.callTool(ctx, p, params)
		}
		return next(ctx, method, req)
	}
}

// promptsAndResources answers the prompts and resources methods.
func (g *Gateway) promptsAndResources(ctx context.Context, method string, p *principal, req mcp.Request) (mcp.Result, error) {
	switch method {
	case "prompts/list":
		return g.listPrompts(ctx, p)
	case "resources/list":
		return g.listResources(ctx, p)
	case "resources/templates/list":
		return g.listResourceTemplates(ctx, p)
	case "prompts/get":
		if params, ok := req.GetParams().(*mcp.GetPromptParams); ok && params != nil {
			return g.getPrompt(ctx, p, params)
		}
	case "resources/read":
		if params, ok := req.GetParams().(*mcp.ReadResourceParams); ok && params != nil {
			return g.readResource(ctx, p, params)
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + " needs params"}
}

// servers are the servers whose tools p may see.
func (g *Gateway) servers(p *principal) []*snapshot.MCPServer {
	var out []*snapshot.MCPServer
	for _, m := range p.snap.MCPServers() {
		if !m.Enabled || !m.Usable || (p.only != "" && m.Slug != p.only) || !p.caller.Policy.GrantsMCPServer(m.Slug) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// upstreamOf returns this pod's link to m, new when m's row changed.
func (g *Gateway) upstreamOf(m *snapshot.MCPServer) *upstream {
	srv := ServerOf(m)
	g.mu.Lock()
	defer g.mu.Unlock()
	u := g.upstreams[m.ID]
	if u != nil && u.srv == srv {
		return u
	}
	if u != nil {
		go u.close()
	}
	u = &upstream{srv: srv}
	u.mt, u.tokens = newTransport(g.cfg.Guard, g.cfg.Roots, srv, g.cfg.Now)
	g.upstreams[m.ID] = u
	return u
}

// visible reports whether p may see and call tool t of m as it is now.
func visible(p *principal, m *snapshot.MCPServer, name, fp string) bool {
	pol := p.caller.Policy
	if !pol.GrantsMCPTool(m.Slug, name) {
		return false
	}
	switch m.ToolState(name, fp) {
	case snapshot.MCPToolApproved:
		return true
	case snapshot.MCPToolNew:
		return !pol.MCPRequireApproval
	}
	return false
}

// listTools is tools/list: every granted, approved tool of every granted
// server, asked of each server now. A server that does not answer is
// left out of the list and logged (its tools cannot be called either).
func (g *Gateway) listTools(ctx context.Context, p *principal) (*mcp.ListToolsResult, error) {
	// The list is the caller's own (its policy's grants): a private cache
	// scope, never the protocol's default public one, and stale at once,
	// since an approval or a grant may change it.
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	for _, m := range g.servers(p) {
		report, ok := g.cfg.Breakers.Acquire(m.ID, "", g.cfg.Now())
		if !ok {
			g.cfg.Log.WarnContext(ctx, "mcp server held by its breaker: its tools are left out", "mcp_server", m.Slug)
			continue
		}
		u := g.upstreamOf(m)
		lctx, cancel := upstreamCtx(ctx, m.Timeout)
		tools, err := u.list(lctx, g.cfg.Now())
		cancel()
		o, why := serverOutcome(ctx, err)
		report(o, why, g.cfg.Now())
		if err != nil {
			g.cfg.Log.WarnContext(ctx, "mcp server did not list its tools", "mcp_server", m.Slug, "err", err)
			continue
		}
		for _, e := range sortedTools(tools) {
			if !visible(p, m, e.tool.Name, e.fp) {
				continue
			}
			t := *e.tool
			t.Name = m.Slug + snapshot.MCPToolSeparator + e.tool.Name
			res.Tools = append(res.Tools, &t)
		}
	}
	return res, nil
}

// refused is the error a caller gets for a tool it may not call: the same
// for a tool that does not exist, one of a server it is not granted and
// one it is not granted, so it learns nothing of other tenants' tools.
func refused(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: not granted to this key", name)}
}

// codeRateLimited is the JSON-RPC error of a tools/call its rate limit
// refused (in the implementation-defined server error range), and
// codeBudgetExceeded the one of a call a budget of its caller refused.
const (
	codeRateLimited    = -32029
	codeBudgetExceeded = -32030
	// codeTokenFailed: the server's OAuth token endpoint gave no token.
	codeTokenFailed = -32031
)

// tokenErrorOf is the token endpoint's failure err carries, or nil.
func tokenErrorOf(err error) *TokenError {
	var te *TokenError
	if errors.As(err, &te) {
		return te
	}
	return nil
}

// tokenFailed is the caller's error of a call whose server's token
// endpoint failed: the server and the endpoint's reason, no secret.
func tokenFailed(server string, te *TokenError) error {
	return &jsonrpc.Error{Code: codeTokenFailed, Message: fmt.Sprintf(
		"mcp server %s is unavailable: its OAuth token could not be had (%s)", server, te.Reason)}
}

// callTool is tools/call: check the grant and the approval, admit it
// against the server's rate limit, forward it, record it.
func (g *Gateway) callTool(ctx context.Context, p *principal, params *mcp.CallToolParamsRaw) (res *mcp.CallToolResult, err error) {
	start := g.cfg.Now()
	slug, tool, ok := strings.Cut(params.Name, snapshot.MCPToolSeparator)
	var m *snapshot.MCPServer
	if ok {
		m = p.snap.MCPServerBySlug(slug)
	}
	rec := &event.Record{Inbound: "mcp", Model: params.Name, MCPServer: slug, MCPTool: tool}
	var span trace.Span
	if g.tracer != nil {
		// The MCP conventions' server span of tools/call: "tools/call
		// <tool>", the tool as the caller named it.
		ctx, span = g.tracer.Start(ctx, "tools/call "+params.Name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String(genai.MCPMethodName, "tools/call"),
				attribute.String(genai.OperationName, genai.OperationExecuteTool),
				attribute.String(genai.ToolName, params.Name),
				attribute.String(genai.ToolType, genai.ToolTypeExtension),
			))
	}
	defer func() {
		rec.RouteDetail = callBytes(len(params.Arguments), res)
		g.recordCall(p, rec, m, start)
		if span != nil {
			if rec.Status != http.StatusOK || rec.ErrorKind != "" {
				span.SetAttributes(attribute.String(genai.ErrorType, rec.ErrorKind))
				span.SetStatus(codes.Error, rec.ErrorKind)
			}
			span.End()
		}
	}()
	if m == nil || !m.Enabled || !m.Usable || (p.only != "" && p.only != slug) || !p.caller.Policy.GrantsMCPTool(slug, tool) {
		rec.Status, rec.ErrorKind = http.StatusForbidden, "tool_not_granted"
		return nil, refused(params.Name)
	}
	report, ok := g.cfg.Breakers.Acquire(m.ID, tool, g.cfg.Now())
	if !ok {
		rec.Status, rec.ErrorKind = http.StatusServiceUnavailable, "mcp_server_held"
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"tool %q is held by its breaker: the mcp server or the tool failed recently; retry later", params.Name)}
	}
	outcome, reason := OutcomeNeutral, ""
	defer func() { report(outcome, reason, g.cfg.Now()) }()
	u := g.upstreamOf(m)
	cctx, cancel := upstreamCtx(ctx, m.Timeout)
	defer cancel()
	tools, err := u.cached(cctx, g.cfg.Now(), g.cfg.ToolsTTL)
	if err != nil {
		outcome, reason = serverOutcome(ctx, err)
		if te := tokenErrorOf(err); te != nil {
			rec.Status, rec.ErrorKind = http.StatusBadGateway, "mcp_oauth_failed"
			return nil, tokenFailed(slug, te)
		}
		rec.Status, rec.ErrorKind = http.StatusBadGateway, "mcp_server_unavailable"
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcp server %s is unavailable", slug)}
	}
	e, ok := tools[tool]
	if !ok || !p.caller.Policy.GrantsMCPTool(slug, tool) {
		rec.Status, rec.ErrorKind = http.StatusForbidden, "tool_not_granted"
		return nil, refused(params.Name)
	}
	if !visible(p, m, tool, e.fp) {
		rec.Status, rec.ErrorKind = http.StatusForbidden, "tool_not_approved"
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"tool %q is withheld: it is new or changed since an operator approved it; it needs approval again", params.Name)}
	}
	done, err := g.admit(cctx, p, m, tool)
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) && errors.Is(we.Kind, wire.ErrRateLimited) {
			rec.Status, rec.ErrorKind = http.StatusTooManyRequests, "rate_limited"
			msg := fmt.Sprintf("rate limited: tools/call of %s is over the rate limit of its server or tool", params.Name)
			if we.RetryAfter > 0 {
				msg += "; retry after " + strconv.FormatInt(max(1, we.RetryAfter.Milliseconds()), 10) + " ms"
			}
			return nil, &jsonrpc.Error{Code: codeRateLimited, Message: msg}
		}
		if errors.As(err, &we) && errors.Is(we.Kind, wire.ErrBudgetExceeded) {
			rec.Status, rec.ErrorKind = http.StatusTooManyRequests, "budget_exceeded"
			return nil, &jsonrpc.Error{Code: codeBudgetExceeded, Message: fmt.Sprintf(
				"budget exceeded: tools/call of %s costs %d micro-units a call; %s", params.Name, m.PriceOf(tool), we.Msg)}
		}
		rec.Status, rec.ErrorKind = http.StatusServiceUnavailable, "limiter_unavailable"
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "rate limiter unavailable"}
	}
	if done != nil {
		defer done(wire.Usage{})
	}
	rec.CallPrice = m.PriceOf(tool) // admitted: the call costs its price, as its budgets counted it
	cs, err := u.session(cctx)
	if err == nil {
		res, err = cs.CallTool(cctx, &mcp.CallToolParams{Meta: callerMeta(params.Meta), Name: tool, Arguments: rawArgs(params.Arguments)})
		if err != nil && !isToolError(err) {
			u.broken(cs)
		}
		outcome, reason = callOutcome(ctx, err)
	} else {
		outcome, reason = serverOutcome(ctx, err)
	}
	switch {
	case err == nil:
		rec.Status = http.StatusOK
		if res.IsError {
			rec.ErrorKind = "tool_error"
		}
		return res, nil
	case isToolError(err):
		var we *jsonrpc.Error
		errors.As(err, &we)
		rec.Status, rec.ErrorKind = http.StatusBadGateway, "mcp_server_error"
		return nil, we
	case ctx.Err() != nil:
		rec.Status, rec.ErrorKind = 499, event.KindClientCanceled
		return nil, err
	case tokenErrorOf(err) != nil:
		rec.Status, rec.ErrorKind = http.StatusBadGateway, "mcp_oauth_failed"
		return nil, tokenFailed(slug, tokenErrorOf(err))
	}
	rec.Status, rec.ErrorKind = http.StatusBadGateway, "mcp_server_unavailable"
	g.cfg.Log.WarnContext(ctx, "mcp tools/call failed", "mcp_server", slug, "tool", tool, "err", err)
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcp server %s is unavailable", slug)}
}

// callBytes is a tools/call's sizes for the ledger's route_detail: the
// arguments the caller sent and the result it was answered with (0 when
// none), as JSON.
func callBytes(args int, res *mcp.CallToolResult) []byte {
	n := 0
	if res != nil {
		if b, err := json.Marshal(res); err == nil {
			n = len(b)
		}
	}
	b := make([]byte, 0, 64)
	b = append(b, `{"mcp":{"arguments_bytes":`...)
	b = strconv.AppendInt(b, int64(args), 10)
	b = append(b, `,"result_bytes":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, "}}"...)
}

// callerMeta is the caller's _meta without the protocol's own members
// (io.modelcontextprotocol/…: its protocol version, client info and
// capabilities), which describe the caller's session with Relay, not
// Relay's with the server; the rest (a progress token …) passes on.
func callerMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// rawArgs passes the caller's arguments on as they came.
func rawArgs(a json.RawMessage) any {
	if len(a) == 0 {
		return nil
	}
	return a
}

// admit counts a tools/call as one request against the rate limit of its
// server and the one of its tool, each under counters of its own (a
// scoped admission): requests and concurrency, per policy and per key where
// a rule is per principal, exact across pods on Redis; and its price per
// call (the tool's own, else its server's: MCPServer.PriceOf) against the
// caller's budgets. No wait: a call over a
// limit or a budget is refused at once. done releases its concurrency
// leases and settles its price.
func (g *Gateway) admit(ctx context.Context, p *principal, m *snapshot.MCPServer, tool string) (func(wire.Usage), error) {
	if g.cfg.Admit == nil || p.caller.Policy == nil {
		return nil, nil
	}
	var scopes [2]LimitScope
	n := 0
	if m.RateLimitID != (snapshot.ID{}) {
		scopes[n] = LimitScope{ID: m.ID, RateLimitID: m.RateLimitID}
		n++
	}
	if tl, ok := m.ToolRateLimits[tool]; ok {
		scopes[n] = LimitScope{ID: tl.Scope, RateLimitID: tl.RateLimitID}
		n++
	}
	price := m.PriceOf(tool)
	if n == 0 && price <= 0 {
		return nil, nil
	}
	c := p.caller
	return g.cfg.Admit(ctx, &c, p.snap, scopes[:n], price)
}

// LimitScope is one rate limit a tools/call counts against, under
// counters of its own (admission.Scope).
type LimitScope struct {
	ID          snapshot.ID // the server's id, or snapshot.MCPToolScope
	RateLimitID snapshot.ID
}

// recordCall records one tools/call: its metric under its server and tool
// ("" for a server not of the catalog or a tool not granted, so a caller
// cannot mint series) and its usage event.
func (g *Gateway) recordCall(p *principal, rec *event.Record, m *snapshot.MCPServer, start time.Time) {
	var server, tool string
	if m != nil {
		server = m.Slug
		if rec.ErrorKind != "tool_not_granted" {
			tool = rec.MCPTool
		}
	}
	g.record(p, rec, m, server, tool, start)
}

// record counts one call in the metrics under server and the label tool,
// and emits its usage event.
func (g *Gateway) record(p *principal, rec *event.Record, m *snapshot.MCPServer, server, tool string, start time.Time) {
	if g.cfg.Observe != nil {
		g.cfg.Observe(server, tool, rec.Status, g.cfg.Now().Sub(start))
	}
	if g.cfg.Recorder == nil {
		return
	}
	c := p.caller
	rec.At = start
	if g.cfg.NewID != nil {
		rec.RequestID = g.cfg.NewID()
	}
	rec.CredentialKind, rec.CredentialID = c.Kind, c.CredentialID
	rec.ProjectID, rec.TeamID, rec.ServiceAccountID, rec.UserID = c.ProjectID, c.TeamID, c.ServiceAccountID, c.UserID
	if c.Policy != nil {
		rec.PolicyID = c.Policy.ID
	}
	if m != nil {
		rec.HostSlug = m.Slug
	}
	rec.Attempts = 1
	rec.Total = g.cfg.Now().Sub(start)
	g.cfg.Recorder.Record(*rec)
}

// sortedTools are a server's tools by name, for a stable tools/list.
func sortedTools(m map[string]toolEntry) []toolEntry {
	out := make([]toolEntry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].tool.Name < out[j-1].tool.Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Close ends every upstream session.
func (g *Gateway) Close() {
	g.mu.Lock()
	us := g.upstreams
	g.upstreams = map[snapshot.ID]*upstream{}
	g.mu.Unlock()
	for _, u := range us {
		u.close()
	}
}
