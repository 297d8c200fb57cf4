-- EnsureUsagePartitions makes the missing daily partitions for the UTC days
-- of first_day..last_day.
-- name: EnsureUsagePartitions :one
SELECT relay_usage_ensure_partitions(
    (sqlc.arg(first_day)::timestamptz AT TIME ZONE 'UTC')::date,
    (sqlc.arg(last_day)::timestamptz AT TIME ZONE 'UTC')::date)::int AS made;

-- DropUsagePartitions deletes the events, partitions and rollups of the UTC
-- days that end at or before cutoff.
-- name: DropUsagePartitions :one
SELECT relay_usage_drop_partitions(sqlc.arg(cutoff)::timestamptz)::int AS dropped;

-- ListUsagePartitions names the daily partitions of usage_events, oldest first.
-- name: ListUsagePartitions :many
SELECT c.relname::text AS name
FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'usage_events'::regclass AND c.relname ~ '^usage_events_p[0-9]{8}$'
ORDER BY c.relname;
