-- +goose Up
-- What a usage rollup bucket holds, by kind (docs/usage.md): of its requests
-- and cost, how much was finished batches' usage (inbound_shape batch or
-- message_batch: one event per batch, at the batch price) and how much tool
-- calls through /mcp (inbound_shape mcp); the rest is model calls. Columns,
-- not a key dimension: no re-keying, no more rows. Existing buckets are
-- filled from the ledger where it still holds their events.
ALTER TABLE usage_rollups
    ADD COLUMN batch_requests bigint NOT NULL DEFAULT 0,
    ADD COLUMN batch_cost     bigint NOT NULL DEFAULT 0,
    ADD COLUMN tool_calls     bigint NOT NULL DEFAULT 0,
    ADD COLUMN tool_cost      bigint NOT NULL DEFAULT 0;

WITH k AS (
    SELECT date_bin('1 hour', created_at, '2000-01-01 00:00:00+00') AS bucket,
        coalesce(project_id, '00000000-0000-0000-0000-000000000000') AS project_id,
        coalesce(team_id, '00000000-0000-0000-0000-000000000000') AS team_id,
        coalesce(relay_key_id, '00000000-0000-0000-0000-000000000000') AS relay_key_id,
        coalesce(host_id, '00000000-0000-0000-0000-000000000000') AS host_id,
        model, status,
        coalesce(binding_id, '00000000-0000-0000-0000-000000000000') AS binding_id,
        coalesce(host_key_id, '00000000-0000-0000-0000-000000000000') AS host_key_id,
        count(*) FILTER (WHERE inbound_shape IN ('batch', 'message_batch')) AS batch_requests,
        coalesce(sum(cost) FILTER (WHERE inbound_shape IN ('batch', 'message_batch')), 0) AS batch_cost,
        count(*) FILTER (WHERE inbound_shape = 'mcp') AS tool_calls,
        coalesce(sum(cost) FILTER (WHERE inbound_shape = 'mcp'), 0) AS tool_cost
    FROM usage_events WHERE inbound_shape IN ('batch', 'message_batch', 'mcp')
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
), g AS (
    SELECT gr.grain, gr.detailed, date_bin(gr.width, k.bucket, '2000-01-01 00:00:00+00') AS bucket, k.project_id, k.team_id,
        CASE WHEN gr.detailed THEN k.relay_key_id ELSE '00000000-0000-0000-0000-000000000000' END AS relay_key_id,
        CASE WHEN gr.detailed THEN k.host_id ELSE '00000000-0000-0000-0000-000000000000' END AS host_id,
        k.model, CASE WHEN gr.detailed THEN k.status ELSE 0 END AS status,
        CASE WHEN gr.detailed THEN k.binding_id ELSE '00000000-0000-0000-0000-000000000000' END AS binding_id,
        CASE WHEN gr.detailed THEN k.host_key_id ELSE '00000000-0000-0000-0000-000000000000' END AS host_key_id,
        sum(k.batch_requests) AS batch_requests, sum(k.batch_cost) AS batch_cost,
        sum(k.tool_calls) AS tool_calls, sum(k.tool_cost) AS tool_cost
    FROM k CROSS JOIN (VALUES ('hour', true, interval '1 hour'), ('day', true, interval '1 day'),
        ('hour', false, interval '1 hour'), ('day', false, interval '1 day')) AS gr (grain, detailed, width)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
)
UPDATE usage_rollups AS r SET batch_requests = g.batch_requests, batch_cost = g.batch_cost,
    tool_calls = g.tool_calls, tool_cost = g.tool_cost
FROM g
WHERE r.grain = g.grain AND r.detailed = g.detailed AND r.bucket = g.bucket AND r.project_id = g.project_id
  AND r.team_id = g.team_id AND r.relay_key_id = g.relay_key_id AND r.host_id = g.host_id AND r.model = g.model
  AND r.status = g.status AND r.binding_id = g.binding_id AND r.host_key_id = g.host_key_id;

-- +goose Down
ALTER TABLE usage_rollups
    DROP COLUMN tool_cost,
    DROP COLUMN tool_calls,
    DROP COLUMN batch_cost,
    DROP COLUMN batch_requests;
