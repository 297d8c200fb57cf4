package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
)

// The operational pages: overview, usage explorer and breakers. They read
// the usage query layer and the key pool through the API's methods.

// money shows a cost in nano-units of currency (usage) as currency.
func money(nano int64) string {
	v := float64(nano) / 1e9
	if v >= 1 || v == 0 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func (h *Handler) summary(p *page, from, to time.Time, by ...models.UsageGroupBy) (models.UsageSummary, error) {
	params := models.GetUsageSummaryParams{From: &from, To: &to}
	if len(by) > 0 {
		params.GroupBy = &by
	}
	resp, err := h.svc.GetUsageSummary(p.ctx, params)
	if err != nil {
		return models.UsageSummary{}, err
	}
	return models.UsageSummary(resp), nil
}

func totalOf(rows []models.UsageRow) models.UsageTotals {
	var t models.UsageTotals
	for _, r := range rows {
		t.Requests += r.Totals.Requests
		t.Errors += r.Totals.Errors
		t.Cost += r.Totals.Cost
		t.InputTokens += r.Totals.InputTokens
		t.OutputTokens += r.Totals.OutputTokens
		t.CachedReadTokens += r.Totals.CachedReadTokens
		t.Saved += r.Totals.Saved
		t.BatchRequests += r.Totals.BatchRequests
		t.BatchCost += r.Totals.BatchCost
		t.ToolCalls += r.Totals.ToolCalls
		t.ToolCost += r.Totals.ToolCost
	}
	if t.InputTokens > 0 {
		t.CacheHitRatio = float64(min(t.CachedReadTokens, t.InputTokens)) / float64(t.InputTokens)
	}
	return t
}

// stats are a usage total's figures; spend is split by kind (model calls,
// finished batches, tool calls through /mcp) as the rollups sum it.
func stats(t models.UsageTotals) []stat {
	return []stat{{"Requests", count(t.Requests)}, {"Errors", count(t.Errors)}, {"Spend", money(t.Cost)},
		{"Model spend", money(t.Cost - t.BatchCost - t.ToolCost)},
		{"Batch spend", money(t.BatchCost) + " (" + count(t.BatchRequests) + " batches)"},
		{"Tool spend", money(t.ToolCost) + " (" + count(t.ToolCalls) + " tool calls)"},
		{"Input tokens", count(t.InputTokens)}, {"Output tokens", count(t.OutputTokens)},
		{"Cache hit ratio", percent(t.CacheHitRatio)}, {"Saved by the cache", money(t.Saved)}}
}

// percent shows a ratio (0 to 1) as a percentage with one decimal.
func percent(r float64) string { return strconv.FormatFloat(r*100, 'f', 1, 64) + " %" }

// topTable is the largest rows of a summary by requests.
func topTable(rows []models.UsageRow, title string, name func(models.UsageGroup) string, n int) table {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Totals.Requests > rows[j].Totals.Requests })
	if len(rows) > n {
		rows = rows[:n]
	}
	t := table{Columns: []column{{Title: title}, {Title: "Requests", Num: true}, {Title: "Errors", Num: true}, {Title: "Spend", Num: true},
		{Title: "Cache hit", Num: true}, {Title: "Saved", Num: true}},
		Empty: "No requests in this range."}
	for _, r := range rows {
		t.Rows = append(t.Rows, row{Cells: []cell{{Text: name(r.Group), Mono: true}, {Text: count(r.Totals.Requests), Num: true},
			{Text: count(r.Totals.Errors), Num: true}, {Text: money(r.Totals.Cost), Num: true},
			{Text: percent(r.Totals.CacheHitRatio), Num: true}, {Text: money(r.Totals.Saved), Num: true}}})
	}
	return t
}

