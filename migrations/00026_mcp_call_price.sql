-- +goose Up
-- An MCP server's price per call (issue 28, docs/mcp.md): micro-units of
-- currency each tools/call to the server costs, counted against the
-- caller's budgets as model spend is (reserved at admission, through the
-- same limiter, exact across pods) and recorded as the call's cost in the
-- usage ledger. 0: calls cost nothing.
ALTER TABLE mcp_servers
    ADD COLUMN call_price bigint NOT NULL DEFAULT 0 CHECK (call_price >= 0);

-- +goose Down
ALTER TABLE mcp_servers DROP COLUMN call_price;
