package store

import (
	"fmt"
	"slices"
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
	if rows := mk[[]UsageEvent](t)(s.ListUsageEvents(ctx, UsageEventsPage{ProjectID: &project, Limit: 10})); len(rows) != 3 {
		t.Errorf("events of the project = %d, want 3", len(rows))
	}
	if countAudit(t, b) != 0 {
		t.Error("the ledger was audited")
	}
}
