package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestUsageEvents_CopyAndPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	project := uuid.New()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var events []UsageEvent
	for i := range 5 {
		e := UsageEvent{
			RequestID: fmt.Sprintf("req-%d", i), CreatedAt: at.Add(time.Duration(i/2) * time.Second),
			Model: "gpt-4o", InboundShape: "openai", UpstreamShape: "anthropic", Stream: i%2 == 0, Status: 200,
			Attempts: 1, InputTokens: 100, OutputTokens: 20, CachedReadTokens: 5, Cost: 12345, TTFBMs: 300, TotalMs: 900,
		}
		if i < 3 {
			e.ProjectID, e.RelayKeyID = &project, ptrTo(uuid.New())
		}
		if i == 4 {
			e.InferenceTokenID = ptrTo(uuid.New())
		}
		events = append(events, e)
	}
	if n := mk[int64](t)(s.InsertUsageEvents(ctx, events)); n != 5 {
		t.Fatalf("InsertUsageEvents = %d, want 5", n)
	}

	var seen []UsageEvent
	var sizes []int
	p := UsageEventsPage{Limit: 2}
	for range 5 {
		rows := mk[[]UsageEvent](t)(s.ListUsageEvents(ctx, p))
		sizes = append(sizes, len(rows))
		if len(rows) == 0 {
			break
		}
		seen = append(seen, rows...)
		last := rows[len(rows)-1]
		p = UsageEventsPage{AfterCreatedAt: last.CreatedAt, AfterRequestID: last.RequestID, Limit: 2}
	}
	if !slices.Equal(sizes, []int{2, 2, 1, 0}) || len(seen) != 5 {
		t.Fatalf("pages of %v", sizes)
	}
	for i, e := range seen {
		if !sameRow(e, events[i]) {
			t.Errorf("event %d = %+v, want %+v", i, e, events[i])
		}
	}
	count := func(p UsageEventsPage) int {
		t.Helper()
		p.Limit = 10
		return len(mk[[]UsageEvent](t)(s.ListUsageEvents(ctx, p)))
	}
	for name, tc := range map[string]struct {
		p    UsageEventsPage
		want int
	}{
		"project":         {UsageEventsPage{Filter: UsageFilter{ProjectID: &project}}, 3},
		"readable":        {UsageEventsPage{Filter: UsageFilter{Projects: []uuid.UUID{uuid.New(), project}}}, 3},
		"nothing":         {UsageEventsPage{Filter: UsageFilter{Projects: []uuid.UUID{}}}, 0},
		"key":             {UsageEventsPage{Filter: UsageFilter{RelayKeyID: events[0].RelayKeyID}}, 1},
		"model":           {UsageEventsPage{Filter: UsageFilter{Model: ptrTo("gpt-4o")}}, 5},
		"other model":     {UsageEventsPage{Filter: UsageFilter{Model: ptrTo("gpt-5")}}, 0},
		"from":            {UsageEventsPage{From: at.Add(time.Second)}, 3},
		"to is exclusive": {UsageEventsPage{To: at.Add(time.Second)}, 2},
	} {
		if got := count(tc.p); got != tc.want {
			t.Errorf("%s: %d events, want %d", name, got, tc.want)
		}
	}
	if countAudit(t, b) != 0 {
		t.Error("the ledger was audited")
	}
}

