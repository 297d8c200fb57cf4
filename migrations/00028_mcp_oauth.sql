-- +goose Up
-- OAuth client credentials as an MCP server's credential (issue 28,
-- docs/mcp.md): beside the static header (auth_header), Relay can fetch an
-- access token with the client_credentials grant (RFC 6749 §4.4) at
-- oauth_token_url and present it as "Authorization: Bearer <token>". The
-- client secret is sealed like a host key's (exactly one of an env
-- reference or AES-256-GCM ciphertext under RELAY_MASTER_KEY). A server has
-- one credential: a static header or OAuth, never both.
-- oauth_auth_method is how the client authenticates at the token endpoint
-- (RFC 7591's token_endpoint_auth_method): HTTP Basic (the default) or the
-- form's client_id and client_secret.
ALTER TABLE mcp_servers
    ADD COLUMN oauth_token_url text NOT NULL DEFAULT '' CHECK (oauth_token_url = '' OR oauth_token_url ~ '^https?://'),
    ADD COLUMN oauth_client_id text NOT NULL DEFAULT '' CHECK (length(oauth_client_id) <= 512),
    ADD COLUMN oauth_client_secret_ref text CHECK (oauth_client_secret_ref ~ '^env:[A-Za-z_][A-Za-z0-9_]*$'),
    ADD COLUMN oauth_client_secret_ciphertext bytea,
    ADD COLUMN oauth_scopes text[] NOT NULL DEFAULT '{}',
    ADD COLUMN oauth_audience text NOT NULL DEFAULT '',
    ADD COLUMN oauth_resource text NOT NULL DEFAULT '',
    ADD COLUMN oauth_auth_method text NOT NULL DEFAULT 'client_secret_basic'
        CHECK (oauth_auth_method IN ('client_secret_basic', 'client_secret_post')),
    ADD CONSTRAINT mcp_servers_oauth_check CHECK (
        CASE WHEN oauth_token_url = ''
        THEN oauth_client_id = '' AND num_nonnulls(oauth_client_secret_ref, oauth_client_secret_ciphertext) = 0
             AND oauth_scopes = '{}' AND oauth_audience = '' AND oauth_resource = ''
        ELSE oauth_client_id <> '' AND auth_header = '' AND num_nonnulls(oauth_client_secret_ref, oauth_client_secret_ciphertext) = 1
        END);

-- +goose Down
ALTER TABLE mcp_servers
    DROP CONSTRAINT mcp_servers_oauth_check,
    DROP COLUMN oauth_auth_method, DROP COLUMN oauth_resource, DROP COLUMN oauth_audience, DROP COLUMN oauth_scopes,
    DROP COLUMN oauth_client_secret_ciphertext, DROP COLUMN oauth_client_secret_ref, DROP COLUMN oauth_client_id, DROP COLUMN oauth_token_url;
