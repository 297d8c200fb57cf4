-- +goose Up
-- Per-tool prices of an MCP server (issue 28, docs/mcp.md): an object from
-- a tool's name or a glob over names (path.Match, "*") to the micro-units
-- each tools/call of a matching tool costs, overriding the server's
-- call_price. Counted against the caller's budgets as call_price is.
ALTER TABLE mcp_servers
    ADD COLUMN tool_prices jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(tool_prices) = 'object');

-- +goose Down
ALTER TABLE mcp_servers DROP COLUMN tool_prices;
