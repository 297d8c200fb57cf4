package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// UsageFilter narrows a read of the ledger or the rollups; nil fields do not
// filter. Projects, when not nil, keeps only the rows a caller may read: those
// of the projects in Projects and those of the teams in Teams (recorded under
// the team, or of a project now in it). An empty, non-nil Projects with no
// Teams matches nothing; Teams alone (Projects nil) does not filter.
type UsageFilter struct {
	Projects   []uuid.UUID
	Teams      []uuid.UUID
	ProjectID  *uuid.UUID
	TeamID     *uuid.UUID
	RelayKeyID *uuid.UUID
	HostID     *uuid.UUID
	Model      *string
	Status     *int32
}

// UsageEventsPage asks for up to Limit usage events of [From, To) after
// (AfterCreatedAt, AfterRequestID) in that order (zero values for the first
// page). A zero To means no upper bound.
type UsageEventsPage struct {
	From, To       time.Time
	AfterCreatedAt time.Time
	AfterRequestID string
	Filter         UsageFilter
	Limit          int32
}

// UsageDims says which dimensions a sum is grouped by.
type UsageDims struct {
	Project, Team, Key, Host, Model, Status, Binding, HostKey bool
}

// UsageSumQuery asks for the totals of [From, To), grouped by the dimensions
// in By and, when Unit is "minute", "hour" or "day", by the UTC bucket of that
// width (Unit "" puts everything in one bucket).
type UsageSumQuery struct {
	From, To time.Time
	Unit     string
	By       UsageDims
	Filter   UsageFilter
}

// UsageSum is one group's totals. Dimensions not grouped by hold their zero
// value (uuid.Nil, "", 0, and the Unix epoch for Bucket), and so does an
// absent identifier (a request refused before routing has no host).
type UsageSum struct {
	Bucket           time.Time
	ProjectID        uuid.UUID
	TeamID           uuid.UUID
	RelayKeyID       uuid.UUID
	HostID           uuid.UUID
	Model            string
	Status           int32
	BindingID        uuid.UUID
	HostKeyID        uuid.UUID
	Requests         int64
	Errors           int64
	InputTokens      int64
	OutputTokens     int64
	CachedReadTokens int64
	CacheWriteTokens int64
	ReasoningTokens  int64
	Cost             int64
	Saved            int64
	// Of Requests and Cost, the finished batches' usage (one event per
	// batch) and the tool calls through /mcp; the rest is model calls.
	BatchRequests int64
	BatchCost     int64
	ToolCalls     int64
	ToolCost      int64
}

// EventKind says what a usage event was, by its inbound shape.
type EventKind int

// Event kinds: a model call, a finished batch's usage (inbound shape batch
// or message_batch, one event per batch at the batch price), a tools/call
// through /mcp (inbound shape mcp).
const (
	KindModel EventKind = iota
	KindBatch
	KindTool
)

// String is the kind as the control API names it: model, batch or tool.
func (k EventKind) String() string {
	switch k {
	case KindBatch:
		return "batch"
	case KindTool:
		return "tool"
	}
	return "model"
}

// EventKindOf is the kind of an event of the given inbound shape; the
// rollups' batch and tool columns are summed by it.
func EventKindOf(inboundShape string) EventKind {
	switch inboundShape {
	case "batch", "message_batch":
		return KindBatch
	case "mcp":
		return KindTool
	}
	return KindModel
}

// Rollup grains.
const (
	GrainHour = "hour"
	GrainDay  = "day"
)

// endOfTime stands for "no upper bound".
var endOfTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// InsertUsageEvents appends events to the ledger with COPY, as they are, and
// returns how many it wrote: no deduplication, no rollups. The usage writer
// uses IngestUsageEvents; this is for bulk loads and tests. The ledger is not
// audited.
func (s *Store) InsertUsageEvents(ctx context.Context, events []UsageEvent) (int64, error) {
	rows := make([]dbsqlc.InsertUsageEventsParams, len(events))
	for i, e := range events {
		rows[i] = dbsqlc.InsertUsageEventsParams(e)
	}
	n, err := s.q.InsertUsageEvents(ctx, rows)
	if err != nil {
		return 0, fmt.Errorf("insert usage events: %w", mapErr(err))
	}
	return n, nil
}

