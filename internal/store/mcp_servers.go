package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

var mcpServersTable = &tableDef[dbsqlc.MCPServer, MCPServer, uuid.UUID, Page]{
	kind:    KindMCPServers,
	key:     func(r MCPServer) uuid.UUID { return r.ID },
	row:     func(r dbsqlc.MCPServer) MCPServer { return MCPServer(r) },
	insert:  fromRow(insertMCPServerParams, (*dbsqlc.Queries).InsertMCPServer),
	get:     (*dbsqlc.Queries).GetMCPServerByID,
	lock:    (*dbsqlc.Queries).GetMCPServerByIDForUpdate,
	update:  fromRow(updateMCPServerParams, (*dbsqlc.Queries).UpdateMCPServer),
	remove:  (*dbsqlc.Queries).DeleteMCPServer,
	list:    paged((*dbsqlc.Queries).ListMCPServersPage),
	catalog: func(c *Catalog) *[]MCPServer { return &c.MCPServers },
	all:     (*dbsqlc.Queries).ListMCPServers,
	parts:   []part[uuid.UUID]{mcpToolApprovalsPart{}},
}

// insertMCPServerParams is what Create writes of an MCPServer: all but the columns the database makes.
func insertMCPServerParams(r MCPServer) dbsqlc.InsertMCPServerParams {
	return dbsqlc.InsertMCPServerParams{
		Slug: r.Slug, Name: r.Name, URL: r.URL, Enabled: r.Enabled, TimeoutMs: r.TimeoutMs,
		RateLimitID: r.RateLimitID, ToolRateLimits: toolRateLimits(r.ToolRateLimits), CallPrice: r.CallPrice, AuthHeader: r.AuthHeader,
		AuthSecretRef: r.AuthSecretRef, AuthSecretCiphertext: r.AuthSecretCiphertext, ToolPrices: jsonObject(r.ToolPrices),
		OAuthTokenURL: r.OAuthTokenURL, OAuthClientID: r.OAuthClientID, OAuthClientSecretRef: r.OAuthClientSecretRef,
		OAuthClientSecretCiphertext: r.OAuthClientSecretCiphertext, OAuthScopes: scopes(r.OAuthScopes), OAuthAudience: r.OAuthAudience,
		OAuthResource: r.OAuthResource, OAuthAuthMethod: oauthAuthMethod(r.OAuthAuthMethod),
	}
}

// updateMCPServerParams is what Update writes of an MCPServer: every column
// but its key and timestamps, the credential included (it changes with the
// auth header, which the table's check holds it to).
func updateMCPServerParams(r MCPServer) dbsqlc.UpdateMCPServerParams {
	return dbsqlc.UpdateMCPServerParams{
		ID: r.ID, Slug: r.Slug, Name: r.Name, URL: r.URL, Enabled: r.Enabled, TimeoutMs: r.TimeoutMs,
		RateLimitID: r.RateLimitID, ToolRateLimits: toolRateLimits(r.ToolRateLimits), CallPrice: r.CallPrice, AuthHeader: r.AuthHeader,
		AuthSecretRef: r.AuthSecretRef, AuthSecretCiphertext: r.AuthSecretCiphertext, ToolPrices: jsonObject(r.ToolPrices),
		OAuthTokenURL: r.OAuthTokenURL, OAuthClientID: r.OAuthClientID, OAuthClientSecretRef: r.OAuthClientSecretRef,
		OAuthClientSecretCiphertext: r.OAuthClientSecretCiphertext, OAuthScopes: scopes(r.OAuthScopes), OAuthAudience: r.OAuthAudience,
		OAuthResource: r.OAuthResource, OAuthAuthMethod: oauthAuthMethod(r.OAuthAuthMethod),
	}
}

// toolRateLimits is the column's value of a row's per-tool rate limits.
func toolRateLimits(j json.RawMessage) json.RawMessage { return jsonObject(j) }

// jsonObject is a jsonb object column's value: nil writes {}.
func jsonObject(j json.RawMessage) json.RawMessage {
	if len(j) == 0 {
		return json.RawMessage("{}")
	}
	return j
}