func (h *Handler) overview(p *page) {
	to := time.Now()
	from := to.Add(-24 * time.Hour)
	byModel, err := h.summary(p, from, to, models.UsageGroupByModel)
	if err != nil {
		h.failErr(p, err)
		return
	}
	byProject, err := h.summary(p, from, to, models.UsageGroupByProject)
	if err != nil {
		h.failErr(p, err)
		return
	}
	projects := labels(h.projectOptions(p))
	v := overviewView{
		Range:       "last 24 hours",
		Stats:       stats(totalOf(byModel.Rows)),
		TopModels:   topTable(byModel.Rows, "Model", func(g models.UsageGroup) string { return deref(g.Model) }, 5),
		TopProjects: topTable(byProject.Rows, "Project", func(g models.UsageGroup) string { return idLabel(projects, g.ProjectID) }, 5),
	}
	// Breakers are this pod's view of every host key: system readers only.
	if v.ShowBreakers = p.who.Can(rbac.Read, rbac.System()); v.ShowBreakers {
		br, err := h.breakerTable(p, true, false)
		if err != nil {
			h.failErr(p, err)
			return
		}
		v.Breakers = br
	}
	if n, ok := h.api.PacingQueue(p.who); ok {
		v.Pacing = count(n)
	}
	p.render(http.StatusOK, "Overview", "overview", overviewPage(v))
}

func deref(s *string) string {
	if s == nil {
		return "—"
	}
	return *s
}

func idLabel(m labelMap, id *uuid.UUID) string {
	if id == nil {
		return "—"
	}
	return m.of(*id)
}

// breakerTable lists this pod's breakers; held only keeps the open ones.
// With clear, a held row offers to clear its hold: a model's hold alone, or
// every hold of its host key.
func (h *Handler) breakerTable(p *page, held, clear bool) (table, error) {
	resp, err := h.svc.ListBreakers(p.ctx, models.ListBreakersParams{})
	if err != nil {
		return table{}, err
	}
	keys, hosts := labels(h.hostKeyOptions(p)), labels(h.hostOptions(p))
	t := table{Columns: []column{{Title: "Host key"}, {Title: "Host"}, {Title: "Scope"}, {Title: "Model"}, {Title: "Hold"},
		{Title: "Reason"}, {Title: "Failures", Num: true}, {Title: "Retry at"}},
		Empty: "Every host key is healthy."}
	for _, b := range resp.Items {
		if held && b.State == models.BreakerStateClosed {
			continue
		}
		st := cell{Text: string(b.Hold), Badge: "ok"}
		if b.State == models.BreakerStateClosed {
			st.Text = string(b.State)
		} else if b.State == models.BreakerStateOpen {
			st.Badge = "bad"
		} else {
			st.Badge = "warn"
		}
		retry := "—"
		if b.RetryAt != nil {
			retry = b.RetryAt.UTC().Format("15:04:05")
		}
		reason := b.Reason
		if reason == "" {
			reason = "—"
		}
		r := row{Cells: []cell{{Text: keys.of(b.HostKeyID), Mono: true}, {Text: hosts.of(b.HostID), Mono: true}, {Text: string(b.Scope)},
			{Text: deref(b.Model), Mono: true}, st, {Text: reason}, {Text: strconv.Itoa(int(b.ConsecutiveFailures)), Num: true}, {Text: retry}}}
		if clear && b.State != models.BreakerStateClosed {
			r.Actions = clearActions(b, keys.of(b.HostKeyID))
		}
		t.Rows = append(t.Rows, r)
	}
	return t, nil
}

// clearActions are a held row's buttons: clear this model's hold (a
// model-scoped hold) and clear every hold of the host key.
func clearActions(b models.Breaker, key string) []rowAction {
	href := "/breakers/" + b.HostKeyID.String() + "/clear"
	var out []rowAction
	if b.Scope == models.BreakerScopeModel && b.Model != nil {
		out = append(out, rowAction{Href: href + "?" + url.Values{"model": {*b.Model}}.Encode(), Label: "Clear this model's hold",
			Confirm: "Clear the hold of " + key + " on " + *b.Model + "?"})
	}
	return append(out, rowAction{Href: href, Label: "Clear all holds of this key", Confirm: "Clear every hold of " + key + "?", Danger: true})
}

