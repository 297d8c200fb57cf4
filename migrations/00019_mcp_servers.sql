-- +goose Up
-- MCP servers (issue 28, docs/mcp.md) are catalog rows like hosts: owned by
-- the system, written by system admins, read by every role. Relay speaks
-- MCP's Streamable HTTP transport to them; stdio servers are out of scope.
-- The credential Relay presents is one static header whose value is sealed
-- like a host key's secret (exactly one of an env reference or AES-256-GCM
-- ciphertext under RELAY_MASTER_KEY), or none.
CREATE TABLE mcp_servers (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- slug is the prefix of the server's tools as callers see them
    -- ("<slug>__<tool>"), so it has no "__" of its own.
    slug               text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name               text NOT NULL DEFAULT '',
    url                text NOT NULL CHECK (url ~ '^https?://'),
    enabled            boolean NOT NULL DEFAULT true,
    timeout_ms         integer NOT NULL DEFAULT 60000 CHECK (timeout_ms > 0),
    -- rate_limit_id: the rate limit each relay key's tool calls to this
    -- server count against (per key; NULL: none beyond the policy's).
    rate_limit_id      uuid REFERENCES rate_limits (id) ON DELETE SET NULL,
    auth_header        text NOT NULL DEFAULT '' CHECK (auth_header ~ '^([A-Za-z0-9-]{1,64})?$'),
    auth_secret_ref    text CHECK (auth_secret_ref ~ '^env:[A-Za-z_][A-Za-z0-9_]*$'),
    auth_secret_ciphertext bytea,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (num_nonnulls(auth_secret_ref, auth_secret_ciphertext) = CASE WHEN auth_header = '' THEN 0 ELSE 1 END)
);

-- An operator's approval of one tool as it was seen: the fingerprint
-- (sha256 of its name, description and input schema). A tool whose
-- fingerprint differs from its approval is withheld until approved again.
CREATE TABLE mcp_tool_approvals (
    mcp_server_id  uuid NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    tool           text NOT NULL CHECK (tool ~ '^[A-Za-z0-9_.-]{1,128}$'),
    fingerprint    text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    approved_by    text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (mcp_server_id, tool)
);

CREATE TRIGGER mcp_servers_updated_at BEFORE UPDATE ON mcp_servers
    FOR EACH ROW EXECUTE FUNCTION relay_set_updated_at();
CREATE TRIGGER mcp_servers_notify AFTER INSERT OR UPDATE OR DELETE ON mcp_servers
    FOR EACH ROW EXECUTE FUNCTION relay_notify();
CREATE TRIGGER mcp_tool_approvals_updated_at BEFORE UPDATE ON mcp_tool_approvals
    FOR EACH ROW EXECUTE FUNCTION relay_set_updated_at();
CREATE TRIGGER mcp_tool_approvals_notify AFTER INSERT OR UPDATE OR DELETE ON mcp_tool_approvals
    FOR EACH ROW EXECUTE FUNCTION relay_notify('mcp_server_id');

-- A policy grants MCP tools by pattern: "<server>" or "<server>__*" (every
-- tool of the server), "<server>__<tool>", globs with * (path.Match).
-- mcp_require_approval: a tool of a granted server that no operator has
-- approved yet is withheld too (a changed one always is).
ALTER TABLE policies
    ADD COLUMN mcp_grants text[] NOT NULL DEFAULT '{}',
    ADD COLUMN mcp_require_approval boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE policies DROP COLUMN mcp_require_approval, DROP COLUMN mcp_grants;
DROP TABLE mcp_tool_approvals;
DROP TABLE mcp_servers;