// usageColumns are the ledger's columns as the writer fills them: the jsonb
// route_detail of migration 00005 is left NULL, the decision goes in
// route_detail_z.
var usageColumns = []string{
	"request_id", "created_at", "relay_key_id", "service_account_id", "user_id", "project_id", "team_id",
	"policy_id", "model", "binding_id", "host_id", "host_key_id", "inbound_shape", "upstream_shape", "stream",
	"status", "error_kind", "attempts", "input_tokens", "output_tokens", "cached_read_tokens",
	"cache_write_tokens", "reasoning_tokens", "cost", "ttfb_ms", "total_ms", "overhead_us", "inference_token_id",
	"client_request_id", "route", "route_detail_z", "saved",
}

// usageColumnList is usageColumns for SQL. The batch table is made once per
// connection: naming the columns keeps the move right across a migration
// that adds some.
var usageColumnList = strings.Join(usageColumns, ", ")

// The statements of IngestUsageEvents are written by hand: they go through a
// session's temporary table or arrays, which sqlc cannot see in the schema.
const (
	createUsageBatch = `CREATE TEMP TABLE IF NOT EXISTS usage_events_batch
		(LIKE usage_events INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`

	// rollupHourly adds the groups of the CTE hourly (events summed per UTC
	// hour, project, team, relay key, host, model, status, binding and host
	// key, absent identifiers as the nil UUID) to the detailed hourly
	// rollups; the detailed daily and the coarse hourly and daily rollups are
	// summed from those groups. Groups are upserted in key order, so that
	// transactions flushing at once lock rollup rows in the same order and do
	// not deadlock.
	rollupHourly = `INSERT INTO usage_rollups AS r (grain, detailed, bucket, project_id, team_id, relay_key_id, host_id, model, status,
        binding_id, host_key_id,
        requests, errors, input_tokens, output_tokens, cached_read_tokens, cache_write_tokens, reasoning_tokens, cost, saved,
        batch_requests, batch_cost, tool_calls, tool_cost)
    SELECT g.grain, g.detailed, date_bin(g.width, h.bucket, '2000-01-01 00:00:00+00'), h.project_id, h.team_id,
        CASE WHEN g.detailed THEN h.relay_key_id ELSE '00000000-0000-0000-0000-000000000000' END,
        CASE WHEN g.detailed THEN h.host_id ELSE '00000000-0000-0000-0000-000000000000' END,
        h.model COLLATE "C", CASE WHEN g.detailed THEN h.status ELSE 0 END,
        CASE WHEN g.detailed THEN h.binding_id ELSE '00000000-0000-0000-0000-000000000000' END,
        CASE WHEN g.detailed THEN h.host_key_id ELSE '00000000-0000-0000-0000-000000000000' END,
        sum(requests)::bigint, sum(errors)::bigint, sum(input_tokens)::bigint, sum(output_tokens)::bigint,
        sum(cached_read_tokens)::bigint, sum(cache_write_tokens)::bigint, sum(reasoning_tokens)::bigint, sum(cost)::bigint,
        sum(saved)::bigint, sum(batch_requests)::bigint, sum(batch_cost)::bigint, sum(tool_calls)::bigint, sum(tool_cost)::bigint
    FROM hourly AS h CROSS JOIN (VALUES ('hour', true, interval '1 hour'), ('day', true, interval '1 day'),
        ('hour', false, interval '1 hour'), ('day', false, interval '1 day')) AS g (grain, detailed, width)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
    ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
    ON CONFLICT (grain, detailed, bucket, project_id, team_id, relay_key_id, host_id, model, status, binding_id, host_key_id) DO UPDATE SET
        requests = r.requests + excluded.requests,
        errors = r.errors + excluded.errors,
        input_tokens = r.input_tokens + excluded.input_tokens,
        output_tokens = r.output_tokens + excluded.output_tokens,
        cached_read_tokens = r.cached_read_tokens + excluded.cached_read_tokens,
        cache_write_tokens = r.cache_write_tokens + excluded.cache_write_tokens,
        reasoning_tokens = r.reasoning_tokens + excluded.reasoning_tokens,
        cost = r.cost + excluded.cost,
        saved = r.saved + excluded.saved,
        batch_requests = r.batch_requests + excluded.batch_requests,
        batch_cost = r.batch_cost + excluded.batch_cost,
        tool_calls = r.tool_calls + excluded.tool_calls,
        tool_cost = r.tool_cost + excluded.tool_cost`

	// rollupGroups runs rollupHourly on groups summed by the writer, one
	// array per column (usageGroups.args).
	rollupGroups = `WITH hourly AS (
    SELECT * FROM unnest($1::timestamptz[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::int[],
        $8::uuid[], $9::uuid[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[],
        $16::bigint[], $17::bigint[], $18::bigint[], $19::bigint[], $20::bigint[], $21::bigint[], $22::bigint[])
    AS h (bucket, project_id, team_id, relay_key_id, host_id, model, status, binding_id, host_key_id,
        requests, errors, input_tokens, output_tokens, cached_read_tokens, cache_write_tokens, reasoning_tokens, cost, saved,
        batch_requests, batch_cost, tool_calls, tool_cost)
) ` + rollupHourly
)

