-- InsertUsageEvents appends rows with COPY, as they are: no deduplication
-- and no rollups (store.IngestUsageEvents does both). Columns are in table
-- order, so a UsageEvent converts to its params.
-- name: InsertUsageEvents :copyfrom
INSERT INTO usage_events (
    request_id, created_at, relay_key_id, service_account_id, user_id, project_id, team_id,
    policy_id, model, binding_id, host_id, host_key_id, inbound_shape, upstream_shape, stream,
    status, error_kind, attempts, input_tokens, output_tokens, cached_read_tokens,
    cache_write_tokens, reasoning_tokens, cost, ttfb_ms, total_ms, overhead_us, inference_token_id,
    client_request_id, route, route_detail, saved, route_detail_z
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
    $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33
);

-- ListUsageEventsPage pages through the events of [from, to) in time order;
-- the key is (created_at, request_id), the ledger's unique index. Filters are
-- optional. When projects is not NULL, only the rows the caller may read are
-- kept: those of the projects in projects, and those of the teams in teams
-- (recorded under the team, or of a project now in it). The teams part is
-- guarded by its cardinality so that, planned for the values given, a caller
-- without team roles filters on project_id alone.
-- name: ListUsageEventsPage :many
SELECT * FROM usage_events
WHERE created_at >= sqlc.arg(from_time)::timestamptz AND created_at < sqlc.arg(to_time)::timestamptz
  AND (created_at, request_id) > (sqlc.arg(after_created_at)::timestamptz, sqlc.arg(after_request_id)::text)
  AND (sqlc.narg(projects)::uuid[] IS NULL OR project_id = ANY (sqlc.narg(projects)::uuid[])
       OR (coalesce(cardinality(sqlc.narg(teams)::uuid[]), 0) > 0 AND (team_id = ANY (sqlc.narg(teams)::uuid[])
           OR project_id IN (SELECT p.id FROM projects AS p WHERE p.team_id = ANY (sqlc.narg(teams)::uuid[])))))
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
  AND (sqlc.narg(relay_key_id)::uuid IS NULL OR relay_key_id = sqlc.narg(relay_key_id))
  AND (sqlc.narg(host_id)::uuid IS NULL OR host_id = sqlc.narg(host_id))
  AND (sqlc.narg(model)::text IS NULL OR model = sqlc.narg(model))
  AND (sqlc.narg(status)::int IS NULL OR status = sqlc.narg(status))
ORDER BY created_at, request_id
LIMIT sqlc.arg('limit')::int;