// usageBatch makes n events spread over three hours on both sides of a UTC
// midnight, over two projects, keys, hosts, models and statuses.
func usageBatch(prefix string, n int, start time.Time) []UsageEvent {
	projects := []uuid.UUID{uuid.New(), uuid.New()}
	team := uuid.New()
	keys := []*uuid.UUID{ptrTo(uuid.New()), ptrTo(uuid.New()), nil}
	hosts := []*uuid.UUID{ptrTo(uuid.New()), nil}
	bindings := []*uuid.UUID{ptrTo(uuid.New()), ptrTo(uuid.New()), nil}
	hostKeys := []*uuid.UUID{ptrTo(uuid.New()), ptrTo(uuid.New()), ptrTo(uuid.New()), nil}
	statuses := []int32{200, 200, 429, 502}
	events := make([]UsageEvent, n)
	for i := range events {
		events[i] = UsageEvent{
			RequestID: fmt.Sprintf("%s-%d", prefix, i),
			CreatedAt: start.Add(time.Duration(i) * 3 * time.Hour / time.Duration(n)),
			ProjectID: &projects[i%2], TeamID: &team, RelayKeyID: keys[i%3], HostID: hosts[i%2],
			BindingID: bindings[i%3], HostKeyID: hostKeys[i%4], Saved: int64(i % 5 * 250),
			Route: ptrTo(fmt.Sprintf("binding=b%d; strategy=priority", i%3)), RouteDetail: []byte(`{"candidates":2}`),
			Model: []string{"gpt", "claude"}[i/2%2], Status: statuses[i%4], Attempts: 1,
			InboundShape: []string{"chat", "batch", "mcp", "message_batch", "responses"}[i%5],
			InputTokens:  int64(100 + i), OutputTokens: int64(10 + i%7), CachedReadTokens: int64(i % 5),
			CacheWriteTokens: int64(i % 3), ReasoningTokens: int64(i % 4), Cost: int64(1000*i + 7),
		}
	}
	return events
}

func TestUsageEvents_IngestIsIdempotentAndRollsUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	start := time.Date(2026, 3, 1, 22, 40, 0, 0, time.UTC)
	events := usageBatch("a", 300, start)

	if n := mk[int64](t)(s.IngestUsageEvents(ctx, events[:200])); n != 200 {
		t.Fatalf("first batch inserted %d, want 200", n)
	}
	// A retried batch overlapping the first: only the new events count.
	if n := mk[int64](t)(s.IngestUsageEvents(ctx, events[100:])); n != 100 {
		t.Fatalf("retried batch inserted %d, want 100", n)
	}
	if n := mk[int64](t)(s.IngestUsageEvents(ctx, events)); n != 0 {
		t.Fatalf("a batch stored whole inserted %d more", n)
	}
	if n := mk[int64](t)(s.IngestUsageEvents(ctx, nil)); n != 0 {
		t.Fatalf("an empty batch inserted %d", n)
	}

	all := UsageDims{Project: true, Team: true, Key: true, Host: true, Model: true, Status: true, Binding: true, HostKey: true}
	coarse := UsageDims{Project: true, Team: true, Model: true} // reads the coarse rollups
	cache := UsageDims{Binding: true, HostKey: true}            // the detailed rollups, by binding and host key
	from, to := start.Truncate(24*time.Hour), start.Truncate(24*time.Hour).Add(48*time.Hour)
	for _, c := range []struct {
		unit string
		by   UsageDims
	}{{"", all}, {"hour", all}, {"day", all}, {"", coarse}, {"hour", coarse}, {"day", coarse}, {"", cache}, {"day", cache}} {
		unit := c.unit
		q := UsageSumQuery{From: from, To: to, Unit: unit, By: c.by}
		ledger := mk[[]UsageSum](t)(s.SumUsageEvents(ctx, q))
		hourly := mk[[]UsageSum](t)(s.SumUsageRollups(ctx, GrainHour, q))
		if len(ledger) < 4 || !sameSums(ledger, hourly) {
			t.Errorf("unit %q: hourly rollups %v\ndisagree with the ledger %v", unit, hourly, ledger)
		}
		if unit != "hour" {
			daily := mk[[]UsageSum](t)(s.SumUsageRollups(ctx, GrainDay, q))
			if !sameSums(ledger, daily) {
				t.Errorf("unit %q: daily rollups %v\ndisagree with the ledger %v", unit, daily, ledger)
			}
		}
	}

	// The kinds are summed apart, by inbound shape, on the copy path (the
	// first batch) and the deduplicating one (the retry) alike.
	var want UsageSum
	for _, e := range events {
		switch e.InboundShape {
		case "batch", "message_batch":
			want.BatchRequests++
			want.BatchCost += e.Cost
		case "mcp":
			want.ToolCalls++
			want.ToolCost += e.Cost
		}
	}
	for _, grain := range []string{GrainHour, GrainDay} {
		for _, by := range []UsageDims{{}, all} {
			var got UsageSum
			for _, u := range mk[[]UsageSum](t)(s.SumUsageRollups(ctx, grain, UsageSumQuery{From: from, To: to, By: by})) {
				got.BatchRequests += u.BatchRequests
				got.BatchCost += u.BatchCost
				got.ToolCalls += u.ToolCalls
				got.ToolCost += u.ToolCost
			}
			if got != want || want.BatchRequests != 120 || want.ToolCalls != 60 {
				t.Errorf("%s rollups by %+v: kinds %+v, want %+v (120 batches, 60 tool calls)", grain, by, got, want)
			}
		}
	}

	// Buckets are UTC hours and days even though the session is not UTC.
	days := mk[[]UsageSum](t)(s.SumUsageRollups(ctx, GrainDay, UsageSumQuery{From: from, To: to, Unit: "day"}))
	if len(days) != 2 || !days[0].Bucket.Equal(from) && !days[1].Bucket.Equal(from) {
		t.Errorf("daily buckets %v", days)
	}
	var total int64
	for _, d := range days {
		total += d.Requests
	}
	if total != 300 {
		t.Errorf("%d requests in the rollups, want 300", total)
	}

	// Filters apply to the rollups as to the ledger.
	p := events[0].ProjectID
	q := UsageSumQuery{From: from, To: to, By: UsageDims{Project: true}, Filter: UsageFilter{Projects: []uuid.UUID{*p}, Model: ptrTo("gpt")}}
	l, r := mk[[]UsageSum](t)(s.SumUsageEvents(ctx, q)), mk[[]UsageSum](t)(s.SumUsageRollups(ctx, GrainHour, q))
	if len(l) != 1 || l[0].ProjectID != *p || !sameSums(l, r) {
		t.Errorf("filtered: ledger %v, rollups %v", l, r)
	}
	// An absent host is the nil UUID in both.
	q = UsageSumQuery{From: from, To: to, By: UsageDims{Host: true}}
	l = mk[[]UsageSum](t)(s.SumUsageEvents(ctx, q))
	if len(l) != 2 || !slices.ContainsFunc(l, func(u UsageSum) bool { return u.HostID == uuid.Nil }) {
		t.Errorf("by host: %v", l)
	}
}

