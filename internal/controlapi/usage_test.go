package controlapi_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/client"
)

// ledger is the usage events a test stored, for computing what the API must answer.
type ledger struct {
	events []store.UsageEvent
}

// seed stores events through the writer's path (COPY, dedupe, rollups).
func (b *bundle) seed(events []store.UsageEvent) *ledger {
	b.t.Helper()
	first, last := events[0].CreatedAt, events[0].CreatedAt
	for _, e := range events {
		if e.CreatedAt.Before(first) {
			first = e.CreatedAt
		}
		if e.CreatedAt.After(last) {
			last = e.CreatedAt
		}
	}
	if _, err := b.st.EnsureUsagePartitions(b.ctx, first.Add(-24*time.Hour), last.Add(24*time.Hour)); err != nil {
		b.t.Fatal(err)
	}
	for lo := 0; lo < len(events); lo += 1000 {
		if n, err := b.st.IngestUsageEvents(b.ctx, events[lo:min(lo+1000, len(events))]); err != nil || n != int64(min(1000, len(events)-lo)) {
			b.t.Fatalf("ingest: %d, %v", n, err)
		}
	}
	l := &ledger{events: slices.Clone(events)}
	slices.SortFunc(l.events, func(a, b store.UsageEvent) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.RequestID, b.RequestID)
	})
	return l
}

// totals sums the events of [from, to) that keep says, by the key group gives.
func (l *ledger) totals(from, to time.Time, keep func(*store.UsageEvent) bool, group func(*store.UsageEvent) string) map[string]models.UsageTotals {
	out := map[string]models.UsageTotals{}
	for i := range l.events {
		e := &l.events[i]
		if e.CreatedAt.Before(from) || !e.CreatedAt.Before(to) || (keep != nil && !keep(e)) {
			continue
		}
		k := ""
		if group != nil {
			k = group(e)
		}
		t := out[k]
		t.Requests++
		if e.Status >= 400 {
			t.Errors++
		}
		t.InputTokens += e.InputTokens
		t.OutputTokens += e.OutputTokens
		t.CachedReadTokens += e.CachedReadTokens
		t.CacheWriteTokens += e.CacheWriteTokens
		t.ReasoningTokens += e.ReasoningTokens
		t.Cost += e.Cost
		t.Saved += e.Saved
		switch e.InboundShape {
		case "batch", "message_batch":
			t.BatchRequests++
			t.BatchCost += e.Cost
		case "mcp":
			t.ToolCalls++
			t.ToolCost += e.Cost
		}
		out[k] = t
	}
	for k, t := range out {
		if t.InputTokens > 0 {
			t.CacheHitRatio = float64(min(t.CachedReadTokens, t.InputTokens)) / float64(t.InputTokens)
		}
		out[k] = t
	}
	return out
}

func (l *ledger) ids(from, to time.Time, keep func(*store.UsageEvent) bool) []string {
	var out []string
	for i := range l.events {
		e := &l.events[i]
		if !e.CreatedAt.Before(from) && e.CreatedAt.Before(to) && (keep == nil || keep(e)) {
			out = append(out, e.RequestID)
		}
	}
	return out
}

func idKey(id *uuid.UUID) string {
	if id == nil {
		return "-"
	}
	return id.String()
}

