-- +goose Up
-- Breaker thresholds per host (issue 21, docs/reliability.md#breakers): how
-- many server errors, and how many network failures, in a row open a
-- breaker of one of the host's keys. NULL takes the process setting
-- (RELAY_BREAKER_SERVER_FAILURES, RELAY_BREAKER_NETWORK_FAILURES); the range
-- is the settings' own.
ALTER TABLE hosts
    ADD COLUMN breaker_server_failures int
        CONSTRAINT hosts_breaker_server_failures_check CHECK (breaker_server_failures BETWEEN 1 AND 1000),
    ADD COLUMN breaker_network_failures int
        CONSTRAINT hosts_breaker_network_failures_check CHECK (breaker_network_failures BETWEEN 1 AND 1000);

-- +goose Down
ALTER TABLE hosts DROP COLUMN breaker_server_failures, DROP COLUMN breaker_network_failures;
