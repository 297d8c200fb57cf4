package controlapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/loader"
)

// The loader is what relay serve passes as Config.Snapshot; Load makes
// POST /api/snapshot/reload synchronous.
var (
	_ controlapi.Snapshot                      = (*loader.Loader)(nil)
	_ interface{ Load(context.Context) error } = (*loader.Loader)(nil)
)

func TestOps_StatusReloadBreakers(t *testing.T) {
	t.Parallel()
	var keyID uuid.UUID
	opened := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	b := setup(t, func(cfg *controlapi.Config) {
		cfg.Breakers = func() []controlapi.BreakerState {
			return []controlapi.BreakerState{
				{HostKeyID: keyID, SecretVersion: 1, State: "open", ConsecutiveFailures: 3, OpenedAt: opened},
				{HostKeyID: keyID, SecretVersion: 2, State: "cooling", ConsecutiveFailures: 1},
				{HostKeyID: uuid.New(), SecretVersion: 1, State: "half_open"}, // a key that is gone
			}
		}
	})
	ctx, c := b.ctx, b.admin
	h := b.host("h")
	keyID = b.hostKey(h.ID, "k").ID
	b.snap.listenOK.Store(true)

	st := call(c.GetStatusWithResponse(ctx)).want(t, http.StatusOK).JSON200
	if st.Pod.PodID != "pod-test" || st.Pod.SnapshotVersion != 1 || st.Pod.SnapshotAgeSeconds != 3 || !st.Pod.ListenerConnected ||
		st.Pod.Version != "test" || len(st.Pods) != 1 || st.Pods[0].PodID != "pod-test" {
		t.Errorf("status = %+v", st)
	}
	rl := call(c.ReloadSnapshotWithResponse(ctx)).want(t, http.StatusOK).JSON200
	if b.snap.reloads.Load() != 1 || rl.SnapshotVersion != 2 || !rl.Notified || rl.PodID != "pod-test" {
		t.Errorf("reload = %+v after %d reloads", rl, b.snap.reloads.Load())
	}

	br := call(c.ListBreakersWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200
	if len(br.Items) != 2 || br.Items[0].HostID != h.ID || br.Items[0].State != models.BreakerStateOpen ||
		br.Items[0].OpenedAt == nil || !br.Items[0].OpenedAt.Equal(opened) || br.Items[1].State != models.BreakerStateOpen {
		t.Errorf("breakers = %+v", br.Items)
	}
	closed := models.BreakerStateClosed
	if r := call(c.ListBreakersWithResponse(ctx, &models.ListBreakersParams{State: &closed})).want(t, http.StatusOK).JSON200; len(r.Items) != 0 {
		t.Errorf("closed breakers = %+v", r.Items)
	}
	other := uuid.New()
	if r := call(c.ListBreakersWithResponse(ctx, &models.ListBreakersParams{HostID: &other})).want(t, http.StatusOK).JSON200; len(r.Items) != 0 {
		t.Errorf("breakers of another host = %+v", r.Items)
	}
}

func TestOps_WithoutSnapshotOrBreakers(t *testing.T) {
	t.Parallel()
	b := setup(t, func(cfg *controlapi.Config) { cfg.Snapshot = nil })
	ctx, c := b.ctx, b.admin
	if st := call(c.GetStatusWithResponse(ctx)).want(t, http.StatusOK).JSON200; st.Pod.SnapshotVersion != 0 || st.Pod.ListenerConnected {
		t.Errorf("status = %+v", st.Pod)
	}
	call(c.ReloadSnapshotWithResponse(ctx)).wantErr(t, http.StatusNotImplemented, "not_implemented", "")
	if r := call(c.ListBreakersWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200; r.Items == nil || len(r.Items) != 0 {
		t.Errorf("breakers = %+v", r)
	}
}

func TestUsage_EmptyInTheDocumentedShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	to := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	groupBy := []models.UsageGroupBy{models.UsageGroupByProject, models.UsageGroupByModel}
	sum := call(c.GetUsageSummaryWithResponse(ctx, &models.GetUsageSummaryParams{To: &to, GroupBy: &groupBy})).want(t, http.StatusOK).JSON200
	if !sum.To.Equal(to) || !sum.From.Equal(to.Add(-24*time.Hour)) || len(sum.GroupBy) != 2 || sum.Rows == nil || len(sum.Rows) != 0 {
		t.Errorf("summary = %+v", sum)
	}
	ts := call(c.GetUsageTimeseriesWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200
	if ts.Interval != models.UsageIntervalHour || ts.Points == nil || len(ts.Points) != 0 || !ts.From.Before(ts.To) {
		t.Errorf("timeseries = %+v", ts)
	}
	ev := call(c.ListUsageEventsWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200
	if ev.Items == nil || len(ev.Items) != 0 || ev.NextCursor != nil {
		t.Errorf("events = %+v", ev)
	}
	call(c.GetUsageSummaryWithResponse(ctx, &models.GetUsageSummaryParams{From: &to, To: &to})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "from")
	call(c.GetUsageTimeseriesWithResponse(ctx, &models.GetUsageTimeseriesParams{Interval: ptr(models.UsageInterval("week"))})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "interval")

	// CSV, by parameter or by Accept.
	csv := models.UsageEventsFormatCsv
	for name, get := range map[string]func() (*http.Response, error){
		"format": func() (*http.Response, error) {
			return c.ListUsageEvents(ctx, &models.ListUsageEventsParams{Format: &csv})
		},
		"accept": func() (*http.Response, error) {
			return c.ListUsageEvents(ctx, nil, func(_ context.Context, r *http.Request) error { r.Header.Set("Accept", "text/csv"); return nil })
		},
	} {
		resp, err := get()
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/csv" || !strings.HasPrefix(string(body), "request_id,created_at,") ||
			strings.Count(string(body), "\n") != 1 || resp.Header.Get("X-Next-Cursor") != "" {
			t.Errorf("%s: csv = %d %q %q", name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	// Without a role, usage is forbidden; with any role it is allowed.
	s := b.newUser("nobody")
	call(s.GetUsageSummaryWithResponse(ctx, nil)).wantErr(t, http.StatusForbidden, "forbidden", "")
}

func TestRouting_UnknownEndpointsAndMethods(t *testing.T) {
	t.Parallel()
	b := setup(t)
	call(b.admin.ListHostsWithResponse(b.ctx, nil, rewrite("/api/nothing-here", ""))).wantErr(t, http.StatusNotFound, "not_found", "")
	// A PUT is no method of /api/hosts/{id}.
	r := call(b.admin.GetHostWithResponse(b.ctx, uuid.New(), func(_ context.Context, r *http.Request) error { r.Method = http.MethodPut; return nil }))
	r.wantErr(t, http.StatusMethodNotAllowed, "invalid_request", "")
}