func (h *Handler) breakers(p *page) {
	t, err := h.breakerTable(p, false, p.who.Can(rbac.ManageSystem, rbac.System()))
	if err != nil {
		h.failErr(p, err)
		return
	}
	t.Empty = "No host key has served a request in this pod yet."
	p.render(http.StatusOK, "Breakers", "breakers", breakersPage(t, p.who.CSRFToken))
}

// clearBreakers clears a host key's holds in this pod — one model's when the
// address names a model, else all of them — through the API's ClearBreakers
// (system admins only; it writes the audit row).
func (h *Handler) clearBreakers(p *page) {
	id, ok := pathID(p)
	if !ok {
		return
	}
	params := models.ClearBreakersParams{HostKeyID: id}
	if m := p.r.URL.Query().Get("model"); m != "" {
		params.Model = &m
	}
	q := url.Values{"host_key_id": {id.String()}}
	if params.Model != nil {
		q.Set("model", *params.Model)
	}
	if err := h.api.Check(p.ctx, http.MethodDelete, "/api/breakers?"+q.Encode(), nil); err != nil {
		h.failErr(p, err)
		return
	}
	if _, err := h.svc.ClearBreakers(p.ctx, params); err != nil {
		h.failErr(p, err)
		return
	}
	redirect(p.w, p.r, "/breakers")
}

// localTime is the value format of <input type="datetime-local">, in UTC.
const localTime = "2006-01-02T15:04"

var usageGroups = []option{{"model", "Model", false}, {"project", "Project", false}, {"team", "Team", false},
	{"key", "Relay key", false}, {"host", "Host", false}, {"status", "Status", false},
	{"binding", "Binding", false}, {"host_key", "Host key", false}}

