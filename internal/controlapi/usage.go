package controlapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/usage"
)

// Usage: GET /api/usage/summary, /timeseries and /events, answered by
// internal/usage from the rollups and the ledger.
//
// Access: any role binding may ask (none: 403), and the answer counts only
// the usage of projects the caller can read — everything for system-wide
// readers, a team's projects (and what was recorded under the team) for team
// bindings, the bound projects for project bindings. The restriction is a
// filter in SQL, so a team_id or project_id filter naming what the caller
// cannot read matches nothing, as a list filter does elsewhere.

// usageRange applies the defaults of from and to: [to − 24 h, now).
func (s *Server) usageRange(from, to *time.Time) (time.Time, time.Time, error) {
	t := s.now()
	if to != nil {
		t = *to
	}
	f := t.Add(-24 * time.Hour)
	if from != nil {
		f = *from
	}
	if !f.Before(t) {
		return f, t, invalid("from: must be before to", "from", "to")
	}
	return f, t, nil
}

// usageParams are the filters every usage endpoint takes.
type usageParams struct {
	from, to                      *time.Time
	team, project, relayKey, host *uuid.UUID
	model                         *string
	status                        *int32
	groupBy                       *[]models.UsageGroupBy
	dimensions                    []usage.Dimension
}

// usageQuery checks access and turns the parameters into the range and the
// filter of a usage query, restricted to what the caller can read.
func (s *Server) usageQuery(ctx context.Context, p *usageParams) (time.Time, time.Time, usage.Filter, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return time.Time{}, time.Time{}, usage.Filter{}, err
	}
	if !c.CanAnywhere(rbac.Read) {
		return time.Time{}, time.Time{}, usage.Filter{}, forbidden("usage needs a role binding")
	}
	from, to, err := s.usageRange(p.from, p.to)
	if err != nil {
		return from, to, usage.Filter{}, err
	}
	f := usage.Filter{ProjectID: p.project, TeamID: p.team, RelayKeyID: p.relayKey, HostID: p.host, Model: p.model, Status: p.status}
	if r := c.Reach(rbac.Read); !r.All {
		f.Projects = r.Projects
		if f.Projects == nil {
			f.Projects = []uuid.UUID{}
		}
		f.Teams = r.Teams
	}
	if p.groupBy != nil {
		for _, d := range *p.groupBy {
			p.dimensions = append(p.dimensions, usage.Dimension(d))
		}
	}
	return from, to, f, nil
}

// usageError maps the usage package's refusals to the API's errors: a bad
// cursor is a 400 like every other list's; the rest (a range too long for
// its buckets …) is a 422 naming the parameter.
func usageError(err error) error {
	var ie *usage.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	if ie.Field == "cursor" {
		return badRequest("cursor: "+ie.Message, detail("cursor", ie.Message))
	}
	return invalid(ie.Field+": "+ie.Message, ie.Field)
}

// GetUsageSummary is the operation of the same name in openapi/control.yaml.
func (v *Service) GetUsageSummary(ctx context.Context, params models.GetUsageSummaryParams) (out models.UsageSummary, err error) {
	s, ctx, done, err := v.enter(ctx, "GetUsageSummary")
	if err != nil {
		return out, err
	}
	defer done(&err)
	q := params
	p := usageParams{from: q.From, to: q.To, team: q.TeamID, project: q.ProjectID, relayKey: q.RelayKeyID,
		host: q.HostID, model: q.Model, status: q.Status, groupBy: q.GroupBy}
	from, to, f, err := s.usageQuery(ctx, &p)
	if err != nil {
		return out, err
	}
	sum, err := usage.Summarize(ctx, s.st, usage.SummaryRequest{From: from, To: to, GroupBy: p.dimensions, Filter: f})
	if err != nil {
		return out, usageError(err)
	}
	rows := make([]models.UsageRow, len(sum.Rows))
	for i, r := range sum.Rows {
		rows[i] = models.UsageRow{Group: models.UsageGroup(r.Group), Totals: models.UsageTotals(r.Totals)}
	}
	return models.UsageSummary{From: from, To: to, GroupBy: groupBy(q.GroupBy), Rows: rows}, nil
}

