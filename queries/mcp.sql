-- MCP servers and the operators' tool approvals (migrations 00019, 00025, 00026, 00028, 00029; docs/mcp.md).

-- name: ListMCPServers :many
SELECT * FROM mcp_servers ORDER BY slug;

-- name: GetMCPServerByID :one
SELECT * FROM mcp_servers WHERE id = $1;

-- name: GetMCPServerBySlug :one
SELECT * FROM mcp_servers WHERE slug = $1;

-- name: GetMCPServerByIDForUpdate :one
SELECT * FROM mcp_servers WHERE id = $1 FOR UPDATE;

-- name: InsertMCPServer :one
INSERT INTO mcp_servers (slug, name, url, enabled, timeout_ms, rate_limit_id, tool_rate_limits, call_price, tool_prices, auth_header, auth_secret_ref, auth_secret_ciphertext,
                         oauth_token_url, oauth_client_id, oauth_client_secret_ref, oauth_client_secret_ciphertext, oauth_scopes, oauth_audience, oauth_resource, oauth_auth_method)
VALUES (sqlc.arg(slug), sqlc.arg(name), sqlc.arg(url), sqlc.arg(enabled), sqlc.arg(timeout_ms), sqlc.narg(rate_limit_id), sqlc.arg(tool_rate_limits), sqlc.arg(call_price), sqlc.arg(tool_prices),
        sqlc.arg(auth_header), sqlc.narg(auth_secret_ref), sqlc.narg(auth_secret_ciphertext),
        sqlc.arg(oauth_token_url), sqlc.arg(oauth_client_id), sqlc.narg(oauth_client_secret_ref), sqlc.narg(oauth_client_secret_ciphertext),
        sqlc.arg(oauth_scopes), sqlc.arg(oauth_audience), sqlc.arg(oauth_resource), sqlc.arg(oauth_auth_method))
RETURNING *;

-- The credential is part of the row's update: a server without an auth
-- header has no secret, and one with OAuth has no header (the table's
-- checks hold them together).
-- name: UpdateMCPServer :one
UPDATE mcp_servers
SET slug = sqlc.arg(slug), name = sqlc.arg(name), url = sqlc.arg(url), enabled = sqlc.arg(enabled),
    timeout_ms = sqlc.arg(timeout_ms), rate_limit_id = sqlc.narg(rate_limit_id), tool_rate_limits = sqlc.arg(tool_rate_limits), call_price = sqlc.arg(call_price), auth_header = sqlc.arg(auth_header),
    auth_secret_ref = sqlc.narg(auth_secret_ref), auth_secret_ciphertext = sqlc.narg(auth_secret_ciphertext), tool_prices = sqlc.arg(tool_prices),
    oauth_token_url = sqlc.arg(oauth_token_url), oauth_client_id = sqlc.arg(oauth_client_id),
    oauth_client_secret_ref = sqlc.narg(oauth_client_secret_ref), oauth_client_secret_ciphertext = sqlc.narg(oauth_client_secret_ciphertext),
    oauth_scopes = sqlc.arg(oauth_scopes), oauth_audience = sqlc.arg(oauth_audience), oauth_resource = sqlc.arg(oauth_resource),
    oauth_auth_method = sqlc.arg(oauth_auth_method)
WHERE id = sqlc.arg(id)
RETURNING *;

-- Deleting a server deletes its tool approvals (ON DELETE CASCADE).
-- name: DeleteMCPServer :execrows
DELETE FROM mcp_servers WHERE id = $1;

-- name: ListMCPServersPage :many
SELECT * FROM mcp_servers
WHERE id > sqlc.arg(after)::uuid
ORDER BY id
LIMIT sqlc.arg('limit')::int;

-- name: ListMCPToolApprovals :many
SELECT * FROM mcp_tool_approvals ORDER BY mcp_server_id, tool;

-- name: ListMCPToolApprovalsByServer :many
SELECT * FROM mcp_tool_approvals WHERE mcp_server_id = $1 ORDER BY tool;

-- name: GetMCPToolApproval :one
SELECT * FROM mcp_tool_approvals WHERE mcp_server_id = $1 AND tool = $2;

-- An approval replaces the one before it: the tool as the operator saw it now.
-- name: UpsertMCPToolApproval :one
INSERT INTO mcp_tool_approvals (mcp_server_id, tool, fingerprint, approved_by)
VALUES ($1, $2, $3, $4)
ON CONFLICT (mcp_server_id, tool) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, approved_by = EXCLUDED.approved_by
RETURNING *;

-- Withholding a tool takes its approval back.
-- name: DeleteMCPToolApproval :one
DELETE FROM mcp_tool_approvals WHERE mcp_server_id = $1 AND tool = $2
RETURNING *;