// traffic is n events over hours, from base, in projects (with their teams),
// over 3 relay keys, 2 hosts (one request in 20 refused before routing: no
// host), 2 models (one whose name needs CSV quoting) and 4 statuses.
func traffic(base time.Time, n int, hours int, projects [][2]uuid.UUID) []store.UsageEvent {
	keys := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	hosts := []uuid.UUID{uuid.New(), uuid.New()}
	models := []string{"gpt-4o", `odd "model", with a comma`}
	statuses := []int32{200, 200, 200, 429, 500, 200, 499}
	out := make([]store.UsageEvent, n)
	step := time.Duration(hours) * time.Hour / time.Duration(n)
	for i := range out {
		p := projects[i%len(projects)]
		e := store.UsageEvent{
			RequestID: fmt.Sprintf("req_%05d", n-i), // ids do not follow time order
			CreatedAt: base.Add(time.Duration(i)*step + time.Duration(i%7)*time.Microsecond).Truncate(time.Microsecond),
			ProjectID: &p[0], TeamID: &p[1], RelayKeyID: &keys[i%3], Model: models[i%2],
			InboundShape: "openai_chat", UpstreamShape: "openai", Stream: i%3 == 0, Status: statuses[i%7], Attempts: 1,
			InputTokens: int64(100 + i), OutputTokens: int64(10 + i%50), CachedReadTokens: int64(i % 30), Saved: int64(i % 30 * 270),
			ReasoningTokens: int64(i % 5), Cost: int64(1_000_000 + i*37), TTFBMs: 80, TotalMs: 900, OverheadUs: 40,
		}
		if i%20 != 7 {
			e.HostID = &hosts[i%2]
		}
		if i%13 == 0 {
			e.Cost = 0 // an unpriced request
		}
		switch i % 11 { // a finished batch's usage, a tools/call through /mcp
		case 3:
			e.InboundShape = "batch"
		case 5:
			e.InboundShape, e.Model = "mcp", "docs__lookup"
		case 8:
			e.InboundShape = "message_batch"
		}
		out[i] = e
	}
	return out
}