// GetUsageTimeseries is the operation of the same name in openapi/control.yaml.
func (v *Service) GetUsageTimeseries(ctx context.Context, params models.GetUsageTimeseriesParams) (out models.UsageTimeseries, err error) {
	s, ctx, done, err := v.enter(ctx, "GetUsageTimeseries")
	if err != nil {
		return out, err
	}
	defer done(&err)
	q := params
	p := usageParams{from: q.From, to: q.To, team: q.TeamID, project: q.ProjectID, relayKey: q.RelayKeyID,
		host: q.HostID, model: q.Model, status: q.Status, groupBy: q.GroupBy}
	from, to, f, err := s.usageQuery(ctx, &p)
	if err != nil {
		return out, err
	}
	iv := deref(q.Interval, models.UsageIntervalHour)
	ts, err := usage.Series(ctx, s.st, usage.TimeseriesRequest{From: from, To: to, Interval: usage.Interval(iv), GroupBy: p.dimensions, Filter: f})
	if err != nil {
		return out, usageError(err)
	}
	points := make([]models.UsagePoint, len(ts.Points))
	for i, pt := range ts.Points {
		points[i] = models.UsagePoint{BucketStart: pt.BucketStart, Group: models.UsageGroup(pt.Group), Totals: models.UsageTotals(pt.Totals)}
	}
	return models.UsageTimeseries{From: from, To: to, Interval: iv, GroupBy: groupBy(q.GroupBy), Points: points}, nil
}

func groupBy(g *[]models.UsageGroupBy) []models.UsageGroupBy {
	if g == nil {
		return []models.UsageGroupBy{}
	}
	return *g
}

// ListUsageEvents is the operation of the same name in openapi/control.yaml,
// answered as JSON: one page.
func (v *Service) ListUsageEvents(ctx context.Context, params models.ListUsageEventsParams) (out models.UsageEventList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListUsageEvents")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, page, err := s.usageEvents(ctx, params, false)
	if err != nil {
		return out, err
	}
	items := make([]models.UsageEvent, len(page.Items))
	for i := range page.Items {
		items[i] = apiUsageEvent(&page.Items[i])
	}
	return models.UsageEventList{Items: items, NextCursor: page.NextCursor}, nil
}

// ExportUsageEvents is ListUsageEvents answered as CSV. It is one page too
// when limit is given (the next cursor in X-Next-Cursor); without limit it is
// every event of the range from cursor on, written page by page as it is
// read, so an export of any size holds one page in memory.
func (v *Service) ExportUsageEvents(ctx context.Context, params models.ListUsageEventsParams) (out UsageExport, err error) {
	s, ctx, done, err := v.enter(ctx, "ListUsageEvents")
	if err != nil {
		return out, err
	}
	defer done(&err)
	whole := params.Limit == nil
	er, page, err := s.usageEvents(ctx, params, whole)
	if err != nil {
		return out, err
	}
	return UsageExport{s: s, ctx: ctx, req: er, page: page, whole: whole}, nil
}

// usageEvents reads the first page of events the caller may see; whole: as
// large a page as a whole-range export reads. The first page is read before
// anything is written, so that a bad cursor or a failed query is still an
// error response.
func (s *Server) usageEvents(ctx context.Context, q models.ListUsageEventsParams, whole bool) (usage.EventsRequest, usage.EventPage, error) {
	p := usageParams{from: q.From, to: q.To, team: q.TeamID, project: q.ProjectID, relayKey: q.RelayKeyID,
		host: q.HostID, model: q.Model, status: q.Status}
	from, to, f, err := s.usageQuery(ctx, &p)
	if err != nil {
		return usage.EventsRequest{}, usage.EventPage{}, err
	}
	er := usage.EventsRequest{From: from, To: to, Filter: f, Cursor: deref(q.Cursor, "")}
	if whole {
		er.Limit = usage.MaxEventsLimit
	} else {
		er.Limit = int(deref(q.Limit, defaultLimit))
	}
	page, err := usage.Events(ctx, s.st, er)
	if err != nil {
		return er, page, usageError(err)
	}
	return er, page, nil
}

