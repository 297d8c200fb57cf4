package usage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store"
)

// Querier reads the ledger and its rollups; *store.Store is one.
type Querier interface {
	SumUsageEvents(ctx context.Context, q store.UsageSumQuery) ([]store.UsageSum, error)
	SumUsageRollups(ctx context.Context, grain string, q store.UsageSumQuery) ([]store.UsageSum, error)
	ListUsageEvents(ctx context.Context, p store.UsageEventsPage) ([]store.UsageEvent, error)
	GetUsageEvent(ctx context.Context, requestID string, f store.UsageFilter) (store.UsageEvent, error)
}

// ErrInvalid is wrapped by the errors of a request that cannot be answered as
// asked (a range that ends before it starts, an unknown dimension, a bad
// cursor, minute buckets over too long a range): a 400 for the control API.
var ErrInvalid = errors.New("invalid usage query")

// InvalidError is an ErrInvalid that names the request parameter at fault
// (group_by, from, interval, cursor) for the control API's error details.
// Its message never echoes a submitted value.
type InvalidError struct {
	Field   string
	Message string
}

func (e *InvalidError) Error() string { return ErrInvalid.Error() + ": " + e.Field + ": " + e.Message }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalid(field, message string) error { return &InvalidError{Field: field, Message: message} }

// Dimension is one of the control API's group_by values.
type Dimension string

// Dimensions of the control API's UsageGroupBy.
const (
	ByProject Dimension = "project"
	ByTeam    Dimension = "team"
	ByModel   Dimension = "model"
	ByKey     Dimension = "key" // the relay key
	ByHost    Dimension = "host"
	ByStatus  Dimension = "status" // the HTTP status sent to the caller
	ByBinding Dimension = "binding"
	ByHostKey Dimension = "host_key"
)

// Interval is the control API's UsageInterval.
type Interval string

// Bucket widths of a time series.
const (
	Minute Interval = "minute"
	Hour   Interval = "hour"
	Day    Interval = "day"
)

// MaxMinuteRange is the longest range a minute-bucketed series may span:
// minutes are summed from the ledger itself, not from the rollups.
const MaxMinuteRange = 48 * time.Hour

// MaxHourRange is the longest range an hour-bucketed series may span (a
// quarter: 2208 buckets per group); longer ranges ask for days.
const MaxHourRange = 92 * 24 * time.Hour

// Filter narrows a query; nil fields do not filter. Projects, when not nil,
// limits the answer to what the caller may read: the projects in Projects and
// the teams in Teams (events recorded under the team, and those of a project
// now in it). An empty, non-nil Projects with no Teams matches nothing;
// Projects nil (a system-wide reader) ignores Teams.
type Filter struct {
	Projects   []uuid.UUID
	Teams      []uuid.UUID
	ProjectID  *uuid.UUID
	TeamID     *uuid.UUID
	RelayKeyID *uuid.UUID
	HostID     *uuid.UUID
	Model      *string
	Status     *int32 // the HTTP status sent to the caller
}