// TestUsage_AnswersFromTheLedger checks the three endpoints against sums
// computed here over events stored through the writer's path: summary totals
// and every group-by, filters, hourly, daily and minute buckets, the event
// pages and the CSV export.
func TestUsage_AnswersFromTheLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	projects := [][2]uuid.UUID{{uuid.New(), uuid.New()}, {uuid.New(), uuid.New()}, {uuid.New(), uuid.New()}}
	base := time.Now().UTC().Truncate(24 * time.Hour).Add(-3*24*time.Hour + 30*time.Minute)
	l := b.seed(traffic(base, 1300, 60, projects))
	// Ragged ends: partial hours from the ledger, whole hours and days from the rollups.
	from, to := base.Add(17*time.Minute+3*time.Second), base.Add(58*time.Hour+41*time.Minute)

	summary := func(p models.GetUsageSummaryParams) *models.UsageSummary {
		t.Helper()
		p.From, p.To = &from, &to
		return call(c.GetUsageSummaryWithResponse(ctx, &p)).want(t, http.StatusOK).JSON200
	}
	total := l.totals(from, to, nil, nil)[""]
	if s := summary(models.GetUsageSummaryParams{}); len(s.Rows) != 1 || s.Rows[0].Totals != total || !s.From.Equal(from) || !s.To.Equal(to) {
		t.Errorf("summary = %+v, want %+v", s, total)
	}
	if total.Requests < 1000 || total.Errors == 0 || total.Cost == 0 || total.BatchCost == 0 || total.ToolCost == 0 || total.ToolCalls == 0 {
		t.Fatalf("the range holds too little to test: %+v", total)
	}

	groupOf := map[models.UsageGroupBy]struct {
		ev  func(*store.UsageEvent) string
		api func(models.UsageGroup) string
	}{
		models.UsageGroupByProject: {func(e *store.UsageEvent) string { return idKey(e.ProjectID) }, func(g models.UsageGroup) string { return idKey(g.ProjectID) }},
		models.UsageGroupByTeam:    {func(e *store.UsageEvent) string { return idKey(e.TeamID) }, func(g models.UsageGroup) string { return idKey(g.TeamID) }},
		models.UsageGroupByKey:     {func(e *store.UsageEvent) string { return idKey(e.RelayKeyID) }, func(g models.UsageGroup) string { return idKey(g.RelayKeyID) }},
		models.UsageGroupByHost:    {func(e *store.UsageEvent) string { return idKey(e.HostID) }, func(g models.UsageGroup) string { return idKey(g.HostID) }},
		models.UsageGroupByModel:   {func(e *store.UsageEvent) string { return e.Model }, func(g models.UsageGroup) string { return *g.Model }},
		models.UsageGroupByStatus:  {func(e *store.UsageEvent) string { return strconv.Itoa(int(e.Status)) }, func(g models.UsageGroup) string { return strconv.Itoa(int(*g.Status)) }},
	}
	for _, by := range [][]models.UsageGroupBy{
		{models.UsageGroupByProject}, {models.UsageGroupByTeam}, {models.UsageGroupByKey}, {models.UsageGroupByHost},
		{models.UsageGroupByModel}, {models.UsageGroupByStatus}, {models.UsageGroupByProject, models.UsageGroupByModel},
		{models.UsageGroupByHost, models.UsageGroupByStatus, models.UsageGroupByModel},
	} {
		key := func(e *store.UsageEvent) string {
			var parts []string
			for _, d := range by {
				parts = append(parts, groupOf[d].ev(e))
			}
			return strings.Join(parts, "|")
		}
		want := l.totals(from, to, nil, key)
		s := summary(models.GetUsageSummaryParams{GroupBy: &by})
		got := map[string]models.UsageTotals{}
		for i, r := range s.Rows {
			var parts []string
			for _, d := range by {
				parts = append(parts, groupOf[d].api(r.Group))
			}
			got[strings.Join(parts, "|")] = r.Totals
			if i > 0 && r.Totals.Cost > s.Rows[i-1].Totals.Cost {
				t.Errorf("group_by %v: rows not by descending cost", by)
			}
			if r.Group.Model != nil && !slices.Contains(by, models.UsageGroupByModel) {
				t.Errorf("group_by %v: a row has a model", by)
			}
		}
		if !equalMaps(got, want) || !slices.Equal(s.GroupBy, by) {
			t.Errorf("group_by %v:\n got %v\nwant %v", by, got, want)
		}
	}

	// Filters, alone: each one against the same predicate here.
	p0, team1, key := projects[0][0], projects[1][1], *l.events[4].RelayKeyID
	host, model, status := *l.events[1].HostID, `odd "model", with a comma`, int32(429)
	for name, tc := range map[string]struct {
		params models.GetUsageSummaryParams
		keep   func(*store.UsageEvent) bool
	}{
		"project_id":   {models.GetUsageSummaryParams{ProjectID: &p0}, func(e *store.UsageEvent) bool { return *e.ProjectID == p0 }},
		"team_id":      {models.GetUsageSummaryParams{TeamID: &team1}, func(e *store.UsageEvent) bool { return *e.TeamID == team1 }},
		"relay_key_id": {models.GetUsageSummaryParams{RelayKeyID: &key}, func(e *store.UsageEvent) bool { return *e.RelayKeyID == key }},
		"host_id":      {models.GetUsageSummaryParams{HostID: &host}, func(e *store.UsageEvent) bool { return e.HostID != nil && *e.HostID == host }},
		"model":        {models.GetUsageSummaryParams{Model: &model}, func(e *store.UsageEvent) bool { return e.Model == model }},
		"status":       {models.GetUsageSummaryParams{Status: &status}, func(e *store.UsageEvent) bool { return e.Status == status }},
		"model+status": {models.GetUsageSummaryParams{Model: &model, Status: &status}, func(e *store.UsageEvent) bool { return e.Model == model && e.Status == status }},
	} {
		want := l.totals(from, to, tc.keep, nil)[""]
		if s := summary(tc.params); len(s.Rows) != 1 || s.Rows[0].Totals != want || want.Requests == 0 {
			t.Errorf("%s: %+v, want %+v", name, s.Rows, want)
		}
	}
	nobody := uuid.New()
	if s := summary(models.GetUsageSummaryParams{ProjectID: &nobody}); len(s.Rows) != 0 {
		t.Errorf("an unknown project: %+v", s.Rows)
	}

	// Time series: buckets on UTC boundaries, the first and last partial.
	for _, tc := range []struct {
		iv       models.UsageInterval
		from, to time.Time
		width    time.Duration
	}{
		{models.UsageIntervalHour, from, to, time.Hour},
		{models.UsageIntervalDay, from, to, 24 * time.Hour},
		{models.UsageIntervalMinute, base.Add(5*time.Hour + 10*time.Second), base.Add(6*time.Hour + 30*time.Minute), time.Minute},
	} {
		by := []models.UsageGroupBy{models.UsageGroupByModel}
		key := func(e *store.UsageEvent) string {
			return e.CreatedAt.Truncate(tc.width).Format(time.RFC3339) + "|" + e.Model
		}
		want := l.totals(tc.from, tc.to, nil, key)
		ts := call(c.GetUsageTimeseriesWithResponse(ctx, &models.GetUsageTimeseriesParams{From: &tc.from, To: &tc.to, Interval: &tc.iv, GroupBy: &by})).
			want(t, http.StatusOK).JSON200
		got := map[string]models.UsageTotals{}
		for i, p := range ts.Points {
			got[p.BucketStart.UTC().Format(time.RFC3339)+"|"+*p.Group.Model] = p.Totals
			if i > 0 && p.BucketStart.Before(ts.Points[i-1].BucketStart) {
				t.Errorf("%s: points not ascending", tc.iv)
			}
		}
		if !equalMaps(got, want) || ts.Interval != tc.iv || len(want) < 3 {
			t.Errorf("%s buckets:\n got %v\nwant %v", tc.iv, got, want)
		}
	}
	// The default interval is hours.
	if ts := call(c.GetUsageTimeseriesWithResponse(ctx, &models.GetUsageTimeseriesParams{From: &from, To: &to})).want(t, http.StatusOK).JSON200; ts.Interval != models.UsageIntervalHour || len(ts.Points) < 50 {
		t.Errorf("default interval: %s, %d points", ts.Interval, len(ts.Points))
	}

	// Events: every event of the range once, in order, over pages of 7.
	want := l.ids(from, to, nil)
	var got []string
	var cursor *string
	kinds := map[models.UsageEventKind]int{}
	for pages := 0; ; pages++ {
		r := call(c.ListUsageEventsWithResponse(ctx, &models.ListUsageEventsParams{From: &from, To: &to, Limit: ptr[int32](97), Cursor: cursor})).
			want(t, http.StatusOK).JSON200
		for _, e := range r.Items {
			got = append(got, e.RequestID)
			kinds[e.Kind]++
			if want := models.UsageEventKind(store.EventKindOf(e.InboundShape).String()); e.Kind != want {
				t.Errorf("event %s of inbound %s: kind %q, want %q", e.RequestID, e.InboundShape, e.Kind, want)
			}
		}
		if cursor = r.NextCursor; cursor == nil || pages > 100 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged events: %d ids, want %d (same order: %v)", len(got), len(want), slices.Equal(got, want))
	}
	if kinds[models.UsageEventKindModel] == 0 || kinds[models.UsageEventKindBatch] == 0 || kinds[models.UsageEventKindTool] == 0 {
		t.Errorf("event kinds %v: want every kind", kinds)
	}
	first := call(c.ListUsageEventsWithResponse(ctx, &models.ListUsageEventsParams{From: &from, To: &to, Model: &model, Status: &status, Limit: ptr[int32](1)})).
		want(t, http.StatusOK).JSON200
	if len(first.Items) != 1 || first.Items[0].Model != model || first.Items[0].Status != status || first.Items[0].Cost == 0 && first.Items[0].InputTokens == 0 {
		t.Errorf("filtered event = %+v", first.Items)
	}

	// CSV, the whole range streamed (more events than one page of the
	// ledger), parsed back.
	rows := csvExport(t, c, ctx, &models.ListUsageEventsParams{From: &from, To: &to})
	header := strings.Split(strings.TrimSpace(usageCSVHeader), ",")
	if !slices.Equal(rows[0], header) {
		t.Fatalf("csv header = %v", rows[0])
	}
	byID := map[string]store.UsageEvent{}
	for _, e := range l.events {
		byID[e.RequestID] = e
	}
	var csvIDs []string
	col := func(name string) int { return slices.Index(header, name) }
	for _, r := range rows[1:] {
		csvIDs = append(csvIDs, r[0])
		e := byID[r[0]]
		at, err := time.Parse(time.RFC3339Nano, r[col("created_at")])
		if err != nil || !at.Equal(e.CreatedAt) || r[col("model")] != e.Model || r[col("cost")] != strconv.FormatInt(e.Cost, 10) ||
			r[col("saved")] != strconv.FormatInt(e.Saved, 10) ||
			r[col("project_id")] != e.ProjectID.String() || r[col("host_id")] != map[bool]string{true: "", false: idKey(e.HostID)}[e.HostID == nil] ||
			r[col("user_id")] != "" || r[col("stream")] != strconv.FormatBool(e.Stream) || len(r) != len(header) {
			t.Fatalf("csv row %v does not match %+v", r, e)
		}
	}
	if !slices.Equal(csvIDs, want) {
		t.Errorf("csv export: %d rows, want %d", len(csvIDs), len(want))
	}
	// CSV with limit pages like JSON; the next cursor comes in X-Next-Cursor.
	var paged []string
	cursor = nil
	for pages := 0; pages < 100; pages++ {
		resp, err := c.ListUsageEvents(ctx, &models.ListUsageEventsParams{From: &from, To: &to, Limit: ptr[int32](500), Cursor: cursor, Format: ptr(models.UsageEventsFormatCsv)})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(resp.Body).ReadAll()
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(recs) < 1 || len(recs) > 501 {
			t.Fatalf("csv page: %d, %d records, %v", resp.StatusCode, len(recs), err)
		}
		for _, r := range recs[1:] {
			paged = append(paged, r[0])
		}
		next := resp.Header.Get("X-Next-Cursor")
		if next == "" {
			break
		}
		cursor = &next
	}
	if !slices.Equal(paged, want) {
		t.Errorf("csv pages: %d rows, want %d", len(paged), len(want))
	}
}

