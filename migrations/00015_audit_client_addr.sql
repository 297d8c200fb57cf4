-- +goose Up
-- Where each audited write came from (issue 22): the client's address — the
-- TCP peer, or the client a trusted proxy names in X-Forwarded-For
-- (RELAY_TRUSTED_PROXIES). NULL for rows written before this column and for
-- writes that no request made (the CLI's own commands, migrations).
ALTER TABLE audit_log ADD COLUMN client_addr text
    CONSTRAINT audit_log_client_addr_check CHECK (length(client_addr) <= 64);

-- +goose Down
ALTER TABLE audit_log DROP COLUMN client_addr;