// Totals are the sums of a group (the API's UsageTotals). Fields are in the
// generated type's order, so that controlgen.UsageTotals(t) converts.
// CacheHitRatio is derived: CachedReadTokens / InputTokens (input tokens
// count the cached ones), 0 without input tokens.
type Totals struct {
	BatchCost        int64   `json:"batch_cost"`     // of Cost, finished batches' usage
	BatchRequests    int64   `json:"batch_requests"` // of Requests, finished batches
	CacheHitRatio    float64 `json:"cache_hit_ratio"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CachedReadTokens int64   `json:"cached_read_tokens"`
	Cost             int64   `json:"cost"`   // nano-units of currency
	Errors           int64   `json:"errors"` // status 400 and above
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	Requests         int64   `json:"requests"`
	Saved            int64   `json:"saved"`      // nano-units of currency the prompt cache saved
	ToolCalls        int64   `json:"tool_calls"` // of Requests, tools/calls through /mcp
	ToolCost         int64   `json:"tool_cost"`  // of Cost, the tool calls'
}

// withRatio sets CacheHitRatio from the token sums.
func (t Totals) withRatio() Totals {
	t.CacheHitRatio = 0
	if t.InputTokens > 0 {
		t.CacheHitRatio = float64(min(max(t.CachedReadTokens, 0), t.InputTokens)) / float64(t.InputTokens)
	}
	return t
}

// Group holds the values of the dimensions asked for (the API's
// UsageGroup): a dimension not asked for is nil, and so is an identifier the
// requests did not have (a request refused before routing has no host).
// Fields are in the generated type's order, so that controlgen.UsageGroup(g)
// converts.
type Group struct {
	BindingID  *uuid.UUID `json:"binding_id,omitempty"`
	HostID     *uuid.UUID `json:"host_id,omitempty"`
	HostKeyID  *uuid.UUID `json:"host_key_id,omitempty"`
	Model      *string    `json:"model,omitempty"`
	ProjectID  *uuid.UUID `json:"project_id,omitempty"`
	RelayKeyID *uuid.UUID `json:"relay_key_id,omitempty"`
	Status     *int32     `json:"status,omitempty"`
	TeamID     *uuid.UUID `json:"team_id,omitempty"`
}

// SummaryRequest asks for totals over [From, To) (the API's GET
// /api/usage/summary).
type SummaryRequest struct {
	From, To time.Time
	GroupBy  []Dimension
	Filter   Filter
}

// Row is one group's totals (the API's UsageRow).
type Row struct {
	Group  Group  `json:"group"`
	Totals Totals `json:"totals"`
}

// Summary is the API's UsageSummary. Rows come by descending cost, then by
// group.
type Summary struct {
	From    time.Time   `json:"from"`
	To      time.Time   `json:"to"`
	GroupBy []Dimension `json:"group_by"`
	Rows    []Row       `json:"rows"`
}

// TimeseriesRequest asks for totals per bucket over [From, To) (the API's
// GET /api/usage/timeseries). Interval "" is Hour.
type TimeseriesRequest struct {
	From, To time.Time
	Interval Interval
	GroupBy  []Dimension
	Filter   Filter
}

// Point is one bucket of one group (the API's UsagePoint). Buckets start on
// UTC minute, hour or day boundaries; the first and last may be partial.
type Point struct {
	BucketStart time.Time `json:"bucket_start"`
	Group       Group     `json:"group"`
	Totals      Totals    `json:"totals"`
}

// Timeseries is the API's UsageTimeseries. Points ascend by bucket, then by
// group; empty buckets are left out.
type Timeseries struct {
	From     time.Time   `json:"from"`
	To       time.Time   `json:"to"`
	Interval Interval    `json:"interval"`
	GroupBy  []Dimension `json:"group_by"`
	Points   []Point     `json:"points"`
}

// Summarize answers GET /api/usage/summary: whole UTC days from the daily
// rollups, whole hours from the hourly ones, and only the partial hours at
// the ends of the range from the ledger.
func Summarize(ctx context.Context, q Querier, req SummaryRequest) (Summary, error) {
	dims, err := parseDims(req.GroupBy)
	if err != nil {
		return Summary{}, err
	}
	if err := checkRange(req.From, req.To); err != nil {
		return Summary{}, err
	}
	acc, err := sum(ctx, q, req.From, req.To, "", dims, req.Filter)
	if err != nil {
		return Summary{}, err
	}
	out := Summary{From: req.From, To: req.To, GroupBy: nonNil(req.GroupBy), Rows: make([]Row, 0, len(acc))}
	for k, t := range acc {
		out.Rows = append(out.Rows, Row{Group: k.group(dims), Totals: t.withRatio()})
	}
	slices.SortFunc(out.Rows, func(a, b Row) int {
		if c := cmp.Compare(b.Totals.Cost, a.Totals.Cost); c != 0 {
			return c
		}
		return compareGroups(a.Group, b.Group)
	})
	return out, nil
}

// Series answers GET /api/usage/timeseries. Minute buckets are summed from
// the ledger (so the range may span at most MaxMinuteRange); hour and day
// buckets read the rollups like Summarize.
func Series(ctx context.Context, q Querier, req TimeseriesRequest) (Timeseries, error) {
	dims, err := parseDims(req.GroupBy)
	if err != nil {
		return Timeseries{}, err
	}
	if err := checkRange(req.From, req.To); err != nil {
		return Timeseries{}, err
	}
	iv := req.Interval
	if iv == "" {
		iv = Hour
	}
	switch iv {
	case Minute:
		if req.To.Sub(req.From) > MaxMinuteRange {
			return Timeseries{}, invalid("interval", "minute buckets cover at most 48 hours; ask for hours")
		}
	case Hour:
		if req.To.Sub(req.From) > MaxHourRange {
			return Timeseries{}, invalid("interval", "hour buckets cover at most 92 days; ask for days")
		}
	case Day:
	default:
		return Timeseries{}, invalid("interval", "want minute, hour or day")
	}
	acc, err := sum(ctx, q, req.From, req.To, iv, dims, req.Filter)
	if err != nil {
		return Timeseries{}, err
	}
	out := Timeseries{From: req.From, To: req.To, Interval: iv, GroupBy: nonNil(req.GroupBy), Points: make([]Point, 0, len(acc))}
	for k, t := range acc {
		out.Points = append(out.Points, Point{BucketStart: time.UnixMicro(k.bucket).UTC(), Group: k.group(dims), Totals: t.withRatio()})
	}
	slices.SortFunc(out.Points, func(a, b Point) int {
		if c := a.BucketStart.Compare(b.BucketStart); c != 0 {
			return c
		}
		return compareGroups(a.Group, b.Group)
	})
	return out, nil
}

// groupKey identifies one group of one bucket while sums are merged.
type groupKey struct {
	bucket                                     int64 // Unix microseconds
	project, team, key, host, binding, hostKey uuid.UUID
	model                                      string
	status                                     int32
}

func (k groupKey) group(d store.UsageDims) Group {
	var g Group
	id := func(on bool, v uuid.UUID) *uuid.UUID {
		if !on || v == uuid.Nil {
			return nil
		}
		return &v
	}
	g.ProjectID = id(d.Project, k.project)
	g.TeamID = id(d.Team, k.team)
	g.RelayKeyID = id(d.Key, k.key)
	g.HostID = id(d.Host, k.host)
	g.BindingID = id(d.Binding, k.binding)
	g.HostKeyID = id(d.HostKey, k.hostKey)
	if d.Model {
		m := k.model
		g.Model = &m
	}
	if d.Status {
		s := k.status
		g.Status = &s
	}
	return g
}

// span is one part of a range and where its sums come from.
type span struct {
	from, to time.Time
	grain    string // store.GrainHour, store.GrainDay, or "" for the ledger
}

// plan splits [from, to) into the parts each source can answer: the ledger
// for partial hours, hourly rollups for whole hours, daily rollups for whole
// UTC days (unless the buckets are hours, which days cannot give).
func plan(from, to time.Time, iv Interval) []span {
	if iv == Minute {
		return []span{{from, to, ""}}
	}
	var out []span
	add := func(f, t time.Time, grain string) {
		if f.Before(t) {
			out = append(out, span{f, t, grain})
		}
	}
	h0, h1 := ceil(from, time.Hour), to.Truncate(time.Hour)
	if !h0.Before(h1) {
		add(from, to, "")
		return out
	}
	add(from, h0, "")
	add(h1, to, "")
	d0, d1 := ceil(h0, 24*time.Hour), h1.Truncate(24*time.Hour)
	if iv == Hour || !d0.Before(d1) {
		add(h0, h1, store.GrainHour)
		return out
	}
	add(h0, d0, store.GrainHour)
	add(d0, d1, store.GrainDay)
	add(d1, h1, store.GrainHour)
	return out
}

// ceil rounds t up to a multiple of d since the Unix epoch (UTC boundaries
// for hours and days).
func ceil(t time.Time, d time.Duration) time.Time {
	f := t.Truncate(d)
	if f.Before(t) {
		return f.Add(d)
	}
	return f
}

// sum totals [from, to) from every source of its plan and merges the groups.
func sum(ctx context.Context, q Querier, from, to time.Time, iv Interval, dims store.UsageDims, f Filter) (map[groupKey]Totals, error) {
	acc := make(map[groupKey]Totals)
	for _, sp := range plan(from, to, iv) {
		sq := store.UsageSumQuery{From: sp.from, To: sp.to, Unit: string(iv), By: dims, Filter: store.UsageFilter(f)}
		var rows []store.UsageSum
		var err error
		if sp.grain == "" {
			rows, err = q.SumUsageEvents(ctx, sq)
		} else {
			rows, err = q.SumUsageRollups(ctx, sp.grain, sq)
		}
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			k := groupKey{
				project: r.ProjectID, team: r.TeamID, key: r.RelayKeyID, host: r.HostID,
				binding: r.BindingID, hostKey: r.HostKeyID, model: r.Model, status: r.Status,
			}
			if iv != "" {
				k.bucket = r.Bucket.UnixMicro()
			}
			t := acc[k]
			t.Requests += r.Requests
			t.Errors += r.Errors
			t.InputTokens += r.InputTokens
			t.OutputTokens += r.OutputTokens
			t.CachedReadTokens += r.CachedReadTokens
			t.CacheWriteTokens += r.CacheWriteTokens
			t.ReasoningTokens += r.ReasoningTokens
			t.Cost += r.Cost
			t.Saved += r.Saved
			t.BatchRequests += r.BatchRequests
			t.BatchCost += r.BatchCost
			t.ToolCalls += r.ToolCalls
			t.ToolCost += r.ToolCost
			acc[k] = t
		}
	}
	return acc, nil
}

func parseDims(by []Dimension) (store.UsageDims, error) {
	var d store.UsageDims
	for _, b := range by {
		switch b {
		case ByProject:
			d.Project = true
		case ByTeam:
			d.Team = true
		case ByModel:
			d.Model = true
		case ByKey:
			d.Key = true
		case ByHost:
			d.Host = true
		case ByStatus:
			d.Status = true
		case ByBinding:
			d.Binding = true
		case ByHostKey:
			d.HostKey = true
		default:
			return d, invalid("group_by", "want project, team, model, key, host, status, binding or host_key")
		}
	}
	return d, nil
}

func checkRange(from, to time.Time) error {
	if !from.Before(to) {
		return invalid("from", "must be before to")
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func compareGroups(a, b Group) int {
	return cmp.Or(
		compareID(a.ProjectID, b.ProjectID), compareID(a.TeamID, b.TeamID),
		comparePtr(a.Model, b.Model), compareID(a.RelayKeyID, b.RelayKeyID),
		compareID(a.HostID, b.HostID), comparePtr(a.Status, b.Status),
		compareID(a.BindingID, b.BindingID), compareID(a.HostKeyID, b.HostKeyID),
	)
}

func compareID(a, b *uuid.UUID) int {
	if a == nil || b == nil {
		return cmp.Compare(boolInt(a != nil), boolInt(b != nil))
	}
	return bytes.Compare(a[:], b[:])
}

func comparePtr[T cmp.Ordered](a, b *T) int {
	if a == nil || b == nil {
		return cmp.Compare(boolInt(a != nil), boolInt(b != nil))
	}
	return cmp.Compare(*a, *b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Events ----------------------------------------------------------------------

// EventRow is one stored event (the API's UsageEvent; InferenceTokenID is
// not in the API).
type EventRow = store.UsageEvent

// EventsRequest asks for one page of events of [From, To), oldest first (the
// API's GET /api/usage/events). Cursor is the NextCursor of the page before
// ("" for the first). Limit is clamped to 1..MaxEventsLimit; 0 is
// DefaultEventsLimit.
type EventsRequest struct {
	From, To time.Time
	Filter   Filter
	Limit    int
	Cursor   string
}

// Page sizes of Events.
const (
	DefaultEventsLimit = 50
	MaxEventsLimit     = 500
)

// EventPage is one page of events; NextCursor is nil on the last page.
type EventPage struct {
	Items      []EventRow
	NextCursor *string
}

// Events answers GET /api/usage/events (JSON or, through WriteCSV, CSV).
func Events(ctx context.Context, q Querier, req EventsRequest) (EventPage, error) {
	if err := checkRange(req.From, req.To); err != nil {
		return EventPage{}, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultEventsLimit
	}
	limit = min(limit, MaxEventsLimit)
	p := store.UsageEventsPage{From: req.From, To: req.To, Filter: store.UsageFilter(req.Filter), Limit: int32(limit + 1)}
	if req.Cursor != "" {
		at, id, err := decodeCursor(req.Cursor)
		if err != nil {
			return EventPage{}, err
		}
		p.AfterCreatedAt, p.AfterRequestID = at, id
	}
	rows, err := q.ListUsageEvents(ctx, p)
	if err != nil {
		return EventPage{}, err
	}
	page := EventPage{Items: rows}
	if len(rows) > limit {
		page.Items = rows[:limit]
		last := rows[limit-1]
		c := encodeCursor(last.CreatedAt, last.RequestID)
		page.NextCursor = &c
	}
	return page, nil
}

// EventByRequestID answers GET /api/usage/events/{request_id}: the event of Relay's
// request id, if the caller may read it (f's Projects and Teams; its other
// fields are ignored). An id that is not one Relay mints is ErrInvalid (field
// "request_id"); an event not found or not readable is store.ErrNotFound.
func EventByRequestID(ctx context.Context, q Querier, requestID string, f Filter) (EventRow, error) {
	if !IsRequestID(requestID) {
		return EventRow{}, invalid("request_id", "not a Relay request id (req_ and 32 lowercase hex digits)")
	}
	return q.GetUsageEvent(ctx, requestID, store.UsageFilter{Projects: f.Projects, Teams: f.Teams})
}

// IsRequestID reports whether id has the form of Relay's request ids
// (X-Relay-Request-ID): "req_" and 32 lowercase hex digits.
func IsRequestID(id string) bool {
	h, ok := strings.CutPrefix(id, "req_")
	if !ok || len(h) != 32 {
		return false
	}
	for i := range len(h) {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// A cursor is base64url("<unix microseconds>/<request id>"): the key of the
// last event of a page. Postgres keeps microseconds, so it is exact.
func encodeCursor(at time.Time, requestID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + "/" + requestID))
}

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		if us, id, ok := strings.Cut(string(b), "/"); ok {
			if n, err := strconv.ParseInt(us, 10, 64); err == nil {
				return time.UnixMicro(n), id, nil
			}
		}
	}
	return time.Time{}, "", invalid("cursor", "not a cursor this API returned")
}

// CSVHeader is the header row of WriteCSV: the API's UsageEvent fields.
const CSVHeader = "request_id,created_at,relay_key_id,service_account_id,user_id,project_id,team_id,policy_id," +
	"model,binding_id,host_id,host_key_id,inbound_shape,upstream_shape,stream,status,error_kind,attempts," +
	"input_tokens,output_tokens,cached_read_tokens,cache_write_tokens,reasoning_tokens,cost,ttfb_ms,total_ms,overhead_us," +
	"saved,route\n"

// WriteCSV writes events as CSV rows, after CSVHeader when header is set.
// Absent identifiers are empty cells; times are RFC 3339 in UTC with
// microseconds.
func WriteCSV(w io.Writer, events []EventRow, header bool) error {
	if header {
		if _, err := io.WriteString(w, CSVHeader); err != nil {
			return err
		}
	}
	cw := csv.NewWriter(w)
	rec := make([]string, 29)
	id := func(u *uuid.UUID) string {
		if u == nil {
			return ""
		}
		return u.String()
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	for i := range events {
		e := &events[i]
		rec = append(rec[:0],
			e.RequestID, e.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
			id(e.RelayKeyID), id(e.ServiceAccountID), id(e.UserID), id(e.ProjectID), id(e.TeamID), id(e.PolicyID),
			e.Model, id(e.BindingID), id(e.HostID), id(e.HostKeyID), e.InboundShape, e.UpstreamShape,
			strconv.FormatBool(e.Stream), i64(int64(e.Status)), e.ErrorKind, i64(int64(e.Attempts)),
			i64(e.InputTokens), i64(e.OutputTokens), i64(e.CachedReadTokens), i64(e.CacheWriteTokens),
			i64(e.ReasoningTokens), i64(e.Cost), i64(int64(e.TTFBMs)), i64(int64(e.TotalMs)), i64(int64(e.OverheadUs)),
			i64(e.Saved), str(e.Route),
		)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