// scopes is the oauth_scopes column's value: nil writes {}.
func scopes(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// oauthAuthMethod is the oauth_auth_method column's value: "" writes the
// default, client_secret_basic.
func oauthAuthMethod(m string) string {
	if m == "" {
		return "client_secret_basic"
	}
	return m
}

// mcpToolApprovalsPart reads a server's tool approvals with it.
type mcpToolApprovalsPart struct{}

func (mcpToolApprovalsPart) readAll(ctx context.Context, q *dbsqlc.Queries, c *Catalog) error {
	rs, err := q.ListMCPToolApprovals(ctx)
	if err != nil {
		return err
	}
	c.MCPToolApprovals = append(c.MCPToolApprovals, each(rs, mcpToolApproval)...)
	return nil
}

func (mcpToolApprovalsPart) readOf(ctx context.Context, q *dbsqlc.Queries, c *Catalog, server uuid.UUID) error {
	rs, err := q.ListMCPToolApprovalsByServer(ctx, server)
	if err != nil {
		return err
	}
	c.MCPToolApprovals = append(c.MCPToolApprovals, each(rs, mcpToolApproval)...)
	return nil
}

func mcpToolApproval(r dbsqlc.MCPToolApproval) MCPToolApproval { return MCPToolApproval(r) }

// MCPServers is the mcp_servers table. Deleting a server deletes its tool approvals.
type MCPServers struct {
	MutableTable[MCPServer, uuid.UUID, Page]
}

// MCPServers returns the MCP servers table; each write runs in its own transaction.
func (s *Store) MCPServers() MCPServers { return MCPServers{mutable(s.db(), mcpServersTable)} }

// MCPServers returns the MCP servers table inside t.
func (t *Tx) MCPServers() MCPServers { return MCPServers{mutable(t.db(), mcpServersTable)} }

// GetBySlug returns the MCP server with slug.
func (t MCPServers) GetBySlug(ctx context.Context, slug string) (MCPServer, error) {
	return mcpServersTable.result(t.db.q.GetMCPServerBySlug(ctx, slug))
}

// Approvals returns the tool approvals of a server, by tool name.
func (t MCPServers) Approvals(ctx context.Context, server uuid.UUID) ([]MCPToolApproval, error) {
	rs, err := t.db.q.ListMCPToolApprovalsByServer(ctx, server)
	if err != nil {
		return nil, fmt.Errorf("list mcp tool approvals: %w", mapErr(err))
	}
	return each(rs, mcpToolApproval), nil
}

// Approve records that actor approved tool of server as it is now
// (fingerprint), replacing an earlier approval, with its audit row.
func (t MCPServers) Approve(ctx context.Context, actor string, server uuid.UUID, tool, fingerprint string) (MCPToolApproval, error) {
	var out MCPToolApproval
	err := t.db.inTx(ctx, func(tx *Tx) error {
		var before *MCPToolApproval
		if r, err := tx.q.GetMCPToolApproval(ctx, server, tool); err == nil {
			b := MCPToolApproval(r)
			before = &b
		} else if err = mapErr(err); err != ErrNotFound {
			return err
		}
		r, err := tx.q.UpsertMCPToolApproval(ctx, server, tool, fingerprint, actor)
		if err != nil {
			return mapErr(err)
		}
		out = MCPToolApproval(r)
		action := "create"
		if before != nil {
			action = "update"
		}
		return tx.Audit(ctx, actor, action, string(KindMCPToolApprovals), server.String()+"/"+tool, before, out)
	})
	if err != nil {
		return MCPToolApproval{}, fmt.Errorf("approve mcp tool %s: %w", tool, err)
	}
	return out, nil
}

// Withhold deletes the approval of tool of server and returns it
// (ErrNotFound when it has none), with its audit row: the tool is new again.
func (t MCPServers) Withhold(ctx context.Context, actor string, server uuid.UUID, tool string) (MCPToolApproval, error) {
	var out MCPToolApproval
	err := t.db.inTx(ctx, func(tx *Tx) error {
		r, err := tx.q.DeleteMCPToolApproval(ctx, server, tool)
		if err != nil {
			return mapErr(err)
		}
		out = MCPToolApproval(r)
		return tx.Audit(ctx, actor, "delete", string(KindMCPToolApprovals), server.String()+"/"+tool, out, nil)
	})
	if err != nil {
		return MCPToolApproval{}, fmt.Errorf("withhold mcp tool %s: %w", tool, err)
	}
	return out, nil
}

// SetPolicyMCP sets a policy's MCP grants (migration 00019) with its audit row.
func (s *Store) SetPolicyMCP(ctx context.Context, actor string, policy uuid.UUID, grants []string, requireApproval bool) (Policy, error) {
	return s.Policies().Modify(ctx, actor, policy, func(r *Policy) error {
		r.MCPGrants, r.MCPRequireApproval = grants, requireApproval
		return nil
	})
}
