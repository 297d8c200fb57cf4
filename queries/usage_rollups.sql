-- SumUsageRollups is SumUsageEvents over the rollups of one grain ('hour' or
-- 'day'), for [from, to) aligned to that grain, with the same zero values.
-- detailed picks the rollups by every dimension; the others are by project,
-- team and model only.
-- name: SumUsageRollups :many
SELECT
    (CASE WHEN sqlc.arg(unit)::text = '' THEN 'epoch'::timestamptz
          ELSE date_trunc(sqlc.arg(unit)::text, bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' END)::timestamptz AS bucket,
    (CASE WHEN sqlc.arg(by_project)::bool THEN project_id ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS project_id,
    (CASE WHEN sqlc.arg(by_team)::bool THEN team_id ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS team_id,
    (CASE WHEN sqlc.arg(by_key)::bool THEN relay_key_id ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS relay_key_id,
    (CASE WHEN sqlc.arg(by_host)::bool THEN host_id ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS host_id,
    (CASE WHEN sqlc.arg(by_model)::bool THEN model ELSE '' END)::text AS model,
    (CASE WHEN sqlc.arg(by_status)::bool THEN status ELSE 0 END)::int AS status,
    (CASE WHEN sqlc.arg(by_binding)::bool THEN binding_id ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS binding_id,
    (CASE WHEN sqlc.arg(by_host_key)::bool THEN host_key_id ELSE '00000000-0000-0000-0000-000000000000'::uuid END)::uuid AS host_key_id,
    coalesce(sum(requests), 0)::bigint AS requests,
    coalesce(sum(errors), 0)::bigint AS errors,
    coalesce(sum(input_tokens), 0)::bigint AS input_tokens,
    coalesce(sum(output_tokens), 0)::bigint AS output_tokens,
    coalesce(sum(cached_read_tokens), 0)::bigint AS cached_read_tokens,
    coalesce(sum(cache_write_tokens), 0)::bigint AS cache_write_tokens,
    coalesce(sum(reasoning_tokens), 0)::bigint AS reasoning_tokens,
    coalesce(sum(cost), 0)::bigint AS cost,
    coalesce(sum(saved), 0)::bigint AS saved,
    coalesce(sum(batch_requests), 0)::bigint AS batch_requests,
    coalesce(sum(batch_cost), 0)::bigint AS batch_cost,
    coalesce(sum(tool_calls), 0)::bigint AS tool_calls,
    coalesce(sum(tool_cost), 0)::bigint AS tool_cost
FROM usage_rollups
WHERE grain = sqlc.arg(grain)::text AND detailed = sqlc.arg(detailed)::bool
  AND bucket >= sqlc.arg(from_time)::timestamptz AND bucket < sqlc.arg(to_time)::timestamptz
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