-- SumUsageEvents totals the events of [from, to) grouped by the dimensions
-- whose by_* flag is set and, when unit is not empty, by the UTC bucket
-- date_trunc(unit) starts. Dimensions not asked for come back as the zero
-- value (the nil UUID, '', 0, the epoch), as does an absent identifier. Dashboards read it only
-- for the parts of a range the rollups do not cover (partial hours, minutes).
-- name: SumUsageEvents :many
SELECT
    (CASE WHEN sqlc.arg(unit)::text = '' THEN 'epoch'::timestamptz
          ELSE date_trunc(sqlc.arg(unit)::text, created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' END)::timestamptz AS bucket,
    (CASE WHEN sqlc.arg(by_project)::bool THEN coalesce(project_id, '00000000-0000-0000-0000-000000000000'::uuid) ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS project_id,
    (CASE WHEN sqlc.arg(by_team)::bool THEN coalesce(team_id, '00000000-0000-0000-0000-000000000000'::uuid) ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS team_id,
    (CASE WHEN sqlc.arg(by_key)::bool THEN coalesce(relay_key_id, '00000000-0000-0000-0000-000000000000'::uuid) ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS relay_key_id,
    (CASE WHEN sqlc.arg(by_host)::bool THEN coalesce(host_id, '00000000-0000-0000-0000-000000000000'::uuid) ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS host_id,
    (CASE WHEN sqlc.arg(by_model)::bool THEN model ELSE '' END)::text AS model,
    (CASE WHEN sqlc.arg(by_status)::bool THEN status ELSE 0 END)::int AS status,
    (CASE WHEN sqlc.arg(by_binding)::bool THEN coalesce(binding_id, '00000000-0000-0000-0000-000000000000'::uuid) ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS binding_id,
    (CASE WHEN sqlc.arg(by_host_key)::bool THEN coalesce(host_key_id, '00000000-0000-0000-0000-000000000000'::uuid) ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS host_key_id,
    count(*)::bigint AS requests,
    (count(*) FILTER (WHERE status >= 400))::bigint AS errors,
    coalesce(sum(input_tokens), 0)::bigint AS input_tokens,
    coalesce(sum(output_tokens), 0)::bigint AS output_tokens,
    coalesce(sum(cached_read_tokens), 0)::bigint AS cached_read_tokens,
    coalesce(sum(cache_write_tokens), 0)::bigint AS cache_write_tokens,
    coalesce(sum(reasoning_tokens), 0)::bigint AS reasoning_tokens,
    coalesce(sum(cost), 0)::bigint AS cost,
    coalesce(sum(saved), 0)::bigint AS saved,
    (count(*) FILTER (WHERE inbound_shape IN ('batch', 'message_batch')))::bigint AS batch_requests,
    coalesce(sum(cost) FILTER (WHERE inbound_shape IN ('batch', 'message_batch')), 0)::bigint AS batch_cost,
    (count(*) FILTER (WHERE inbound_shape = 'mcp'))::bigint AS tool_calls,
    coalesce(sum(cost) FILTER (WHERE inbound_shape = 'mcp'), 0)::bigint AS tool_cost
FROM usage_events
WHERE created_at >= sqlc.arg(from_time)::timestamptz AND created_at < sqlc.arg(to_time)::timestamptz
  AND (sqlc.narg(projects)::uuid[] IS NULL OR project_id = ANY (sqlc.narg(projects)::uuid[])
       OR (coalesce(cardinality(sqlc.narg(teams)::uuid[]), 0) > 0 AND (team_id = ANY (sqlc.narg(teams)::uuid[])
           OR project_id IN (SELECT p.id FROM projects AS p WHERE p.team_id = ANY (sqlc.narg(teams)::uuid[])))))
  AND (sqlc.narg(project_id)::uuid IS NULL OR project_id = sqlc.narg(project_id))
  AND (sqlc.narg(team_id)::uuid IS NULL OR team_id = sqlc.narg(team_id))
  AND (sqlc.narg(relay_key_id)::uuid IS NULL OR relay_key_id = sqlc.narg(relay_key_id))
  AND (sqlc.narg(host_id)::uuid IS NULL OR host_id = sqlc.narg(host_id))
  AND (sqlc.narg(model)::text IS NULL OR model = sqlc.narg(model))
  AND (sqlc.narg(status)::int IS NULL OR status = sqlc.narg(status))
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;

-- GetUsageEvent returns the event Relay recorded for a request id (the
-- X-Relay-Request-ID), through usage_events_request_idx, when the caller may
-- read it: the projects and teams filter of ListUsageEventsPage. An event of
-- a project the caller cannot read is no row, as is an id never recorded.
-- Should an id appear twice (ids clients sent, kept from before migration
-- 00004), the latest readable event wins.
-- name: GetUsageEvent :one
SELECT * FROM usage_events
WHERE request_id = sqlc.arg(request_id)::text
  AND (sqlc.narg(projects)::uuid[] IS NULL OR project_id = ANY (sqlc.narg(projects)::uuid[])
       OR (coalesce(cardinality(sqlc.narg(teams)::uuid[]), 0) > 0 AND (team_id = ANY (sqlc.narg(teams)::uuid[])
           OR project_id IN (SELECT p.id FROM projects AS p WHERE p.team_id = ANY (sqlc.narg(teams)::uuid[])))))
ORDER BY created_at DESC
LIMIT 1;