// sameSums compares two sets of groups regardless of order.
func sameSums(a, b []UsageSum) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(u UsageSum) string {
		return fmt.Sprint(u.Bucket.UTC(), u.ProjectID, u.TeamID, u.RelayKeyID, u.HostID, u.Model, u.Status, u.BindingID, u.HostKeyID)
	}
	m := make(map[string]UsageSum, len(a))
	for _, u := range a {
		m[key(u)] = u
	}
	for _, u := range b {
		v, ok := m[key(u)]
		if !ok || !v.Bucket.Equal(u.Bucket) {
			return false
		}
		v.Bucket = u.Bucket
		if v != u {
			return false
		}
	}
	return true
}

func TestUsagePartitions_EnsureAndDrop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	// Days far from the ones the migration made.
	day := time.Date(2031, 5, 10, 0, 0, 0, 0, time.UTC)
	events := usageBatch("p", 40, day.Add(-90*time.Minute)) // 2031-05-09 22:30 … 2031-05-10 01:30
	if n := mk[int64](t)(s.IngestUsageEvents(ctx, events)); n != 40 {
		t.Fatalf("ingested %d", n)
	}
	inDefault := func() int {
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM usage_events_default WHERE created_at >= '2031-01-01Z'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if inDefault() != 40 {
		t.Fatal("the events did not land in the default partition")
	}

	if n := mk[int](t)(s.EnsureUsagePartitions(ctx, day.Add(-24*time.Hour), day.Add(24*time.Hour))); n != 3 {
		t.Fatalf("made %d partitions, want 3", n)
	}
	if n := mk[int](t)(s.EnsureUsagePartitions(ctx, day, day)); n != 0 {
		t.Fatalf("made %d partitions again", n)
	}
	names := mk[[]string](t)(s.ListUsagePartitions(ctx))
	for _, want := range []string{"usage_events_p20310509", "usage_events_p20310510", "usage_events_p20310511"} {
		if !slices.Contains(names, want) {
			t.Errorf("partitions %v lack %s", names, want)
		}
	}
	if n := inDefault(); n != 0 {
		t.Errorf("%d events stayed in the default partition", n)
	}
	var inDay int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM usage_events_p20310510`).Scan(&inDay); err != nil || inDay == 0 || inDay == 40 {
		t.Errorf("%d events in the partition of 2031-05-10 (%v)", inDay, err)
	}
	// The events are all still there, once each.
	if n := mk[int64](t)(s.IngestUsageEvents(ctx, events)); n != 0 {
		t.Errorf("re-ingest after the move inserted %d", n)
	}

	// Retention at 2031-05-10 12:00 keeps the day it falls in.
	if n := mk[int](t)(s.DropUsagePartitions(ctx, day.Add(12*time.Hour))); n < 1 {
		t.Fatalf("dropped %d partitions", n)
	}
	names = mk[[]string](t)(s.ListUsagePartitions(ctx))
	if slices.Contains(names, "usage_events_p20310509") || !slices.Contains(names, "usage_events_p20310510") {
		t.Errorf("after retention: %v", names)
	}
	left := mk[[]UsageEvent](t)(s.ListUsageEvents(ctx, UsageEventsPage{From: day.Add(-48 * time.Hour), Limit: 100}))
	if len(left) != inDay {
		t.Errorf("%d events left, want the %d of 2031-05-10", len(left), inDay)
	}
	q := UsageSumQuery{From: day.Add(-48 * time.Hour), To: day.Add(48 * time.Hour)}
	if sums := mk[[]UsageSum](t)(s.SumUsageRollups(ctx, GrainHour, q)); len(sums) != 1 || sums[0].Requests != int64(inDay) {
		t.Errorf("hourly rollups after retention: %v", sums)
	}
	if sums := mk[[]UsageSum](t)(s.SumUsageRollups(ctx, GrainDay, q)); len(sums) != 1 || sums[0].Requests != int64(inDay) {
		t.Errorf("daily rollups after retention: %v", sums)
	}
}

func TestUsageEvents_ColumnListsAgree(t *testing.T) {
	t.Parallel()
	if got := strings.Join(usageColumns, ", "); got != usageColumnList {
		t.Errorf("usageColumns %q\n!= usageColumnList %q", got, usageColumnList)
	}
}

// TestUsageEvents_GetByRequestID finds an event by its request id alone, on
// any day's partition, within the projects and teams a caller may read; the
// index on request_id is on every partition, the ones made later included.
func TestUsageEvents_GetByRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	day := time.Date(2032, 2, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.EnsureUsagePartitions(ctx, day, day.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	p1, p2, t1, t2 := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	id := func(n int) string { return fmt.Sprintf("req_%032x", n) }
	var events []UsageEvent
	for i := range 30 {
		e := UsageEvent{RequestID: id(i), CreatedAt: day.Add(time.Duration(i) * 2 * time.Hour), Model: "m", Status: 200, InputTokens: int64(i)}
		switch i % 3 {
		case 0:
			e.ProjectID, e.TeamID = &p1, &t1
		case 1:
			e.ProjectID = &p2
		case 2:
			e.TeamID = &t2 // recorded under the team, no project
		}
		events = append(events, e)
	}
	// An id twice (ids callers sent, from before Relay minted its own): in
	// p1 on the first day, in p2 on the third.
	events = append(events,
		UsageEvent{RequestID: "dup", CreatedAt: day.Add(time.Hour), ProjectID: &p1, Model: "m", Status: 200, InputTokens: 1},
		UsageEvent{RequestID: "dup", CreatedAt: day.Add(50 * time.Hour), ProjectID: &p2, Model: "m", Status: 500, InputTokens: 2})
	if n := mk[int64](t)(s.IngestUsageEvents(ctx, events)); n != int64(len(events)) {
		t.Fatalf("ingested %d", n)
	}

	get := func(rid string, f UsageFilter) (UsageEvent, bool) {
		t.Helper()
		e, err := s.GetUsageEvent(ctx, rid, f)
		if errors.Is(err, ErrNotFound) {
			return e, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return e, true
	}
	for i := range 30 {
		if e, ok := get(id(i), UsageFilter{}); !ok || !sameRow(e, events[i]) {
			t.Errorf("%s: %+v, %v; want %+v", id(i), e, ok, events[i])
		}
	}
	none := []uuid.UUID{}
	for _, c := range []struct {
		name string
		i    int
		f    UsageFilter
		want bool
	}{
		{"its project", 0, UsageFilter{Projects: []uuid.UUID{p1}}, true},
		{"another project", 1, UsageFilter{Projects: []uuid.UUID{p1}}, false},
		{"its team's", 0, UsageFilter{Projects: none, Teams: []uuid.UUID{t1}}, true},
		{"recorded under its team", 2, UsageFilter{Projects: none, Teams: []uuid.UUID{t2}}, true},
		{"another team's", 2, UsageFilter{Projects: none, Teams: []uuid.UUID{t1}}, false},
		{"no reach", 0, UsageFilter{Projects: none}, false},
		{"other filters ignored", 0, UsageFilter{ProjectID: &p2}, true},
	} {
		if _, ok := get(id(c.i), c.f); ok != c.want {
			t.Errorf("%s: found %v, want %v", c.name, ok, c.want)
		}
	}
	if _, ok := get(id(99), UsageFilter{}); ok {
		t.Error("an id never recorded was found")
	}
	if e, ok := get("dup", UsageFilter{}); !ok || e.InputTokens != 2 {
		t.Errorf("a repeated id: %+v, %v; want the latest", e, ok)
	}
	if e, ok := get("dup", UsageFilter{Projects: []uuid.UUID{p1}}); !ok || e.InputTokens != 1 {
		t.Errorf("a repeated id within p1: %+v, %v; want p1's", e, ok)
	}

	// Every partition, the default and those made after the migration, has
	// the index.
	var parts, without int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (
	    SELECT 1 FROM pg_index x JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
	    WHERE x.indrelid = i.inhrelid AND x.indnatts = 1 AND a.attname = 'request_id'))
	  FROM pg_inherits i WHERE i.inhparent = 'usage_events'::regclass`).Scan(&parts, &without); err != nil {
		t.Fatal(err)
	}
	if parts < 4 || without != 0 {
		t.Errorf("%d of %d partitions have no index on request_id", without, parts)
	}
}