// ingestUsageBatch moves the batch into the ledger, skipping events it
// already holds, and adds exactly the rows it inserted to the rollups.
// Buckets are UTC (date_bin from a UTC origin: no time zone lookup per
// row).
var ingestUsageBatch = `WITH ins AS (
    INSERT INTO usage_events (` + usageColumnList + `) SELECT ` + usageColumnList + ` FROM usage_events_batch
    ON CONFLICT (created_at, request_id) DO NOTHING
    RETURNING created_at, project_id, team_id, relay_key_id, host_id, model, status, binding_id, host_key_id,
        input_tokens, output_tokens, cached_read_tokens, cache_write_tokens, reasoning_tokens, cost, saved, inbound_shape
), hourly AS (
    SELECT date_bin('1 hour', created_at, '2000-01-01 00:00:00+00') AS bucket,
        coalesce(project_id, '00000000-0000-0000-0000-000000000000') AS project_id,
        coalesce(team_id, '00000000-0000-0000-0000-000000000000') AS team_id,
        coalesce(relay_key_id, '00000000-0000-0000-0000-000000000000') AS relay_key_id,
        coalesce(host_id, '00000000-0000-0000-0000-000000000000') AS host_id,
        model, status,
        coalesce(binding_id, '00000000-0000-0000-0000-000000000000') AS binding_id,
        coalesce(host_key_id, '00000000-0000-0000-0000-000000000000') AS host_key_id,
        count(*) AS requests, count(*) FILTER (WHERE status >= 400) AS errors,
        sum(input_tokens)::bigint AS input_tokens, sum(output_tokens)::bigint AS output_tokens,
        sum(cached_read_tokens)::bigint AS cached_read_tokens, sum(cache_write_tokens)::bigint AS cache_write_tokens,
        sum(reasoning_tokens)::bigint AS reasoning_tokens, sum(cost)::bigint AS cost, sum(saved)::bigint AS saved,
        count(*) FILTER (WHERE inbound_shape IN ('batch', 'message_batch')) AS batch_requests,
        coalesce(sum(cost) FILTER (WHERE inbound_shape IN ('batch', 'message_batch')), 0)::bigint AS batch_cost,
        count(*) FILTER (WHERE inbound_shape = 'mcp') AS tool_calls,
        coalesce(sum(cost) FILTER (WHERE inbound_shape = 'mcp'), 0)::bigint AS tool_cost
    FROM ins
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
), roll AS (
    ` + rollupHourly + `
    RETURNING 1
)
SELECT count(*) FROM ins`

// ErrUsageBatchRejected wraps an IngestUsageEvents error that Postgres
// answered about the batch's data (a data exception or an integrity
// violation): writing the same batch again would fail again. Any other
// error (no connection, a timeout, a shutdown, a lock conflict) may pass.
var ErrUsageBatchRejected = errors.New("usage batch rejected")

// IngestUsageEvents writes one batch of events to the ledger and its rollups
// in one transaction, and returns how many events were new. It is idempotent:
// an event whose (created_at, request_id) is already stored is skipped and
// not counted again, so a batch retried after a commit whose acknowledgement
// was lost changes nothing.
//
// A batch is first copied straight into the ledger, its rollups summed
// here: COPY into the table writes the WAL of many rows in one record and
// none of ON CONFLICT's. Only when that finds an event already stored (a
// retry, a replay) is the batch written again through a temporary table,
// skipping what is there.
func (s *Store) IngestUsageEvents(ctx context.Context, events []UsageEvent) (int64, error) {
	if len(events) == 0 {
		return 0, nil
	}
	src := newUsageRows(events)
	inserted, err := s.ingestFresh(ctx, src)
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" { // the identity index is the ledger's only unique one
		inserted, err = s.ingestDedup(ctx, src)
	}
	if err != nil {
		err = mapErr(err)
		// mapErr has turned some of these into the store's sentinels.
		if errors.As(err, &pg) && (strings.HasPrefix(pg.Code, "22") || strings.HasPrefix(pg.Code, "23")) ||
			errors.Is(err, ErrConflict) || errors.Is(err, ErrReferenced) || errors.Is(err, ErrInvalid) {
			return 0, fmt.Errorf("ingest usage events: %w: %w", ErrUsageBatchRejected, err)
		}
		return 0, fmt.Errorf("ingest usage events: %w", err)
	}
	return inserted, nil
}

