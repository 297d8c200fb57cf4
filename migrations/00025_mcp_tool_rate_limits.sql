-- +goose Up
-- Per-tool rate limits of an MCP server (issue 28, docs/mcp.md): an object
-- from a tool's name (as the server names it) to the id of the rate limit
-- its tools/calls count against, on top of the server's rate_limit_id.
-- The rules (requests, concurrency) count per policy and per tool, per key
-- where a rule is per principal. An id whose rate limit was deleted limits
-- nothing (the control API refuses unknown ids when it is written).
ALTER TABLE mcp_servers
    ADD COLUMN tool_rate_limits jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(tool_rate_limits) = 'object');

-- +goose Down
ALTER TABLE mcp_servers DROP COLUMN tool_rate_limits;