// TestUsageEvents_DetailIsPackedAndReadBack: the writer's decisions land
// deflated in route_detail_z (the jsonb column stays NULL) and read back as
// they were written, by id and by page; a decision written before 00020
// (in the jsonb column) still reads.
func TestUsageEvents_DetailIsPackedAndReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	events := usageBatch("d", 3, start)
	events[0].RouteDetail = []byte(sampleDetail)
	events[1].RouteDetail = nil
	if n := mk[int64](t)(s.IngestUsageEvents(ctx, events[:2])); n != 2 {
		t.Fatalf("inserted %d, want 2", n)
	}
	old := events[2:]
	old[0].RouteDetail = []byte(`{"model": "m"}`)
	if n := mk[int64](t)(s.InsertUsageEvents(ctx, old)); n != 1 {
		t.Fatalf("inserted %d old, want 1", n)
	}
	var jsonb, packed int
	if err := s.pool.QueryRow(ctx, `SELECT count(route_detail), count(route_detail_z) FROM usage_events`).Scan(&jsonb, &packed); err != nil {
		t.Fatal(err)
	}
	if jsonb != 1 || packed != 1 {
		t.Errorf("%d jsonb and %d packed decisions, want 1 and 1", jsonb, packed)
	}
	got := mk[UsageEvent](t)(s.GetUsageEvent(ctx, "d-0", UsageFilter{}))
	if string(got.RouteDetail) != sampleDetail || got.RouteDetailZ != nil {
		t.Errorf("read back %q (packed %x)", got.RouteDetail, got.RouteDetailZ)
	}
	page := mk[[]UsageEvent](t)(s.ListUsageEvents(ctx, UsageEventsPage{From: start, Limit: 10}))
	if len(page) != 3 || string(page[0].RouteDetail) != sampleDetail || page[1].RouteDetail != nil ||
		string(page[2].RouteDetail) != `{"model": "m"}` {
		t.Errorf("page: %d events, decisions %q %q %q", len(page), page[0].RouteDetail, page[1].RouteDetail, page[2].RouteDetail)
	}
}