// ingestFresh copies a batch none of whose events the ledger holds; an
// event it does hold fails the copy with a unique violation, and nothing
// is written.
func (s *Store) ingestFresh(ctx context.Context, src *usageRows) (int64, error) {
	groups := sumUsageGroups(src.events)
	err := s.InTx(ctx, func(tx *Tx) error {
		src.i = -1
		if _, err := tx.tx.CopyFrom(ctx, pgx.Identifier{"usage_events"}, usageColumns, src); err != nil {
			return fmt.Errorf("copy batch: %w", err)
		}
		if _, err := tx.tx.Exec(ctx, rollupGroups, groups.args()...); err != nil {
			return fmt.Errorf("add rollups: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int64(len(src.events)), nil
}

// ingestDedup writes a batch through the temporary table, skipping the
// events the ledger already holds, and sums the rollups of the rows it
// inserted.
func (s *Store) ingestDedup(ctx context.Context, src *usageRows) (inserted int64, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.tx.Exec(ctx, createUsageBatch); err != nil {
			return fmt.Errorf("create batch table: %w", err)
		}
		src.i = -1
		if _, err := tx.tx.CopyFrom(ctx, pgx.Identifier{"usage_events_batch"}, usageColumns, src); err != nil {
			return fmt.Errorf("copy batch: %w", err)
		}
		if err := tx.tx.QueryRow(ctx, ingestUsageBatch).Scan(&inserted); err != nil {
			return fmt.Errorf("move batch: %w", err)
		}
		return nil
	})
	return inserted, err
}

// usageGroupKey is a detailed hourly rollup's key, as the ledger's rows
// give it (absent identifiers as the nil UUID).
type usageGroupKey struct {
	bucket                   time.Time
	project, team, key, host uuid.UUID
	model                    string
	status                   int32
	binding, hostKey         uuid.UUID
}

// usageGroupSums are a group's totals.
type usageGroupSums struct {
	requests, errors, input, output, cacheRead, cacheWrite, reasoning, cost, saved int64
	batchRequests, batchCost, toolCalls, toolCost                                  int64
}

// usageGroups are a batch summed per detailed hourly rollup, in first-seen
// order.
type usageGroups struct {
	keys []usageGroupKey
	sums []usageGroupSums
}

// sumUsageGroups sums events as the hourly CTE of ingestUsageBatch sums
// the rows it inserted. The hour is taken of the time Postgres stores:
// microseconds, truncated.
func sumUsageGroups(events []UsageEvent) usageGroups {
	var g usageGroups
	at := make(map[usageGroupKey]int, 8)
	for i := range events {
		e := &events[i]
		k := usageGroupKey{
			bucket:  e.CreatedAt.Truncate(time.Microsecond).UTC().Truncate(time.Hour),
			project: orNil(e.ProjectID), team: orNil(e.TeamID), key: orNil(e.RelayKeyID), host: orNil(e.HostID),
			model: e.Model, status: e.Status, binding: orNil(e.BindingID), hostKey: orNil(e.HostKeyID),
		}
		j, ok := at[k]
		if !ok {
			j = len(g.keys)
			at[k] = j
			g.keys = append(g.keys, k)
			g.sums = append(g.sums, usageGroupSums{})
		}
		s := &g.sums[j]
		s.requests++
		if e.Status >= 400 {
			s.errors++
		}
		s.input += e.InputTokens
		s.output += e.OutputTokens
		s.cacheRead += e.CachedReadTokens
		s.cacheWrite += e.CacheWriteTokens
		s.reasoning += e.ReasoningTokens
		s.cost += e.Cost
		s.saved += e.Saved
		switch EventKindOf(e.InboundShape) {
		case KindBatch:
			s.batchRequests++
			s.batchCost += e.Cost
		case KindTool:
			s.toolCalls++
			s.toolCost += e.Cost
		}
	}
	return g
}

// args are rollupGroups' arrays.
func (g usageGroups) args() []any {
	n := len(g.keys)
	var (
		buckets                                    = make([]time.Time, n)
		projects, teams, keys, hosts, bindings, hk = make([]pgtype.UUID, n), make([]pgtype.UUID, n), make([]pgtype.UUID, n),
			make([]pgtype.UUID, n), make([]pgtype.UUID, n), make([]pgtype.UUID, n)
		models   = make([]string, n)
		statuses = make([]int32, n)
		sums     [13][]int64
	)
	for c := range sums {
		sums[c] = make([]int64, n)
	}
	for i, k := range g.keys {
		buckets[i], models[i], statuses[i] = k.bucket, k.model, k.status
		projects[i], teams[i], keys[i], hosts[i] = pgUUID(k.project), pgUUID(k.team), pgUUID(k.key), pgUUID(k.host)
		bindings[i], hk[i] = pgUUID(k.binding), pgUUID(k.hostKey)
		s := g.sums[i]
		for c, v := range [13]int64{s.requests, s.errors, s.input, s.output, s.cacheRead, s.cacheWrite, s.reasoning, s.cost, s.saved,
			s.batchRequests, s.batchCost, s.toolCalls, s.toolCost} {
			sums[c][i] = v
		}
	}
	args := []any{buckets, projects, teams, keys, hosts, models, statuses, bindings, hk}
	for c := range sums {
		args = append(args, sums[c])
	}
	return args
}

func orNil(id *uuid.UUID) uuid.UUID {
	if id == nil {
		return uuid.Nil
	}
	return *id
}

func pgUUID(id uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: true} }

// usageRows feeds events to COPY, reusing one row of values; decisions are
// packed once, for however many copies.
type usageRows struct {
	events []UsageEvent
	detail [][]byte
	i      int
	row    [32]any
}

func newUsageRows(events []UsageEvent) *usageRows {
	r := &usageRows{events: events, detail: make([][]byte, len(events)), i: -1}
	for i := range events {
		r.detail[i] = packDetail(events[i].RouteDetail)
	}
	return r
}

func (r *usageRows) Next() bool { r.i++; return r.i < len(r.events) }

func (r *usageRows) Values() ([]any, error) {
	e := &r.events[r.i]
	var z any
	if d := r.detail[r.i]; d != nil {
		z = d
	}
	r.row = [32]any{
		e.RequestID, e.CreatedAt, uid(e.RelayKeyID), uid(e.ServiceAccountID), uid(e.UserID), uid(e.ProjectID), uid(e.TeamID),
		uid(e.PolicyID), e.Model, uid(e.BindingID), uid(e.HostID), uid(e.HostKeyID), e.InboundShape, e.UpstreamShape, e.Stream,
		e.Status, e.ErrorKind, e.Attempts, e.InputTokens, e.OutputTokens, e.CachedReadTokens,
		e.CacheWriteTokens, e.ReasoningTokens, e.Cost, e.TTFBMs, e.TotalMs, e.OverheadUs, uid(e.InferenceTokenID),
		e.ClientRequestID, e.Route, z, e.Saved,
	}
	return r.row[:], nil
}

// uid hands pgx an identifier in its own type: google/uuid goes through
// driver.Valuer and a failed binary plan for every value, which made COPY
// ten times slower.
func uid(id *uuid.UUID) any {
	if id == nil {
		return nil
	}
	return pgtype.UUID{Bytes: *id, Valid: true}
}

func (r *usageRows) Err() error { return nil }

// ListUsageEvents returns one page of usage events in time order.
func (s *Store) ListUsageEvents(ctx context.Context, p UsageEventsPage) ([]UsageEvent, error) {
	to := p.To
	if to.IsZero() {
		to = endOfTime
	}
	f := p.Filter
	rows, err := s.q.ListUsageEventsPage(ctx, dbsqlc.ListUsageEventsPageParams{
		FromTime: p.From, ToTime: to, AfterCreatedAt: p.AfterCreatedAt, AfterRequestID: p.AfterRequestID,
		Projects: f.Projects, Teams: f.Teams, ProjectID: f.ProjectID, TeamID: f.TeamID, RelayKeyID: f.RelayKeyID,
		HostID: f.HostID, Model: f.Model, Status: f.Status, Limit: p.Limit,
	})
	if err != nil {
		return nil, fmt.Errorf("list usage events: %w", mapErr(err))
	}
	return each(rows, func(r dbsqlc.UsageEvent) UsageEvent { e := UsageEvent(r); readDetail(&e); return e }), nil
}

// GetUsageEvent returns the event recorded for Relay's request id, through
// the ledger's index on request_id (every daily partition is probed once:
// the id carries no time). Only f's Projects and Teams apply: an event the
// caller may not read is ErrNotFound, as is an id never recorded.
func (s *Store) GetUsageEvent(ctx context.Context, requestID string, f UsageFilter) (UsageEvent, error) {
	row, err := s.q.GetUsageEvent(ctx, requestID, f.Projects, f.Teams)
	if err != nil {
		return UsageEvent{}, fmt.Errorf("get usage event: %w", mapErr(err))
	}
	e := UsageEvent(row)
	readDetail(&e)
	return e, nil
}

// readUsage runs a dashboard query in a read-only transaction without JIT
// compilation: Postgres estimates these aggregations as costly enough to
// compile, which then takes longer (a quarter of a second) than the query.
func (s *Store) readUsage(ctx context.Context, fn func(*dbsqlc.Queries) error) error {
	return s.inTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx *Tx) error {
		if _, err := tx.tx.Exec(ctx, "SET LOCAL jit = off"); err != nil {
			return mapErr(err)
		}
		return mapErr(fn(tx.q))
	})
}

