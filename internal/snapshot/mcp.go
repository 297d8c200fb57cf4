package snapshot

import (
	"cmp"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// MCPServer is an MCP server Relay fronts at /mcp (docs/mcp.md): catalog
// data like a host. Its tools are not in the snapshot (they are the
// server's to say, asked over MCP); the operators' approvals of them are.
type MCPServer struct {
	ID      ID
	Slug    string // the prefix of its tools: "<slug>__<tool>"
	Name    string
	URL     string // Streamable HTTP endpoint
	Enabled bool
	Timeout time.Duration
	// RateLimitID is the rate limit every tools/call to the server counts
	// against (uuid.Nil: none), under counters of the server's own.
	RateLimitID ID
	// ToolRateLimits are the per-tool rate limits, by the tool's name as
	// the server names it, on top of RateLimitID.
	ToolRateLimits map[string]MCPToolRateLimit
	// CallPrice is what each tools/call to the server costs, in micro-units
	// of currency: counted against the caller's budgets (reserved at
	// admission) and recorded as the call's cost in the ledger. 0: free.
	CallPrice int64
	// ToolPrices are the per-tool prices (micro-units a call), each over
	// CallPrice for the tools its pattern matches; PriceOf picks one.
	ToolPrices []MCPToolPrice
	// AuthHeader carries AuthValue on every request to the server; "" for none.
	AuthHeader string
	AuthValue  Secret
	// OAuth, when not nil, is the server's credential instead of a static
	// header: client credentials Relay exchanges for a bearer token.
	OAuth *MCPOAuth
	// Usable is false when the credential could not be resolved (Problem
	// says why); such a server's tools are not listed.
	Usable    bool
	Problem   string
	UpdatedAt time.Time // a change makes the gateway reconnect
	// Approved is the fingerprint each approved tool was approved at.
	Approved map[string]string
}

// MCPOAuth is an MCP server's OAuth client credentials (RFC 6749 §4.4):
// Relay asks TokenURL for an access token with the client_credentials grant
// and presents it as "Authorization: Bearer <token>".
type MCPOAuth struct {
	TokenURL     string
	ClientID     string
	ClientSecret Secret
	Scopes       []string
	Audience     string // "" for none
	Resource     string // RFC 8707's resource indicator; "" for none
	// AuthMethod is how the client authenticates at the token endpoint:
	// MCPOAuthBasic (HTTP Basic) or MCPOAuthPost (the form's fields).
	AuthMethod string
}

// The token endpoint auth methods (RFC 7591's names).
const (
	MCPOAuthBasic = "client_secret_basic"
	MCPOAuthPost  = "client_secret_post"
)

// MCPToolPrice is the price per call of the tools Pattern (a tool's name,
// or a glob over names with *) matches, in micro-units.
type MCPToolPrice struct {
	Pattern string
	Price   int64
}

// PriceOf is what one tools/call of tool costs: the price of the tool's
// own name if it has one, else of the first pattern that matches it (the
// patterns are kept longest first, so the most specific glob wins), else
// the server's CallPrice.
func (m *MCPServer) PriceOf(tool string) int64 {
	for _, p := range m.ToolPrices {
		if p.Pattern == tool {
			return p.Price
		}
	}
	for _, p := range m.ToolPrices {
		if ok, _ := path.Match(p.Pattern, tool); ok {
			return p.Price
		}
	}
	return m.CallPrice
}

// SortToolPrices orders prices for PriceOf: longest pattern first, then by
// pattern, so the choice among globs does not depend on a map's order.
func SortToolPrices(ps []MCPToolPrice) {
	slices.SortFunc(ps, func(a, b MCPToolPrice) int {
		if c := cmp.Compare(len(b.Pattern), len(a.Pattern)); c != 0 {
			return c
		}
		return cmp.Compare(a.Pattern, b.Pattern)
	})
}

// MCPToolRateLimit is one tool's rate limit. Scope names the tool's
// counters (derived from the server's id and the tool's name), so that one
// rate limit given to two tools caps each of them apart.
type MCPToolRateLimit struct {
	RateLimitID ID
	Scope       ID
}

// MCPToolScope is the scope of tool's counters on server.
func MCPToolScope(server ID, tool string) ID { return uuid.NewSHA1(server, []byte(tool)) }

// MCPToolSeparator joins a server's slug and its tool's name into the
// name callers see.
const MCPToolSeparator = "__"

// MCPToolState says whether a tool as the server describes it now may be
// shown to and called by a caller.
type MCPToolState uint8

// Tool states.
const (
	MCPToolApproved MCPToolState = iota + 1 // approved at this fingerprint
	MCPToolNew                              // no operator approved it yet
	MCPToolChanged                          // approved, at another fingerprint
)

// String names the state as the control API does.
func (s MCPToolState) String() string {
	switch s {
	case MCPToolApproved:
		return "approved"
	case MCPToolNew:
		return "new"
	case MCPToolChanged:
		return "changed"
	}
	return "unknown"
}

// ToolState is the state of tool at fingerprint.
func (m *MCPServer) ToolState(tool, fingerprint string) MCPToolState {
	fp, ok := m.Approved[tool]
	switch {
	case !ok:
		return MCPToolNew
	case fp == fingerprint:
		return MCPToolApproved
	}
	return MCPToolChanged
}

// MCPServers returns the MCP servers by slug.
func (s *Snapshot) MCPServers() []*MCPServer { return s.mcpServerList }

// MCPServerBySlug returns an MCP server by slug, or nil.
func (s *Snapshot) MCPServerBySlug(slug string) *MCPServer { return s.mcpServersBySlug[slug] }

func sortedMCPServers(m map[ID]*MCPServer) []*MCPServer {
	out := make([]*MCPServer, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *MCPServer) int { return cmp.Compare(a.Slug, b.Slug) })
	return out
}

// GrantsMCPServer reports whether the policy grants any tool of server.
func (p *Policy) GrantsMCPServer(server string) bool {
	if p == nil {
		return false
	}
	for _, g := range p.MCPGrants {
		srv, _, _ := strings.Cut(g, MCPToolSeparator)
		if ok, _ := path.Match(srv, server); ok {
			return true
		}
	}
	return false
}

// GrantsMCPTool reports whether the policy grants tool of server: a
// pattern "<server>" grants every tool of the server, "<server>__<tool>"
// one tool; either half may be a glob (path.Match, where * matches any
// run of characters: no tool or server name has a "/").
func (p *Policy) GrantsMCPTool(server, tool string) bool {
	if p == nil {
		return false
	}
	for _, g := range p.MCPGrants {
		srv, t, hasTool := strings.Cut(g, MCPToolSeparator)
		if ok, _ := path.Match(srv, server); !ok {
			continue
		}
		if !hasTool {
			return true
		}
		if ok, _ := path.Match(t, tool); ok {
			return true
		}
	}
	return false
}
