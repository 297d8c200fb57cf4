-- +goose Up
-- Degrade instead of wait (issue 23, docs/rate-limits.md#degrade-instead-of-wait):
-- a request that would wait for its rate limit longer than degrade_after_ms,
-- or whose priority is below degrade_below_priority, is served by its model's
-- cheaper fallback instead of waiting. NULL turns each test off; a
-- degrade_after_ms of 0 degrades every request that would wait at all.
ALTER TABLE policies
    ADD COLUMN degrade_after_ms int
        CONSTRAINT policies_degrade_after_ms_check CHECK (degrade_after_ms >= 0),
    ADD COLUMN degrade_below_priority int;

-- +goose Down
ALTER TABLE policies DROP COLUMN degrade_after_ms, DROP COLUMN degrade_below_priority;
