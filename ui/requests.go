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
)

// Requests in the usage ledger: the usage explorer lists a range's requests
// with the route each took (X-Relay-Route's value), and a request's page
// shows the decision in full from its route_detail. The list reads GET
// /api/usage/events, a request's page GET /api/usage/events/{request_id}.
// Addresses made before that lookup carried the request's time (?at=, Unix
// microseconds); the page ignores it, so they still work.

type requestView struct {
	RequestID, When, Route string
	Stats                  []stat
	Routed                 bool
	Decision               routeView
}

// eventKind shows what a ledger event was, as the control API names it: a
// finished batch's usage (one event per batch, at the batch price), a
// call through /mcp (its model is <server>__<tool>), or a model call.
func eventKind(kind models.UsageEventKind) cell {
	switch kind {
	case models.UsageEventKindBatch:
		return cell{Text: "batch", Badge: "ok"}
	case models.UsageEventKindTool:
		return cell{Text: "tool call", Badge: "ok"}
	}
	return cell{Text: "model call"}
}

// requestHref is the address of e's page.
func requestHref(e models.UsageEvent) string {
	return "/usage/requests/" + url.PathEscape(e.RequestID)
}

// requestsTable lists the requests of [from, to), a page from cursor;
// pageHref gives the address of the page at a cursor ("" the first).
func (h *Handler) requestsTable(p *page, from, to time.Time, cursor string, pageHref func(cursor string) string) (table, error) {
	limit := int32(pageSize)
	params := models.ListUsageEventsParams{From: &from, To: &to, Limit: &limit}
	if cursor != "" {
		params.Cursor = &cursor
	}
	l, err := h.svc.ListUsageEvents(p.ctx, params)
	if err != nil {
		return table{}, err
	}
	t := table{Columns: []column{{Title: "Request id"}, {Title: "When"}, {Title: "Kind"}, {Title: "Model"}, {Title: "Status", Num: true},
		{Title: "Route"}, {Title: "Cost", Num: true}, {Title: "Cached read", Num: true}, {Title: "Saved", Num: true}},
		Empty: "No requests in this range."}
	for _, e := range l.Items {
		route := e.Route
		if route == "" {
			route = "not routed"
		}
		t.Rows = append(t.Rows, row{Cells: []cell{{Text: e.RequestID, Href: requestHref(e), Mono: true},
			{Text: e.CreatedAt.UTC().Format("2006-01-02 15:04:05")}, eventKind(e.Kind), {Text: e.Model, Mono: true}, {Text: strconv.Itoa(int(e.Status)), Num: true},
			{Text: route}, {Text: money(e.Cost), Num: true}, {Text: count(e.CachedReadTokens), Num: true}, {Text: money(e.Saved), Num: true}}})
	}
	if l.NextCursor != nil {
		t.Next = pageHref(*l.NextCursor)
	}
	if cursor != "" {
		t.First = pageHref("")
	}
	return t, nil
}

// request shows one request of the usage ledger and its routing decision.
func (h *Handler) request(p *page) {
	rid := p.r.PathValue("request_id")
	e, err := h.svc.GetUsageEvent(p.ctx, rid)
	if err != nil {
		// Not Relay's form of id (400), or not one the caller may read (404):
		// either way there is no such page.
		if pr := controlapi.Explain(p.r.Method, err); pr.Status == http.StatusBadRequest || pr.Status == http.StatusNotFound {
			p.fail(controlapi.Problem{Status: http.StatusNotFound, Message: "There is no such request in the usage ledger."})
			return
		}
		h.failErr(p, err)
		return
	}
	ev := &e
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
		v.Stats = append(v.Stats, contentStats(d)...)
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

// contentStats are what the content controls did, from a route_detail's
// "cache" and "guardrails" (docs/usage.md): never a matched text, which
// the ledger does not hold.
func contentStats(d []byte) []stat {
	var c struct {
		Cache *struct {
			AgeMS int64 `json:"age_ms"`
			Saved int64 `json:"saved"`
		} `json:"cache"`
		Guardrails []struct {
			Stage, Rule, Kind, Action, Failure string
			N                                  int
		} `json:"guardrails"`
	}
	if json.Unmarshal(d, &c) != nil {
		return nil
	}
	var out []stat
	if c.Cache != nil {
		out = append(out, stat{"Response cache", "hit, entry " + strconv.FormatInt(c.Cache.AgeMS/1000, 10) + " s old, saved " + money(c.Cache.Saved)})
	}
	for _, g := range c.Guardrails {
		what := g.Stage + ": " + g.Action + " (" + g.Kind
		if g.Failure != "" {
			what += ", webhook failed: " + g.Failure
		}
		what += ") ×" + strconv.Itoa(g.N)
		out = append(out, stat{"Guardrail " + g.Rule, what})
	}
	return out
}