func (h *Handler) usage(p *page) {
	q := p.r.URL.Query()
	to, from := time.Now().UTC(), time.Time{}
	if t, err := time.Parse(localTime, q.Get("to")); err == nil {
		to = t
	}
	from = to.Add(-24 * time.Hour)
	if t, err := time.Parse(localTime, q.Get("from")); err == nil {
		from = t
	}
	group := q.Get("group_by")
	if labels(usageGroups)[group] == "" {
		group = "model"
	}
	v := usageView{From: from.Format(localTime), To: to.Format(localTime), GroupBy: labels(usageGroups)[group]}
	for _, o := range usageGroups {
		o.Selected = o.Value == group
		v.Groups = append(v.Groups, o)
	}
	csv := url.Values{"format": {"csv"}, "from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}}
	v.CSV = "/api/usage/events?" + csv.Encode()

	sum, err := h.summary(p, from, to, models.UsageGroupBy(group))
	if err != nil {
		h.failErr(p, err)
		return
	}
	v.Stats = stats(totalOf(sum.Rows))
	name := h.groupNamer(p, models.UsageGroupBy(group))
	v.Rows = topTable(sum.Rows, v.GroupBy, name, 100)

	interval := models.UsageIntervalHour
	switch span := to.Sub(from); {
	case span <= 3*time.Hour:
		interval = models.UsageIntervalMinute
	case span > 4*24*time.Hour:
		interval = models.UsageIntervalDay
	}
	ts, err := h.svc.GetUsageTimeseries(p.ctx, models.GetUsageTimeseriesParams{From: &from, To: &to, Interval: &interval})
	if err != nil {
		h.failErr(p, err)
		return
	}
	v.Chart = barChartOf("Requests per "+string(interval), models.UsageTimeseries(ts).Points, from, to, interval)

	here := url.Values{"from": {v.From}, "to": {v.To}, "group_by": {group}}
	v.Requests, err = h.requestsTable(p, from, to, q.Get("cursor"), func(cursor string) string {
		at := url.Values{}
		for k, x := range here {
			at[k] = x
		}
		if cursor != "" {
			at.Set("cursor", cursor)
		}
		return "/usage?" + at.Encode() + "#requests"
	})
	if err != nil {
		h.failErr(p, err)
		return
	}
	p.render(http.StatusOK, "Usage", "usage", usagePage(v))
}

func (h *Handler) groupNamer(p *page, by models.UsageGroupBy) func(models.UsageGroup) string {
	switch by {
	case models.UsageGroupByProject:
		m := labels(h.projectOptions(p))
		return func(g models.UsageGroup) string { return idLabel(m, g.ProjectID) }
	case models.UsageGroupByTeam:
		m := labels(h.teamOptions(p))
		return func(g models.UsageGroup) string { return idLabel(m, g.TeamID) }
	case models.UsageGroupByHost:
		m := labels(h.hostOptions(p))
		return func(g models.UsageGroup) string { return idLabel(m, g.HostID) }
	case models.UsageGroupByKey:
		return func(g models.UsageGroup) string { return idLabel(labelMap{}, g.RelayKeyID) }
	case models.UsageGroupByBinding:
		m := h.bindingLabels(p)
		return func(g models.UsageGroup) string { return idLabel(m, g.BindingID) }
	case models.UsageGroupByHostKey:
		m := labels(h.hostKeyOptions(p))
		return func(g models.UsageGroup) string { return idLabel(m, g.HostKeyID) }
	case models.UsageGroupByStatus:
		return func(g models.UsageGroup) string {
			if g.Status == nil {
				return "—"
			}
			return strconv.Itoa(int(*g.Status))
		}
	}
	return func(g models.UsageGroup) string { return deref(g.Model) }
}

// bindingLabels names bindings "model@host" for the usage tables.
func (h *Handler) bindingLabels(p *page) labelMap {
	l := optionLimit
	resp, err := h.svc.ListBindings(p.ctx, models.ListBindingsParams{Limit: &l})
	if err != nil {
		return labelMap{}
	}
	models, hosts := labels(h.modelOptions(p)), labels(h.hostOptions(p))
	out := labelMap{}
	for _, x := range resp.Items {
		out[x.ID.String()] = models.of(x.ModelID) + "@" + hosts.of(x.HostID)
	}
	return out
}

// barChartOf draws requests per bucket as bars on a fixed 720×200 canvas.
func barChartOf(title string, points []models.UsagePoint, from, to time.Time, interval models.UsageInterval) chart {
	const w, hgt, left, bottom = 720, 200, 40, 20
	c := chart{Title: title, Width: w, Height: hgt, Empty: len(points) == 0}
	if c.Empty {
		return c
	}
	step := map[models.UsageInterval]time.Duration{models.UsageIntervalMinute: time.Minute, models.UsageIntervalHour: time.Hour, models.UsageIntervalDay: 24 * time.Hour}[interval]
	start := from.Truncate(step)
	n := int(to.Sub(start)/step) + 1
	if n < 1 || n > 2000 {
		n = 2000
	}
	buckets := make([]int64, n)
	var peak int64
	for _, pt := range points {
		i := int(pt.BucketStart.Sub(start) / step)
		if i < 0 || i >= n {
			continue
		}
		buckets[i] += pt.Totals.Requests
		peak = max(peak, buckets[i])
	}
	bw := float64(w-left) / float64(n)
	plot := hgt - bottom - 10
	for i, b := range buckets {
		if b == 0 {
			continue
		}
		bh := int(float64(plot) * float64(b) / float64(peak))
		bh = max(bh, 1)
		c.Bars = append(c.Bars, chartBar{X: left + int(float64(i)*bw), Y: hgt - bottom - bh, W: max(int(bw)-1, 1), H: bh,
			Label: fmt.Sprintf("%s: %s requests", start.Add(time.Duration(i)*step).UTC().Format("Jan 2 15:04"), count(b))})
	}
	c.Ticks = []chartTick{{X: 0, Y: 14, Label: count(peak)}, {X: 0, Y: hgt - bottom, Label: "0"},
		{X: left, Y: hgt - 4, Label: start.UTC().Format("Jan 2 15:04")}, {X: w - 90, Y: hgt - 4, Label: to.UTC().Format("Jan 2 15:04")}}
	return c
}

func viewBox(c chart) string { return fmt.Sprintf("0 0 %d %d", c.Width, c.Height) }