// usageCSVHeader is the documented column order.
const usageCSVHeader = "request_id,created_at,relay_key_id,service_account_id,user_id,project_id,team_id,policy_id," +
	"model,binding_id,host_id,host_key_id,inbound_shape,upstream_shape,stream,status,error_kind,attempts," +
	"input_tokens,output_tokens,cached_read_tokens,cache_write_tokens,reasoning_tokens,cost,ttfb_ms,total_ms,overhead_us," +
	"saved,route"

// csvExport asks for CSV and parses it; it fails unless the response is a
// whole-range export (no X-Next-Cursor).
func csvExport(t *testing.T, c *client.ClientWithResponses, ctx context.Context, p *models.ListUsageEventsParams) [][]string {
	t.Helper()
	p.Format = ptr(models.UsageEventsFormatCsv)
	resp, err := c.ListUsageEvents(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/csv" || resp.Header.Get("X-Next-Cursor") != "" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("csv export: %d %s %s", resp.StatusCode, resp.Header, b)
	}
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("csv export does not parse: %v", err)
	}
	return rows
}

func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestUsage_RefusesWhatItCannotAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	to := time.Now()
	minute, week := models.UsageIntervalMinute, to.Add(-3*24*time.Hour)
	call(c.GetUsageTimeseriesWithResponse(ctx, &models.GetUsageTimeseriesParams{From: &week, To: &to, Interval: &minute})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "interval")
	long := to.Add(-100 * 24 * time.Hour)
	call(c.GetUsageTimeseriesWithResponse(ctx, &models.GetUsageTimeseriesParams{From: &long, To: &to})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "interval")
	day := models.UsageIntervalDay
	call(c.GetUsageTimeseriesWithResponse(ctx, &models.GetUsageTimeseriesParams{From: &long, To: &to, Interval: &day})).want(t, http.StatusOK)
	call(c.GetUsageSummaryWithResponse(ctx, &models.GetUsageSummaryParams{From: &to, To: &week})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "from")
	call(c.GetUsageSummaryWithResponse(ctx, &models.GetUsageSummaryParams{GroupBy: &[]models.UsageGroupBy{"policy"}})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "group_by")
	call(c.GetUsageSummaryWithResponse(ctx, &models.GetUsageSummaryParams{Status: ptr[int32](42)})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "status")
	call(c.ListUsageEventsWithResponse(ctx, &models.ListUsageEventsParams{Cursor: ptr("not-ours")})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "cursor")
	// CSV reports a bad cursor as an Error too: nothing is written before the first page is read.
	csvFormat := models.UsageEventsFormatCsv
	call(c.ListUsageEventsWithResponse(ctx, &models.ListUsageEventsParams{Cursor: ptr("bm90LWEtY3Vyc29y"), Format: &csvFormat})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "cursor")
}

