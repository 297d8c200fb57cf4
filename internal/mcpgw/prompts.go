package mcpgw

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/snapshot"
)

// Prompts and resources of the granted servers, fronted like tools:
//
//   - a prompt is named "<server>__<prompt>" and granted by the same
//     patterns as a tool of that name (one namespace for both: a grant
//     "github__review" grants the tool review and the prompt review);
//   - a resource is granted when the whole server is ("<server>" or a
//     pattern whose tool half is "*"), and its URI is the server's own
//     behind the prefix "mcp+relay://<server>/" (resourceURI): stateless,
//     so any pod reads what any pod listed, and a template's variables
//     expand in the server's own URI unchanged.
//
// Neither is approved by fingerprint; both pass through the server's
// breaker. Each prompts/get and resources/read is a usage event and a
// metric like a tools/call (getRecord), with the method as the event's
// route.

// resourceScheme is the prefix of every resource URI Relay presents.
const resourceScheme = "mcp+relay://"

// resourceURI is the URI a caller sees of the server's resource uri.
func resourceURI(server, uri string) string { return resourceScheme + server + "/" + uri }

// splitResourceURI reverses resourceURI; ok false for a URI that is not one.
func splitResourceURI(u string) (server, uri string, ok bool) {
	rest, ok := strings.CutPrefix(u, resourceScheme)
	if !ok {
		return "", "", false
	}
	server, uri, ok = strings.Cut(rest, "/")
	return server, uri, ok && server != "" && uri != ""
}

// grantsResources reports whether pol grants every tool of server: a
// pattern without a tool half, or one whose tool half is "*". Only such a
// grant shows the server's resources (a URI names no tool).
func grantsResources(pol *snapshot.Policy, server string) bool {
	if pol == nil {
		return false
	}
	for _, g := range pol.MCPGrants {
		srv, t, hasTool := strings.Cut(g, snapshot.MCPToolSeparator)
		if hasTool && t != "*" {
			continue
		}
		if ok, _ := path.Match(srv, server); ok {
			return true
		}
	}
	return false
}

// refusedPrompt is the error of a prompt the caller may not get, shaped as
// refused's: the same for one that does not exist.
func refusedPrompt(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q: not granted to this key", name)}
}

// collect is every item of a listing, through its pages, bounded by maxTools.
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for x, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, x)
		if len(out) > maxTools {
			return nil, fmt.Errorf("more than %d items", maxTools)
		}
	}
	return out, nil
}

// onServer runs f on the server's session through its breaker, the way
// tools/list asks a server: a held server or one that fails is an error
// (logged by the caller), a JSON-RPC error is the server's answer.
func (g *Gateway) onServer(ctx context.Context, m *snapshot.MCPServer, f func(ctx context.Context, cs *mcp.ClientSession) error) (held bool, err error) {
	report, ok := g.cfg.Breakers.Acquire(m.ID, "", g.cfg.Now())
	if !ok {
		return true, fmt.Errorf("mcp server %s is held by its breaker", m.Slug)
	}
	u := g.upstreamOf(m)
	cctx, cancel := upstreamCtx(ctx, m.Timeout)
	defer cancel()
	cs, err := u.session(cctx)
	if err == nil {
		err = f(cctx, cs)
		if err != nil && !isToolError(err) {
			u.broken(cs)
		}
	}
	o, why := serverOutcome(ctx, err)
	report(o, why, g.cfg.Now())
	return false, err
}

// listPrompts is prompts/list: every granted prompt of every granted
// server. A server that is held, does not answer or serves no prompts is
// left out (logged).
func (g *Gateway) listPrompts(ctx context.Context, p *principal) (*mcp.ListPromptsResult, error) {
	res := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	for _, m := range g.servers(p) {
		var ps []*mcp.Prompt
		_, err := g.onServer(ctx, m, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
			if cs.InitializeResult().Capabilities.Prompts == nil {
				return nil
			}
			ps, err = collect(cs.Prompts(ctx, nil))
			return err
		})
		if err != nil {
			g.cfg.Log.WarnContext(ctx, "mcp server did not list its prompts", "mcp_server", m.Slug, "err", err)
			continue
		}
		for _, pr := range ps {
			if !p.caller.Policy.GrantsMCPTool(m.Slug, pr.Name) {
				continue
			}
			c := *pr
			c.Name = m.Slug + snapshot.MCPToolSeparator + pr.Name
			res.Prompts = append(res.Prompts, &c)
		}
	}
	return res, nil
}

// getPrompt is prompts/get of a granted prompt, its result as the server
// gave it.
func (g *Gateway) getPrompt(ctx context.Context, p *principal, params *mcp.GetPromptParams) (res *mcp.GetPromptResult, err error) {
	start := g.cfg.Now()
	slug, name, ok := strings.Cut(params.Name, snapshot.MCPToolSeparator)
	m := g.granted(p, slug, ok)
	rec := &event.Record{Inbound: "mcp", Route: "prompts/get", Model: params.Name, MCPServer: slug, MCPTool: name}
	defer func() { g.recordGet(p, rec, m, "prompts/get "+name, start) }()
	if m == nil || !p.caller.Policy.GrantsMCPTool(slug, name) {
		m, rec.ErrorKind = nil, "prompt_not_granted" // m nil: a caller cannot mint series
		return nil, refusedPrompt(params.Name)
	}
	held, err := g.onServer(ctx, m, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Meta: callerMeta(params.Meta), Name: name, Arguments: params.Arguments})
		return err
	})
	rec.Status, rec.ErrorKind = getStatus(ctx, held, err)
	return res, g.answer(ctx, m, "prompts/get", held, err)
}

