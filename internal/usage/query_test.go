package usage_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
)

// ledger is a store with generated events and the events themselves, the
// ground truth the queries are checked against.
type ledger struct {
	st       *store.Store
	events   []store.UsageEvent
	projects []uuid.UUID
	keys     []uuid.UUID
	start    time.Time
}

func newLedger(t *testing.T, n int) *ledger {
	t.Helper()
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	l := &ledger{st: st, start: time.Date(2026, 3, 1, 7, 13, 0, 0, time.UTC)}
	rng := rand.New(rand.NewPCG(1, 2))
	teams := []uuid.UUID{uuid.New(), uuid.New()}
	for range 4 {
		l.projects = append(l.projects, uuid.New())
	}
	for range 6 {
		l.keys = append(l.keys, uuid.New())
	}
	hosts := []uuid.UUID{uuid.New(), uuid.New()}
	bindings := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	hostKeys := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New()}
	span := int64(4 * 24 * time.Hour)
	for i := range n {
		p := rng.IntN(len(l.projects))
		e := store.UsageEvent{
			RequestID: fmt.Sprintf("req-%05d", i),
			CreatedAt: l.start.Add(time.Duration(rng.Int64N(span))).Truncate(time.Microsecond),
			ProjectID: &l.projects[p], TeamID: &teams[p%2],
			Model:  []string{"gpt", "claude", "gemini"}[rng.IntN(3)],
			Status: []int32{200, 200, 200, 429, 500, 499}[rng.IntN(6)], Attempts: 1,
			InputTokens: rng.Int64N(5000), OutputTokens: rng.Int64N(800), CachedReadTokens: rng.Int64N(100),
			CacheWriteTokens: rng.Int64N(50), ReasoningTokens: rng.Int64N(200), Cost: rng.Int64N(1e7),
			Saved: rng.Int64N(1e6),
		}
		if k := rng.IntN(len(l.keys) + 1); k < len(l.keys) {
			e.RelayKeyID = &l.keys[k]
		} else {
			e.InferenceTokenID = ptr(uuid.New())
		}
		if e.Status != 500 {
			h := rng.IntN(2)
			e.HostID, e.BindingID, e.HostKeyID = &hosts[h], &bindings[h+rng.IntN(2)], &hostKeys[2*h+rng.IntN(2)]
		}
		l.events = append(l.events, e)
	}
	for i := 0; i < n; i += 500 {
		if _, err := st.IngestUsageEvents(t.Context(), l.events[i:min(i+500, n)]); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func ptr[T any](v T) *T { return &v }

// truth sums the generated events like the queries should.
func (l *ledger) truth(from, to time.Time, iv usage.Interval, by []usage.Dimension, f usage.Filter) map[string]usage.Totals {
	out := map[string]usage.Totals{}
	has := func(d usage.Dimension) bool { return slices.Contains(by, d) }
	id := func(on bool, p *uuid.UUID) string {
		if !on || p == nil {
			return "-"
		}
		return p.String()
	}
	for _, e := range l.events {
		if e.CreatedAt.Before(from) || !e.CreatedAt.Before(to) ||
			f.Projects != nil && !slices.Contains(f.Projects, *e.ProjectID) ||
			f.ProjectID != nil && *f.ProjectID != *e.ProjectID ||
			f.Model != nil && *f.Model != e.Model {
			continue
		}
		var bucket time.Time
		switch iv {
		case usage.Minute:
			bucket = e.CreatedAt.Truncate(time.Minute)
		case usage.Hour:
			bucket = e.CreatedAt.Truncate(time.Hour)
		case usage.Day:
			bucket = e.CreatedAt.Truncate(24 * time.Hour)
		}
		model, status := "-", "-"
		if has(usage.ByModel) {
			model = e.Model
		}
		if has(usage.ByStatus) {
			status = fmt.Sprint(e.Status)
		}
		k := strings.Join([]string{bucket.UTC().Format(time.RFC3339), id(has(usage.ByProject), e.ProjectID), id(has(usage.ByTeam), e.TeamID),
			model, id(has(usage.ByKey), e.RelayKeyID), id(has(usage.ByHost), e.HostID), status,
			id(has(usage.ByBinding), e.BindingID), id(has(usage.ByHostKey), e.HostKeyID)}, "|")
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

func groupKey(bucket time.Time, g usage.Group) string {
	id := func(p *uuid.UUID) string {
		if p == nil {
			return "-"
		}
		return p.String()
	}
	model, status := "-", "-"
	if g.Model != nil {
		model = *g.Model
	}
	if g.Status != nil {
		status = fmt.Sprint(*g.Status)
	}
	return strings.Join([]string{bucket.UTC().Format(time.RFC3339), id(g.ProjectID), id(g.TeamID), model, id(g.RelayKeyID), id(g.HostID), status,
		id(g.BindingID), id(g.HostKeyID)}, "|")
}

func TestQueries_MatchTheLedger(t *testing.T) {
	t.Parallel()
	l := newLedger(t, 4000)
	ctx := t.Context()
	at := func(day, h, m, s int) time.Time { return time.Date(2026, 3, day, h, m, s, 0, time.UTC) }
	ranges := map[string][2]time.Time{
		"everything":            {at(1, 0, 0, 0), at(6, 0, 0, 0)},
		"ragged days":           {at(1, 10, 17, 23), at(4, 3, 41, 5)},
		"within one hour":       {at(2, 5, 1, 0), at(2, 5, 59, 59)},
		"across one hour":       {at(2, 5, 30, 0), at(2, 6, 30, 0)},
		"whole hours, one day":  {at(3, 2, 0, 0), at(3, 20, 0, 0)},
		"ragged, across a day":  {at(2, 22, 30, 0), at(3, 1, 15, 0)},
		"starts on a midnight":  {at(2, 0, 0, 0), at(3, 12, 30, 30)},
		"sub-second edges":      {at(2, 3, 4, 5).Add(123456 * time.Microsecond), at(4, 5, 6, 7).Add(654321 * time.Microsecond)},
		"before any event":      {at(1, 0, 0, 0), at(1, 7, 0, 0)},
		"in the non-UTC offset": {time.Date(2026, 3, 2, 9, 0, 0, 0, time.FixedZone("IST", 5*3600+1800)), at(3, 9, 0, 0)},
	}
	groupings := [][]usage.Dimension{
		nil,
		{usage.ByProject, usage.ByModel},
		{usage.ByKey, usage.ByStatus},
		{usage.ByHost, usage.ByTeam},
		{usage.ByProject, usage.ByTeam, usage.ByModel, usage.ByKey, usage.ByHost, usage.ByStatus},
		{usage.ByBinding, usage.ByHostKey},
		{usage.ByModel, usage.ByBinding},
	}
	filters := map[string]usage.Filter{
		"none":     {},
		"project":  {ProjectID: &l.projects[1]},
		"readable": {Projects: []uuid.UUID{l.projects[0], l.projects[2]}, Model: ptr("claude")},
	}
	for name, r := range ranges {
		for gi, by := range groupings {
			for fname, f := range filters {
				from, to := r[0], r[1]
				sum, err := usage.Summarize(ctx, l.st, usage.SummaryRequest{From: from, To: to, GroupBy: by, Filter: f})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]usage.Totals{}
				for _, row := range sum.Rows {
					got[groupKey(time.Time{}, row.Group)] = row.Totals
				}
				if want := l.truth(from, to, "", by, f); !equalTotals(got, want) {
					t.Errorf("summary %s, grouping %d, filter %s:\n got %v\nwant %v", name, gi, fname, got, want)
				}
				for i := 1; i < len(sum.Rows); i++ {
					if sum.Rows[i].Totals.Cost > sum.Rows[i-1].Totals.Cost {
						t.Errorf("summary rows not by descending cost")
					}
				}
				for _, iv := range []usage.Interval{usage.Hour, usage.Day, usage.Minute} {
					if iv == usage.Minute && to.Sub(from) > usage.MaxMinuteRange {
						continue
					}
					ts, err := usage.Series(ctx, l.st, usage.TimeseriesRequest{From: from, To: to, Interval: iv, GroupBy: by, Filter: f})
					if err != nil {
						t.Fatal(err)
					}
					got := map[string]usage.Totals{}
					for i, p := range ts.Points {
						got[groupKey(p.BucketStart, p.Group)] = p.Totals
						if i > 0 && p.BucketStart.Before(ts.Points[i-1].BucketStart) {
							t.Errorf("points not ascending")
						}
					}
					if want := l.truth(from, to, iv, by, f); !equalTotals(got, want) {
						t.Errorf("series %s by %s, grouping %d, filter %s:\n got %v\nwant %v", name, iv, gi, fname, got, want)
					}
				}
			}
		}
	}
}

func equalTotals(a, b map[string]usage.Totals) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestQueries_RejectWhatTheyCannotAnswer(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for name, tc := range map[string]struct {
		err   error
		field string
	}{
		"empty range":      {second(usage.Summarize(t.Context(), nil, usage.SummaryRequest{From: now, To: now})), "from"},
		"unknown group":    {second(usage.Summarize(t.Context(), nil, usage.SummaryRequest{From: now, To: now.Add(time.Hour), GroupBy: []usage.Dimension{"policy"}})), "group_by"},
		"long minutes":     {second(usage.Series(t.Context(), nil, usage.TimeseriesRequest{From: now, To: now.Add(72 * time.Hour), Interval: usage.Minute})), "interval"},
		"long hours":       {second(usage.Series(t.Context(), nil, usage.TimeseriesRequest{From: now, To: now.Add(usage.MaxHourRange + time.Hour)})), "interval"},
		"unknown interval": {second(usage.Series(t.Context(), nil, usage.TimeseriesRequest{From: now, To: now.Add(time.Hour), Interval: "week"})), "interval"},
		"bad cursor":       {second(usage.Events(t.Context(), nil, usage.EventsRequest{From: now, To: now.Add(time.Hour), Cursor: "!!"})), "cursor"},
	} {
		var ie *usage.InvalidError
		if !errorsIs(tc.err, usage.ErrInvalid) || !errors.As(tc.err, &ie) || ie.Field != tc.field {
			t.Errorf("%s: %v, want ErrInvalid on %s", name, tc.err, tc.field)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestEvents_PagesAndExportsCSV(t *testing.T) {
	t.Parallel()
	l := newLedger(t, 300)
	ctx := t.Context()
	from, to := l.start.Add(24*time.Hour), l.start.Add(72*time.Hour)
	f := usage.Filter{Projects: []uuid.UUID{l.projects[0], l.projects[3]}}
	var want []string
	for _, e := range l.events {
		if !e.CreatedAt.Before(from) && e.CreatedAt.Before(to) && (*e.ProjectID == l.projects[0] || *e.ProjectID == l.projects[3]) {
			want = append(want, e.RequestID)
		}
	}
	slices.SortFunc(want, func(a, b string) int {
		ea, eb := l.byID(a), l.byID(b)
		if c := ea.CreatedAt.Compare(eb.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})

	var got []string
	var csvOut bytes.Buffer
	cursor := ""
	for pages := 0; ; pages++ {
		page, err := usage.Events(ctx, l.st, usage.EventsRequest{From: from, To: to, Filter: f, Limit: 7, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > 7 || len(page.Items) == 0 {
			t.Fatalf("page of %d", len(page.Items))
		}
		for _, e := range page.Items {
			got = append(got, e.RequestID)
		}
		if err := usage.WriteCSV(&csvOut, page.Items, pages == 0); err != nil {
			t.Fatal(err)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if !slices.Equal(got, want) || len(want) < 20 {
		t.Fatalf("paged %d events, want %d in order", len(got), len(want))
	}

	records, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != len(want)+1 || strings.Join(records[0], ",")+"\n" != usage.CSVHeader {
		t.Fatalf("csv: %d records, header %v", len(records), records[0])
	}
	first, e := records[1], l.byID(want[0])
	if first[0] != e.RequestID || first[1] != e.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000Z07:00") ||
		first[5] != e.ProjectID.String() || first[10] != idOrEmpty(e.HostID) || first[23] != fmt.Sprint(e.Cost) {
		t.Errorf("csv row %v for %+v", first, e)
	}
}

func (l *ledger) byID(id string) store.UsageEvent {
	for _, e := range l.events {
		if e.RequestID == id {
			return e
		}
	}
	panic(id)
}

func idOrEmpty(p *uuid.UUID) string {
	if p == nil {
		return ""
	}
	return p.String()
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// TestTypes_ConvertToTheAPI holds Totals and Group to the generated API
// types, field for field, so that the control API converts them directly.
func TestTypes_ConvertToTheAPI(t *testing.T) {
	t.Parallel()
	m := "gpt"
	g := usage.Group{Model: &m}
	if api := models.UsageGroup(g); api.Model != &m {
		t.Error("Group did not convert")
	}
	if api := models.UsageTotals(usage.Totals{Cost: 7}); api.Cost != 7 {
		t.Error("Totals did not convert")
	}
	if api := models.UsageGroupBy(usage.ByKey); api != models.UsageGroupByKey {
		t.Error("the dimensions drifted from the API's")
	}
	if api := models.UsageInterval(usage.Minute); api != models.UsageIntervalMinute {
		t.Error("the intervals drifted from the API's")
	}
}