// SumUsageEvents totals the ledger itself: exact to the microsecond, but it
// reads every event of the range. Use it for what the rollups cannot answer
// (partial hours, minute buckets).
func (s *Store) SumUsageEvents(ctx context.Context, q UsageSumQuery) ([]UsageSum, error) {
	f := q.Filter
	var rows []dbsqlc.SumUsageEventsRow
	err := s.readUsage(ctx, func(dq *dbsqlc.Queries) (err error) {
		rows, err = dq.SumUsageEvents(ctx, dbsqlc.SumUsageEventsParams{
			Unit: q.Unit, ByProject: q.By.Project, ByTeam: q.By.Team, ByKey: q.By.Key, ByHost: q.By.Host,
			ByModel: q.By.Model, ByStatus: q.By.Status, ByBinding: q.By.Binding, ByHostKey: q.By.HostKey,
			FromTime: q.From, ToTime: q.To,
			Projects: f.Projects, Teams: f.Teams, ProjectID: f.ProjectID, TeamID: f.TeamID, RelayKeyID: f.RelayKeyID,
			HostID: f.HostID, Model: f.Model, Status: f.Status,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sum usage events: %w", mapErr(err))
	}
	return each(rows, func(r dbsqlc.SumUsageEventsRow) UsageSum { return UsageSum(r) }), nil
}

// SumUsageRollups totals the rollups of one grain (GrainHour or GrainDay);
// q.From and q.To must fall on that grain's UTC boundaries. The coarse
// rollups (project, team, model), much smaller, answer unless q groups or
// filters by relay key, host, status, binding or host key.
func (s *Store) SumUsageRollups(ctx context.Context, grain string, q UsageSumQuery) ([]UsageSum, error) {
	f := q.Filter
	var rows []dbsqlc.SumUsageRollupsRow
	err := s.readUsage(ctx, func(dq *dbsqlc.Queries) (err error) {
		rows, err = dq.SumUsageRollups(ctx, dbsqlc.SumUsageRollupsParams{
			Unit: q.Unit, ByProject: q.By.Project, ByTeam: q.By.Team, ByKey: q.By.Key, ByHost: q.By.Host,
			ByModel: q.By.Model, ByStatus: q.By.Status, ByBinding: q.By.Binding, ByHostKey: q.By.HostKey, Grain: grain,
			Detailed: q.By.Key || q.By.Host || q.By.Status || q.By.Binding || q.By.HostKey ||
				f.RelayKeyID != nil || f.HostID != nil || f.Status != nil,
			FromTime: q.From, ToTime: q.To,
			Projects: f.Projects, Teams: f.Teams, ProjectID: f.ProjectID, TeamID: f.TeamID, RelayKeyID: f.RelayKeyID,
			HostID: f.HostID, Model: f.Model, Status: f.Status,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sum usage rollups: %w", mapErr(err))
	}
	return each(rows, func(r dbsqlc.SumUsageRollupsRow) UsageSum { return UsageSum(r) }), nil
}