// TestUsage_RBAC runs the subjects of the role matrix over usage in three
// projects of two teams, plus usage recorded under team A for a project that
// has since been deleted and usage of A2 recorded under a team it has since
// left: each sees only the projects it can read.
func TestUsage_RBAC(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	w := buildWorld(t, b)
	gone, formerTeam := uuid.New(), uuid.New()
	base := time.Now().UTC().Add(-6 * time.Hour)
	var events []store.UsageEvent
	for _, u := range []struct {
		project, team uuid.UUID
		n             int
	}{{w.a1.ID, w.teamA.ID, 3}, {w.a2.ID, w.teamA.ID, 3}, {w.a2.ID, formerTeam, 2}, {w.b1.ID, w.teamB.ID, 7}, {gone, w.teamA.ID, 11}} {
		for range u.n {
			events = append(events, store.UsageEvent{
				RequestID: fmt.Sprintf("req_%d", len(events)), CreatedAt: base.Add(time.Duration(len(events)) * time.Minute),
				ProjectID: &u.project, TeamID: &u.team, Model: "gpt", InboundShape: "openai_chat", UpstreamShape: "openai",
				Status: 200, Attempts: 1, InputTokens: 10, OutputTokens: 1, Cost: 5,
			})
		}
	}
	b.seed(events)
	counts := map[uuid.UUID]int{w.a1.ID: 3, w.a2.ID: 5, w.b1.ID: 7, gone: 11}

	// Requests each subject sees: nobody has no role (403); team A's admin
	// sees A1, A2 (all of it: the project is in team A now) and what was
	// recorded under team A.
	want := map[string]int{"viewerA1": 3, "devA1": 3, "padminA1": 3, "groupA1": 3, "adminAtA1": 3, "tadminA": 3 + 5 + 11, "sysviewer": 26, "admin": 26}
	for _, name := range subjectNames {
		s := w.users[name]
		if name == "nobody" {
			call(s.GetUsageSummaryWithResponse(ctx, nil)).wantErr(t, http.StatusForbidden, "forbidden", "")
			call(s.GetUsageTimeseriesWithResponse(ctx, nil)).wantErr(t, http.StatusForbidden, "forbidden", "")
			call(s.ListUsageEventsWithResponse(ctx, nil)).wantErr(t, http.StatusForbidden, "forbidden", "")
			continue
		}
		n := int64(want[name])
		by := []models.UsageGroupBy{models.UsageGroupByProject}
		sum := call(s.GetUsageSummaryWithResponse(ctx, &models.GetUsageSummaryParams{GroupBy: &by})).want(t, http.StatusOK).JSON200
		var total int64
		for _, r := range sum.Rows {
			total += r.Totals.Requests
			if p := *r.Group.ProjectID; r.Totals.Requests != int64(counts[p]) {
				t.Errorf("%s: project %s has %d requests, want %d", name, p, r.Totals.Requests, counts[p])
			}
		}
		if total != n {
			t.Errorf("%s: summary counts %d requests, want %d", name, total, n)
		}
		ts := call(s.GetUsageTimeseriesWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200
		total = 0
		for _, p := range ts.Points {
			total += p.Totals.Requests
		}
		if total != n {
			t.Errorf("%s: timeseries counts %d requests, want %d", name, total, n)
		}
		if ev := call(s.ListUsageEventsWithResponse(ctx, &models.ListUsageEventsParams{Limit: ptr[int32](500)})).want(t, http.StatusOK).JSON200; len(ev.Items) != int(n) {
			t.Errorf("%s: %d events, want %d", name, len(ev.Items), n)
		}
		if rows := csvExport(t, s.ClientWithResponses, ctx, &models.ListUsageEventsParams{}); len(rows)-1 != int(n) {
			t.Errorf("%s: %d csv rows, want %d", name, len(rows)-1, n)
		}
		// Asking for what it cannot read is an empty answer, as list filters are.
		teamB, b1 := w.teamB.ID, w.b1.ID
		seesB := name == "sysviewer" || name == "admin"
		for what, got := range map[string]int{
			"team B": len(call(s.GetUsageSummaryWithResponse(ctx, &models.GetUsageSummaryParams{TeamID: &teamB})).want(t, http.StatusOK).JSON200.Rows),
			"B1":     len(call(s.ListUsageEventsWithResponse(ctx, &models.ListUsageEventsParams{ProjectID: &b1})).want(t, http.StatusOK).JSON200.Items),
		} {
			if (got > 0) != seesB {
				t.Errorf("%s: usage of %s: %d rows", name, what, got)
			}
		}
	}
}

// TestUsage_EventByRequestID looks events up by Relay's request id: on any
// day of the ledger, with their routing decision, only within the caller's
// reach (another tenant's event is the 404 of an id never recorded), and a
// malformed id is a 400.
func TestUsage_EventByRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	w := buildWorld(t, b)
	now := time.Now().UTC().Truncate(time.Microsecond)
	reqID := func() string { return "req_" + strings.ReplaceAll(uuid.NewString(), "-", "") }
	route, detail := "gpt via a (priority)", json.RawMessage(`{"model":"gpt","strategy":"priority"}`)
	mine := store.UsageEvent{RequestID: reqID(), CreatedAt: now.Add(-50 * time.Hour), ProjectID: &w.a1.ID, TeamID: &w.teamA.ID,
		Model: "gpt", InboundShape: "openai_chat", UpstreamShape: "openai", Status: 200, Attempts: 1, InputTokens: 12,
		Cost: 7, Route: &route, RouteDetail: detail}
	theirs := store.UsageEvent{RequestID: reqID(), CreatedAt: now.Add(-time.Hour), ProjectID: &w.b1.ID, TeamID: &w.teamB.ID,
		Model: "gpt", InboundShape: "openai_chat", UpstreamShape: "openai", Status: 500, Attempts: 2}
	b.seed([]store.UsageEvent{mine, theirs})

	got := call(w.users["viewerA1"].GetUsageEventWithResponse(ctx, mine.RequestID)).want(t, http.StatusOK).JSON200
	if got.RequestID != mine.RequestID || !got.CreatedAt.Equal(mine.CreatedAt) || *got.ProjectID != w.a1.ID ||
		got.Status != 200 || got.InputTokens != 12 || got.Cost != 7 || got.Route != route {
		t.Errorf("event %+v, want %+v", got, mine)
	}
	var d map[string]string
	if err := json.Unmarshal(got.RouteDetail, &d); err != nil || d["strategy"] != "priority" {
		t.Errorf("route_detail %s: %v", got.RouteDetail, err)
	}
	if e := call(b.admin.GetUsageEventWithResponse(ctx, theirs.RequestID)).want(t, http.StatusOK).JSON200; e.Status != 500 || e.Attempts != 2 {
		t.Errorf("admin reads %+v", e)
	}

	// Another tenant's event and an id never recorded answer alike.
	notMine := call(w.users["viewerA1"].GetUsageEventWithResponse(ctx, theirs.RequestID)).wantErr(t, http.StatusNotFound, "not_found", "")
	unknown := call(b.admin.GetUsageEventWithResponse(ctx, reqID())).wantErr(t, http.StatusNotFound, "not_found", "")
	if notMine.Message != unknown.Message || (notMine.Details == nil) != (unknown.Details == nil) {
		t.Errorf("another tenant's event: %+v; an unknown id: %+v", notMine, unknown)
	}
	call(w.users["tadminA"].GetUsageEventWithResponse(ctx, mine.RequestID)).want(t, http.StatusOK)
	call(w.users["tadminA"].GetUsageEventWithResponse(ctx, theirs.RequestID)).wantErr(t, http.StatusNotFound, "not_found", "")
	call(w.users["nobody"].GetUsageEventWithResponse(ctx, mine.RequestID)).wantErr(t, http.StatusForbidden, "forbidden", "")

	for _, bad := range []string{"req_123", strings.ToUpper(mine.RequestID), "x" + mine.RequestID[1:], mine.RequestID + "0"} {
		call(b.admin.GetUsageEventWithResponse(ctx, bad)).wantErr(t, http.StatusBadRequest, "invalid_request", "request_id")
	}
}
