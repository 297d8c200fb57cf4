package usage_test

import (
	"context"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
)

// BenchmarkUsage10M generates a ledger of RELAY_BENCH_EVENTS (default 10M)
// events over 90 days in a test database and times the dashboard queries on
// it. It runs only as a benchmark (it takes many minutes and a few
// GB); the figures go to docs/usage.md:
//
//	go test ./internal/usage -run '^$' -bench Usage10M -timeout 2h
//
// The events: 2000 relay keys in 200 projects in 20 teams, key activity
// skewed (a key's index is 2000·U³), each key on one or two of 20 models
// spread over 5 hosts, 93% answered 200. Events are generated in time order
// and the rollups, built in one pass after the load with the writer's
// grouping, are written in bucket order: the order the writer leaves them in
// (a bulk load in random order makes every index scan a random read).
func BenchmarkUsage10M(b *testing.B) {
	t := testing.TB(b)
	n := 10_000_000
	if v := os.Getenv("RELAY_BENCH_EVENTS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	ctx := context.Background()
	dbURL := pgtest.NewDB(t)
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	pool := st.Pool()
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-90 * 24 * time.Hour)
	if _, err := st.EnsureUsagePartitions(ctx, start, end.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	const chunk = 1_000_000
	for lo := 0; lo < n; lo += chunk {
		_, err := pool.Exec(ctx, `
INSERT INTO usage_events (request_id, created_at, relay_key_id, service_account_id, project_id, team_id, policy_id,
    model, binding_id, host_id, host_key_id, inbound_shape, upstream_shape, stream, status, error_kind, attempts,
    input_tokens, output_tokens, cached_read_tokens, cache_write_tokens, reasoning_tokens, cost, ttfb_ms, total_ms, overhead_us)
SELECT 'req_' || g,
    $1::timestamptz + (g / $5::float8) * ($2::timestamptz - $1::timestamptz) + random() * interval '2 seconds',
    md5('key' || k)::uuid, md5('sa' || k / 10)::uuid, md5('project' || k / 10)::uuid, md5('team' || k / 100)::uuid,
    md5('policy' || k / 100)::uuid,
    'model-' || m, md5('binding' || m)::uuid, md5('host' || m % 5)::uuid, md5('hostkey' || m % 5)::uuid,
    'openai_chat', 'openai', random() < 0.6, s, CASE WHEN s = 200 THEN '' ELSE 'upstream_error' END, 1,
    it, ot, it / 3, 0, ot / 4, it * 2500 + ot * 10000, 200 + (random() * 800)::int, 900 + (random() * 9000)::int, 40
FROM generate_series($3::int, $4::int) AS g,
    LATERAL (SELECT floor(2000 * power(random(), 3))::int AS k, (random() * 100)::int AS r,
        (random() * 4000)::bigint AS it, (random() * 800)::bigint AS ot, g AS gg) AS x,
    LATERAL (SELECT (k % 20 + (r % 3 = 0)::int) % 20 AS m,
        CASE WHEN r < 93 THEN 200 WHEN r < 96 THEN 429 WHEN r < 98 THEN 500 ELSE 499 END AS s) AS y`,
			start, end, lo+1, min(lo+chunk, n), float64(n))
		if err != nil {
			t.Fatal(err)
		}
	}
	loaded := time.Since(began)
	began = time.Now()
	if _, err := pool.Exec(ctx, `
WITH hourly AS (
    SELECT date_bin('1 hour', created_at, '2000-01-01 00:00:00+00') AS bucket,
        coalesce(project_id, '00000000-0000-0000-0000-000000000000') AS project_id,
        coalesce(team_id, '00000000-0000-0000-0000-000000000000') AS team_id,
        coalesce(relay_key_id, '00000000-0000-0000-0000-000000000000') AS relay_key_id,
        coalesce(host_id, '00000000-0000-0000-0000-000000000000') AS host_id,
        model, status, count(*) AS requests, count(*) FILTER (WHERE status >= 400) AS errors,
        sum(input_tokens)::bigint AS i, sum(output_tokens)::bigint AS o, sum(cached_read_tokens)::bigint AS cr,
        sum(cache_write_tokens)::bigint AS cw, sum(reasoning_tokens)::bigint AS re, sum(cost)::bigint AS c
    FROM usage_events GROUP BY 1, 2, 3, 4, 5, 6, 7
)
INSERT INTO usage_rollups
SELECT g.grain, g.detailed, date_bin(g.width, h.bucket, '2000-01-01 00:00:00+00'), project_id, team_id,
    CASE WHEN g.detailed THEN relay_key_id ELSE '00000000-0000-0000-0000-000000000000' END,
    CASE WHEN g.detailed THEN host_id ELSE '00000000-0000-0000-0000-000000000000' END,
    model, CASE WHEN g.detailed THEN status ELSE 0 END,
    sum(requests), sum(errors), sum(i), sum(o), sum(cr), sum(cw), sum(re), sum(c)
FROM hourly AS h CROSS JOIN (VALUES ('hour', true, interval '1 hour'), ('day', true, interval '1 day'),
    ('hour', false, interval '1 hour'), ('day', false, interval '1 day')) AS g (grain, detailed, width)
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
ORDER BY 1, 2, 3`); err != nil {
		t.Fatal(err)
	}
	rolled := time.Since(began)
	for _, table := range []string{"usage_events", "usage_rollups"} {
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+table); err != nil {
			t.Fatal(err)
		}
	}
	var hours, days, coarse int64
	var ledgerSize, rollupSize string
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE grain = 'hour' AND detailed), count(*) FILTER (WHERE grain = 'day' AND detailed),
    count(*) FILTER (WHERE NOT detailed) FROM usage_rollups`).Scan(&hours, &days, &coarse); err != nil {
		t.Fatal(err)
	}
	for table, size := range map[string]*string{"usage_events": &ledgerSize, "usage_rollups": &rollupSize} {
		if err := pool.QueryRow(ctx, `SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) FROM pg_partition_tree($1)`, table).Scan(size); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("loaded %d events in %s, built rollups in %s: %d hourly + %d daily detailed rows, %d coarse; ledger %s, rollups %s",
		n, loaded.Round(time.Second), rolled.Round(time.Second), hours, days, coarse, ledgerSize, rollupSize)

	// Ragged ends, as a dashboard's "now" is; a busy project to filter by.
	to := end.Add(-17*time.Minute - 23*time.Second)
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT md5('project' || 3)::uuid`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	by := func(d ...usage.Dimension) []usage.Dimension { return d }
	type query struct {
		name string
		run  func() (int, error)
	}
	summary := func(span time.Duration, g []usage.Dimension, f usage.Filter) func() (int, error) {
		return func() (int, error) {
			s, err := usage.Summarize(ctx, st, usage.SummaryRequest{From: to.Add(-span), To: to, GroupBy: g, Filter: f})
			return len(s.Rows), err
		}
	}
	series := func(span time.Duration, iv usage.Interval, g []usage.Dimension, f usage.Filter) func() (int, error) {
		return func() (int, error) {
			s, err := usage.Series(ctx, st, usage.TimeseriesRequest{From: to.Add(-span), To: to, Interval: iv, GroupBy: g, Filter: f})
			return len(s.Points), err
		}
	}
	day := 24 * time.Hour
	queries := []query{
		{"summary 24h, total", summary(day, nil, usage.Filter{})},
		{"summary 24h by model", summary(day, by(usage.ByModel), usage.Filter{})},
		{"summary 7d by project", summary(7*day, by(usage.ByProject), usage.Filter{})},
		{"summary 30d by team", summary(30*day, by(usage.ByTeam), usage.Filter{})},
		{"summary 30d by key", summary(30*day, by(usage.ByKey), usage.Filter{})},
		{"summary 30d by model, one project", summary(30*day, by(usage.ByModel), usage.Filter{ProjectID: &project})},
		{"summary 90d by model", summary(90*day, by(usage.ByModel), usage.Filter{})},
		{"summary 90d by all six", summary(90*day, by(usage.ByProject, usage.ByTeam, usage.ByModel, usage.ByKey, usage.ByHost, usage.ByStatus), usage.Filter{})},
		{"timeseries 24h hourly by model", series(day, usage.Hour, by(usage.ByModel), usage.Filter{})},
		{"timeseries 7d hourly, total", series(7*day, usage.Hour, nil, usage.Filter{})},
		{"timeseries 7d hourly by status", series(7*day, usage.Hour, by(usage.ByStatus), usage.Filter{})},
		{"timeseries 30d daily by project", series(30*day, usage.Day, by(usage.ByProject), usage.Filter{})},
		{"timeseries 90d daily, total", series(90*day, usage.Day, nil, usage.Filter{})},
		{"timeseries 24h by minute", series(day, usage.Minute, nil, usage.Filter{})},
		{"events, first page of 24h, one project", func() (int, error) {
			p, err := usage.Events(ctx, st, usage.EventsRequest{From: to.Add(-day), To: to, Filter: usage.Filter{ProjectID: &project}, Limit: 50})
			return len(p.Items), err
		}},
		{"events, first page of 24h", func() (int, error) {
			p, err := usage.Events(ctx, st, usage.EventsRequest{From: to.Add(-day), To: to, Limit: 500})
			return len(p.Items), err
		}},
		{"(ledger only) summary 30d by project", func() (int, error) {
			rows, err := st.SumUsageEvents(ctx, store.UsageSumQuery{From: to.Add(-30 * day), To: to, By: store.UsageDims{Project: true}})
			return len(rows), err
		}},
	}
	if os.Getenv("RELAY_BENCH_AUTO_EXPLAIN") != "" {
		// Plans of the queries slower than 20ms go to the server's log.
		for _, q := range []string{
			"ALTER DATABASE " + pgx.Identifier{dbName(t, dbURL)}.Sanitize() + " SET session_preload_libraries = 'auto_explain'",
			"ALTER DATABASE " + pgx.Identifier{dbName(t, dbURL)}.Sanitize() + " SET auto_explain.log_min_duration = '20ms'",
			"ALTER DATABASE " + pgx.Identifier{dbName(t, dbURL)}.Sanitize() + " SET auto_explain.log_analyze = on",
		} {
			if _, err := pool.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
		if st, err = store.Open(ctx, dbURL); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range queries {
		var times []time.Duration
		var rows int
		for range 3 {
			t0 := time.Now()
			n, err := q.run()
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			times = append(times, time.Since(t0))
			rows = n
		}
		slices.Sort(times)
		t.Logf("%-42s %8s (median of 3; %s … %s), %d rows", q.name, times[1].Round(100*time.Microsecond),
			times[0].Round(100*time.Microsecond), times[2].Round(100*time.Microsecond), rows)
	}
}

func dbName(t testing.TB, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(p.Path, "/")
}
