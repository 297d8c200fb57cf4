-- +goose Up
-- The usage ledger at scale (docs/usage.md):
--
--   * usage_events gets one daily partition per UTC day, made ahead of time by
--     relay_usage_ensure_partitions and dropped by relay_usage_drop_partitions
--     (retention). The DEFAULT partition of 00001 only catches stragglers; the
--     ensure function moves them into their day when it makes the day.
--   * (created_at, request_id) is an event's identity, so a batch the writer
--     retries after a lost commit acknowledgement inserts nothing twice.
--   * usage_rollups holds per-hour and per-day sums by project, team, relay
--     key, host, model and status, and coarser ones by project, team and
--     model. The writer adds to them in the transaction
--     that inserts the events, from the rows actually inserted, so the ledger
--     and the rollups never disagree. Dashboards read the rollups.

ALTER TABLE usage_events ADD COLUMN inference_token_id uuid;

DROP INDEX usage_events_created_idx;
CREATE UNIQUE INDEX usage_events_identity_idx ON usage_events (created_at, request_id);

-- Two sets of rollups, each per UTC hour and per UTC day. The detailed ones
-- are by project, team, relay key, host, model and status: the many keys and
-- statuses of a busy install multiply them. The coarse ones
-- (detailed = false) are by project, team and model only (relay_key_id and
-- host_id nil, status 0; errors still counted): dashboards that neither group
-- nor filter by key, host or status read those. Each of the four lives in its
-- own partition, so a query scans only the one it reads. Absent identifiers
-- are stored as the nil UUID (a primary key cannot hold NULL, and ON CONFLICT
-- needs one); queries turn it back into NULL.
CREATE TABLE usage_rollups (
    grain               text NOT NULL CHECK (grain IN ('hour', 'day')),
    detailed            boolean NOT NULL,
    bucket              timestamptz NOT NULL, -- start of the UTC hour or day
    project_id          uuid NOT NULL,
    team_id             uuid NOT NULL,
    relay_key_id        uuid NOT NULL,
    host_id             uuid NOT NULL,
    model               text NOT NULL,
    status              integer NOT NULL,
    requests            bigint NOT NULL DEFAULT 0,
    errors              bigint NOT NULL DEFAULT 0, -- status >= 400
    input_tokens        bigint NOT NULL DEFAULT 0,
    output_tokens       bigint NOT NULL DEFAULT 0,
    cached_read_tokens  bigint NOT NULL DEFAULT 0,
    cache_write_tokens  bigint NOT NULL DEFAULT 0,
    reasoning_tokens    bigint NOT NULL DEFAULT 0,
    cost                bigint NOT NULL DEFAULT 0, -- nano-units of currency
    PRIMARY KEY (grain, detailed, bucket, project_id, team_id, relay_key_id, host_id, model, status)
) PARTITION BY LIST (grain);
CREATE TABLE usage_rollups_hour PARTITION OF usage_rollups FOR VALUES IN ('hour') PARTITION BY LIST (detailed);
CREATE TABLE usage_rollups_day PARTITION OF usage_rollups FOR VALUES IN ('day') PARTITION BY LIST (detailed);
-- fillfactor leaves room for HOT updates: the writer adds to rows in place.
CREATE TABLE usage_rollups_hour_detailed PARTITION OF usage_rollups_hour FOR VALUES IN (true) WITH (fillfactor = 70);
CREATE TABLE usage_rollups_hour_coarse PARTITION OF usage_rollups_hour FOR VALUES IN (false) WITH (fillfactor = 70);
CREATE TABLE usage_rollups_day_detailed PARTITION OF usage_rollups_day FOR VALUES IN (true) WITH (fillfactor = 70);
CREATE TABLE usage_rollups_day_coarse PARTITION OF usage_rollups_day FOR VALUES IN (false) WITH (fillfactor = 70);

-- relay_usage_ensure_partitions makes the daily partitions of usage_events for
-- first_day..last_day (UTC) that do not exist yet, and returns how many it
-- made. Rows of such a day already in the DEFAULT partition move into the new
-- partition first, so attaching it never fails. Pods serialise on an advisory
-- lock; a busy table makes it give up after lock_timeout, to retry later.
-- +goose StatementBegin
CREATE FUNCTION relay_usage_ensure_partitions(first_day date, last_day date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d    date;
    name text;
    lo   timestamptz;
    hi   timestamptz;
    made integer := 0;
BEGIN
    PERFORM set_config('lock_timeout', '10s', true);
    PERFORM pg_advisory_xact_lock(7526725118432817011); -- "relay usage partitions"
    FOR d IN SELECT g::date FROM generate_series(first_day, last_day, interval '1 day') AS g LOOP
        name := 'usage_events_p' || to_char(d, 'YYYYMMDD');
        CONTINUE WHEN to_regclass(name) IS NOT NULL;
        lo := d::timestamp AT TIME ZONE 'UTC';
        hi := (d + 1)::timestamp AT TIME ZONE 'UTC';
        EXECUTE format('CREATE TABLE %I (LIKE usage_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
        EXECUTE format('WITH moved AS (DELETE FROM usage_events_default WHERE created_at >= $1 AND created_at < $2 RETURNING *) '
            'INSERT INTO %I SELECT * FROM moved', name) USING lo, hi;
        EXECUTE format('ALTER TABLE usage_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', name, lo, hi);
        made := made + 1;
    END LOOP;
    RETURN made;
END;
$$;
-- +goose StatementEnd

-- relay_usage_drop_partitions deletes every usage event older than cutoff
-- (rounded down to a UTC day): whole daily partitions are detached and
-- dropped, older rows in the DEFAULT partition deleted, and the rollups of
-- those days deleted with them. It returns the number of partitions dropped.
-- +goose StatementBegin
CREATE FUNCTION relay_usage_drop_partitions(cutoff timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    edge    timestamptz := date_trunc('day', cutoff AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    name    text;
    dropped integer := 0;
BEGIN
    PERFORM set_config('lock_timeout', '10s', true);
    PERFORM pg_advisory_xact_lock(7526725118432817011);
    FOR name IN
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'usage_events'::regclass AND c.relname ~ '^usage_events_p[0-9]{8}$'
        ORDER BY c.relname
    LOOP
        -- A partition holds [day, day + 1): it can go when day + 1 <= edge.
        CONTINUE WHEN (to_date(substr(name, 15), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC' > edge;
        EXECUTE format('ALTER TABLE usage_events DETACH PARTITION %I', name);
        EXECUTE format('DROP TABLE %I', name);
        dropped := dropped + 1;
    END LOOP;
    DELETE FROM usage_events_default WHERE created_at < edge;
    DELETE FROM usage_rollups WHERE bucket < edge;
    RETURN dropped;
END;
$$;
-- +goose StatementEnd

-- Partitions for the days around the migration; the maintenance loop keeps
-- them coming.
SELECT relay_usage_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 1, (now() AT TIME ZONE 'UTC')::date + 7);

-- +goose Down
-- Daily partitions stay attached: they hold the ledger, and 00001's table
-- takes them as they are.
DROP FUNCTION relay_usage_drop_partitions(timestamptz);
DROP FUNCTION relay_usage_ensure_partitions(date, date);
DROP TABLE usage_rollups;
DROP INDEX usage_events_identity_idx;
CREATE INDEX usage_events_created_idx ON usage_events (created_at);
ALTER TABLE usage_events DROP COLUMN inference_token_id;
