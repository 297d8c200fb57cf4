package ui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/controlapi"
	gen "github.com/relay-llm/relay/openapi/controlgen"
)

// Requests in the usage ledger: the usage explorer lists a range's requests
// with the route each took (X-Relay-Route's value), and a request's page
// shows the decision in full from its route_detail. Both read GET
// /api/usage/events; it has no lookup by request id, so a request's address
// carries its time (?at=, Unix microseconds) and the page reads the events
// of that microsecond.

type requestView struct {
	RequestID, When, Route string
	Stats                  []stat
	Routed                 bool
	Decision               routeView
}

// requestHref is the address of e's page.
func requestHref(e models.UsageEvent) string {
	return "/usage/requests/" + url.PathEscape(e.RequestID) + "?" + url.Values{"at": {strconv.FormatInt(e.CreatedAt.UnixMicro(), 10)}}.Encode()
}

// requestsTable lists the requests of [from, to), a page from cursor;
// pageHref gives the address of the page at a cursor ("" the first).
func (h *Handler) requestsTable(p *page, from, to time.Time, cursor string, pageHref func(cursor string) string) (table, error) {
	limit := int32(pageSize)
	params := models.ListUsageEventsParams{From: &from, To: &to, Limit: &limit}
	if cursor != "" {
		params.Cursor = &cursor
	}
	resp, err := h.api.ListUsageEvents(p.ctx, gen.ListUsageEventsRequestObject{Params: params})
	if err != nil {
		return table{}, err
	}
	l, _ := resp.(gen.ListUsageEvents200JSONResponse)
	t := table{Columns: []column{{Title: "Request id"}, {Title: "When"}, {Title: "Model"}, {Title: "Status", Num: true},
		{Title: "Route"}, {Title: "Cached read", Num: true}, {Title: "Saved", Num: true}},
		Empty: "No requests in this range."}
	for _, e := range l.Body.Items {
		route := e.Route
		if route == "" {
			route = "not routed"
		}
		t.Rows = append(t.Rows, row{Cells: []cell{{Text: e.RequestID, Href: requestHref(e), Mono: true},
			{Text: e.CreatedAt.UTC().Format("2006-01-02 15:04:05")}, {Text: e.Model, Mono: true}, {Text: strconv.Itoa(int(e.Status)), Num: true},
			{Text: route}, {Text: count(e.CachedReadTokens), Num: true}, {Text: money(e.Saved), Num: true}}})
	}
	if l.Body.NextCursor != nil {
		t.Next = pageHref(*l.Body.NextCursor)
	}
	if cursor != "" {
		t.First = pageHref("")
	}
	return t, nil
}

// request shows one request of the usage ledger and its routing decision.
func (h *Handler) request(p *page) {
	rid := p.r.PathValue("request_id")
	notFound := controlapi.Problem{Status: http.StatusNotFound, Message: "There is no such request in the usage ledger."}
	micros, err := strconv.ParseInt(p.r.URL.Query().Get("at"), 10, 64)
	if err != nil {
		p.fail(notFound)
		return
	}
	from := time.UnixMicro(micros).UTC()
	to, limit := from.Add(time.Microsecond), int32(pageSize)
	params := models.ListUsageEventsParams{From: &from, To: &to, Limit: &limit}
	var ev *models.UsageEvent
	for ev == nil {
		resp, err := h.api.ListUsageEvents(p.ctx, gen.ListUsageEventsRequestObject{Params: params})
		if err != nil {
			h.failErr(p, err)
			return
		}
		l, _ := resp.(gen.ListUsageEvents200JSONResponse)
		for i := range l.Body.Items {
			if l.Body.Items[i].RequestID == rid {
				ev = &l.Body.Items[i]
				break
			}
		}
		if ev == nil && l.Body.NextCursor == nil {
			p.fail(notFound)
			return
		}
		params.Cursor = l.Body.NextCursor
	}
	v := requestView{RequestID: ev.RequestID, Route: ev.Route, When: ev.CreatedAt.UTC().Format("2006-01-02 15:04:05.000 UTC"),
		Stats: []stat{{"Model", ev.Model}, {"Status", statusText(*ev)},
			{"Attempts", strconv.Itoa(int(ev.Attempts))}, {"Input tokens", count(ev.InputTokens)}, {"Cached read", count(ev.CachedReadTokens)},
			{"Output tokens", count(ev.OutputTokens)}, {"Cost", money(ev.Cost)}, {"Saved by the cache", money(ev.Saved)},
			{"Time to first byte", strconv.Itoa(int(ev.TtfbMs)) + " ms"}, {"Total", strconv.Itoa(int(ev.TotalMs)) + " ms"}}}
	if d := ev.RouteDetail; len(d) > 0 && string(d) != "null" {
		var e models.RouteExplanation
		if err := json.Unmarshal(d, &e); err != nil {
			h.log.WarnContext(p.ctx, "a usage event's route_detail does not decode", "request_id", ev.RequestID, "err", err)
		} else {
			v.Routed, v.Decision = true, routeViewOf(e, true)
		}
	}
	p.render(http.StatusOK, "Request "+ev.RequestID, "usage", requestPage(v))
}

// statusText is a request's status with its error kind, if any.
func statusText(e models.UsageEvent) string {
	s := strconv.Itoa(int(e.Status))
	if k := strings.TrimSpace(e.ErrorKind); k != "" {
		s += " (" + k + ")"
	}
	return s
}