// getStatus is the ledger's status and error kind of a prompts/get or
// resources/read that reached (or tried to reach) its server.
func getStatus(ctx context.Context, held bool, err error) (int, string) {
	switch {
	case err == nil:
		return http.StatusOK, ""
	case held:
		return http.StatusServiceUnavailable, "mcp_server_held"
	case isToolError(err):
		return http.StatusBadGateway, "mcp_server_error"
	case ctx.Err() != nil:
		return 499, event.KindClientCanceled
	case tokenErrorOf(err) != nil:
		return http.StatusBadGateway, "mcp_oauth_failed"
	}
	return http.StatusBadGateway, "mcp_server_unavailable"
}

// recordGet records a prompts/get or resources/read as record does a
// tools/call; a refused one (m nil) is 403 and counted under no server.
// label is the metric's tool label: the method and a prompt's name (a
// resource's URI is no label: it is the caller's to choose).
func (g *Gateway) recordGet(p *principal, rec *event.Record, m *snapshot.MCPServer, label string, start time.Time) {
	server := ""
	if m == nil {
		rec.Status, label = http.StatusForbidden, ""
	} else {
		server = m.Slug
	}
	g.record(p, rec, m, server, label, start)
}

// granted is the usable catalog server slug names, if p may use it at all
// (ok false: the name had no server half).
func (g *Gateway) granted(p *principal, slug string, ok bool) *snapshot.MCPServer {
	if !ok {
		return nil
	}
	m := p.snap.MCPServerBySlug(slug)
	if m == nil || !m.Enabled || !m.Usable || (p.only != "" && p.only != slug) || !p.caller.Policy.GrantsMCPServer(slug) {
		return nil
	}
	return m
}

// answer is the caller's error of a prompts/get or resources/read that
// reached (or tried to reach) the server: its own JSON-RPC error passes
// on, a held or failed server is an internal error naming only the
// server, as for tools/call.
func (g *Gateway) answer(ctx context.Context, m *snapshot.MCPServer, method string, held bool, err error) error {
	switch {
	case err == nil:
		return nil
	case held:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"mcp server %s is held by its breaker: it failed recently; retry later", m.Slug)}
	case isToolError(err):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	g.cfg.Log.WarnContext(ctx, "mcp "+method+" failed", "mcp_server", m.Slug, "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcp server %s is unavailable", m.Slug)}
}

// resourceServers are the servers whose resources p may see.
func (g *Gateway) resourceServers(p *principal) []*snapshot.MCPServer {
	var out []*snapshot.MCPServer
	for _, m := range g.servers(p) {
		if grantsResources(p.caller.Policy, m.Slug) {
			out = append(out, m)
		}
	}
	return out
}

// listResources is resources/list: the resources of every server whose
// resources p is granted, each URI behind its server's prefix.
func (g *Gateway) listResources(ctx context.Context, p *principal) (*mcp.ListResourcesResult, error) {
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	for _, m := range g.resourceServers(p) {
		var rs []*mcp.Resource
		_, err := g.onServer(ctx, m, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
			if cs.InitializeResult().Capabilities.Resources == nil {
				return nil
			}
			rs, err = collect(cs.Resources(ctx, nil))
			return err
		})
		if err != nil {
			g.cfg.Log.WarnContext(ctx, "mcp server did not list its resources", "mcp_server", m.Slug, "err", err)
			continue
		}
		for _, r := range rs {
			c := *r
			c.URI = resourceURI(m.Slug, r.URI)
			res.Resources = append(res.Resources, &c)
		}
	}
	return res, nil
}

// listResourceTemplates is resources/templates/list, as listResources.
func (g *Gateway) listResourceTemplates(ctx context.Context, p *principal) (*mcp.ListResourceTemplatesResult, error) {
	res := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}
	for _, m := range g.resourceServers(p) {
		var ts []*mcp.ResourceTemplate
		_, err := g.onServer(ctx, m, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
			if cs.InitializeResult().Capabilities.Resources == nil {
				return nil
			}
			ts, err = collect(cs.ResourceTemplates(ctx, nil))
			return err
		})
		if err != nil {
			g.cfg.Log.WarnContext(ctx, "mcp server did not list its resource templates", "mcp_server", m.Slug, "err", err)
			continue
		}
		for _, t := range ts {
			c := *t
			c.URITemplate = resourceURI(m.Slug, t.URITemplate)
			res.ResourceTemplates = append(res.ResourceTemplates, &c)
		}
	}
	return res, nil
}

// readResource is resources/read of a resource of a granted server, its
// contents as the server gave them (unaltered: their URIs are the
// server's own).
// Anything else, a URI without Relay's prefix included, is "Resource not
// found", as the server itself would say of a URI it does not know.
func (g *Gateway) readResource(ctx context.Context, p *principal, params *mcp.ReadResourceParams) (res *mcp.ReadResourceResult, err error) {
	start := g.cfg.Now()
	slug, uri, ok := splitResourceURI(params.URI)
	m := g.granted(p, slug, ok)
	// The ledger's model is the URI as the caller named it, bounded.
	rec := &event.Record{Inbound: "mcp", Route: "resources/read", Model: truncate(params.URI, maxModelLen), MCPServer: slug}
	defer func() { g.recordGet(p, rec, m, "resources/read", start) }()
	if m == nil || !grantsResources(p.caller.Policy, slug) {
		m, rec.MCPServer, rec.ErrorKind = nil, "", "resource_not_granted"
		return nil, mcp.ResourceNotFoundError(params.URI)
	}
	held, err := g.onServer(ctx, m, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{Meta: callerMeta(params.Meta), URI: uri})
		return err
	})
	rec.Status, rec.ErrorKind = getStatus(ctx, held, err)
	return res, g.answer(ctx, m, "resources/read", held, err)
}

// maxModelLen bounds what a resources/read puts in the ledger's model.
const maxModelLen = 512

// truncate is s cut to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