// GetUsageEvent implements StrictServerInterface: one event by Relay's
// request id, restricted as the list is, so that an event of a project the
// caller cannot read is a 404 like an id never recorded.
func (v *Service) GetUsageEvent(ctx context.Context, requestID string) (out models.UsageEvent, err error) {
	s, ctx, done, err := v.enter(ctx, "GetUsageEvent")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, _, f, err := s.usageQuery(ctx, &usageParams{})
	if err != nil {
		return out, err
	}
	e, err := usage.EventByRequestID(ctx, s.st, requestID, f)
	var ie *usage.InvalidError
	switch {
	case errors.As(err, &ie):
		return out, badRequest(ie.Field+": "+ie.Message, detail(ie.Field, ie.Message))
	case errors.Is(err, store.ErrNotFound):
		return out, notFound("usage event")
	case err != nil:
		return out, err
	}
	return apiUsageEvent(&e), nil
}

func apiUsageEvent(e *usage.EventRow) models.UsageEvent {
	return models.UsageEvent{
		RequestID: e.RequestID, CreatedAt: e.CreatedAt, RelayKeyID: e.RelayKeyID, ServiceAccountID: e.ServiceAccountID,
		UserID: e.UserID, ProjectID: e.ProjectID, TeamID: e.TeamID, PolicyID: e.PolicyID, Model: e.Model,
		BindingID: e.BindingID, HostID: e.HostID, HostKeyID: e.HostKeyID, InboundShape: e.InboundShape,
		UpstreamShape: e.UpstreamShape, Stream: e.Stream, Status: e.Status, ErrorKind: e.ErrorKind, Attempts: e.Attempts,
		InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, CachedReadTokens: e.CachedReadTokens,
		CacheWriteTokens: e.CacheWriteTokens, ReasoningTokens: e.ReasoningTokens, Cost: e.Cost,
		TtfbMs: e.TTFBMs, TotalMs: e.TotalMs, OverheadUs: e.OverheadUs, Saved: e.Saved, Route: deref(e.Route, ""),
		RouteDetail: e.RouteDetail, Kind: models.UsageEventKind(store.EventKindOf(e.InboundShape).String()),
	}
}

// UsageExport writes usage events as CSV: the page already read and, for a
// whole-range export, the pages after it, each read when the one before is
// written.
type UsageExport struct {
	s     *Server
	ctx   context.Context
	req   usage.EventsRequest
	page  usage.EventPage
	whole bool
}

// VisitListUsageEventsResponse implements gen.ListUsageEventsResponseObject.
func (r UsageExport) VisitListUsageEventsResponse(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/csv")
	h.Set("Cache-Control", "no-store")
	if !r.whole && r.page.NextCursor != nil {
		h.Set("X-Next-Cursor", *r.page.NextCursor)
	}
	w.WriteHeader(http.StatusOK)
	page, header := r.page, true
	for {
		if err := usage.WriteCSV(w, page.Items, header); err != nil {
			// The caller went away; there is no one to answer.
			r.s.log.DebugContext(r.ctx, "usage csv export: write failed", "err", err)
			return nil
		}
		header = false
		if !r.whole || page.NextCursor == nil {
			return nil
		}
		// Send the page now rather than when the buffer fills (the
		// ResponseController finds the Flusher behind the status recorder).
		_ = http.NewResponseController(w).Flush()
		r.req.Cursor = *page.NextCursor
		var err error
		if page, err = usage.Events(r.ctx, r.s.st, r.req); err != nil {
			// The status is sent: abort the connection so the caller sees an
			// incomplete transfer, not a CSV that looks whole.
			r.s.log.ErrorContext(r.ctx, "usage csv export failed mid-stream", "err", err)
			panic(http.ErrAbortHandler)
		}
	}
}
