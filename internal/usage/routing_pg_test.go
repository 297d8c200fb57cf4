package usage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/poll"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/internal/wire"
)

// TestWriter_StoresRouteAndSaved records requests with known prices and
// token counts through the writer into Postgres, and checks the ledger keeps
// the routing decision and the money the cache saved, and that the summary
// reports the cache hit ratio and saved per binding and per host key.
func TestWriter_StoresRouteAndSaved(t *testing.T) {
	t.Parallel()
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// $3/M input, $0.30/M cached input, $15/M output (Anthropic-like).
	price := snapshot.Pricing{Input: 3_000_000, CachedInput: 300_000, Output: 15_000_000, Reasoning: 15_000_000}
	bindA, bindB, keyA, keyB := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	snap := snapshot.Build(&snapshot.Data{Bindings: []*snapshot.Binding{
		{ID: bindA, Enabled: true, Pricing: price}, {ID: bindB, Enabled: true, Pricing: price},
	}}, 1, time.Now())
	w := usage.NewWriter(usage.WriterConfig{Sink: st, Snapshot: func() *snapshot.Snapshot { return snap },
		QueueSize: 64, BatchSize: 10, FlushInterval: 5 * time.Millisecond, WriteTimeout: 5 * time.Second})

	at := time.Now().UTC().Add(-time.Minute)
	project := uuid.New()
	record := func(id string, binding, key uuid.UUID, in, cached int64, route string, detail []byte) {
		w.Record(event.Record{
			RequestID: id, At: at, CredentialKind: snapshot.CredentialRelayKey, CredentialID: uuid.New(), ProjectID: project,
			Model: "claude", BindingID: binding, HostKeyID: key, Status: 200, Attempts: 1,
			Usage: wire.Usage{Input: in, CacheRead: cached, Output: 100}, Route: route, RouteDetail: detail,
		})
	}
	detail := []byte(`{"strategy":"priority","affinity":"hit","candidates":[{"binding":"a","key":0}]}`)
	record("r1", bindA, keyA, 10_000, 9_000, "binding=a; key=0; affinity=hit", detail)
	record("r2", bindA, keyB, 10_000, 0, "binding=a; key=1; affinity=miss", nil)
	record("r3", bindB, keyA, 2_000, 1_000, "binding=b; key=0; affinity=hit", []byte(`{"broken`))
	poll.Until(t, 30*time.Second, "3 events written", func() bool { return w.Stats().Written == 3 })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Saved is cache reads × (input − cached input) price: 9000 × 2.7e6 pico
	// = 24_300_000 nano; 1000 × 2.7e6 = 2_700_000 nano.
	page, err := usage.Events(t.Context(), st, usage.EventsRequest{From: at.Add(-time.Hour), To: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]usage.EventRow{}
	for _, e := range page.Items {
		byID[e.RequestID] = e
	}
	if e := byID["r1"]; e.Saved != 24_300_000 || e.Route == nil || *e.Route != "binding=a; key=0; affinity=hit" || !jsonEqual(e.RouteDetail, detail) {
		t.Errorf("r1 = saved %d, route %v, detail %s", e.Saved, e.Route, e.RouteDetail)
	}
	if e := byID["r2"]; e.Saved != 0 || e.RouteDetail != nil {
		t.Errorf("r2 = saved %d, detail %s", e.Saved, e.RouteDetail)
	}
	if e := byID["r3"]; e.Saved != 2_700_000 || e.RouteDetail != nil || *e.Route != "binding=b; key=0; affinity=hit" {
		t.Errorf("r3 (invalid detail dropped, the event kept) = saved %d, detail %s", e.Saved, e.RouteDetail)
	}
	// Cost: r1 = 1000×3e6 + 9000×3e5 + 100×15e6 = 7.2e9 pico = 7_200_000 nano.
	if e := byID["r1"]; e.Cost != 7_200_000 {
		t.Errorf("r1 cost %d", e.Cost)
	}

	from, to := at.Truncate(time.Hour).Add(-time.Hour), at.Truncate(time.Hour).Add(2*time.Hour)
	sum, err := usage.Summarize(t.Context(), st, usage.SummaryRequest{From: from, To: to, GroupBy: []usage.Dimension{usage.ByBinding}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uuid.UUID]struct {
		saved int64
		ratio float64
	}{bindA: {24_300_000, 0.45}, bindB: {2_700_000, 0.5}}
	if len(sum.Rows) != 2 {
		t.Fatalf("by binding: %+v", sum.Rows)
	}
	for _, r := range sum.Rows {
		w := want[*r.Group.BindingID]
		if r.Totals.Saved != w.saved || r.Totals.CacheHitRatio != w.ratio || r.Group.HostKeyID != nil {
			t.Errorf("binding %s: %+v, want saved %d ratio %v", *r.Group.BindingID, r.Totals, w.saved, w.ratio)
		}
	}
	sum, err = usage.Summarize(t.Context(), st, usage.SummaryRequest{From: from, To: to, GroupBy: []usage.Dimension{usage.ByHostKey}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sum.Rows {
		switch *r.Group.HostKeyID {
		case keyA: // 10k cached of 12k
			if r.Totals.Saved != 27_000_000 || r.Totals.CacheHitRatio != 10_000.0/12_000 {
				t.Errorf("key A: %+v", r.Totals)
			}
		case keyB:
			if r.Totals.Saved != 0 || r.Totals.CacheHitRatio != 0 {
				t.Errorf("key B: %+v", r.Totals)
			}
		}
	}
	// The CSV export carries saved and the route.
	var csv bytes.Buffer
	if err := usage.WriteCSV(&csv, page.Items[:1], true); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[0], ",saved,route") ||
		!strings.HasSuffix(lines[1], ",24300000,binding=a; key=0; affinity=hit") {
		t.Errorf("csv:\n%s", csv.String())
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(ax, by)
}
