package controlapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/store"
)

// TestCrossTenant_FiltersNamingAnotherTeam: the accounting test sends every
// operation with its required parameters only; here the optional filters
// name team B's rows outright — a usage query or event list filtered to
// team B's project or team, the audit log filtered to team B's objects —
// and every role of team A gets nothing of team B (403/404, or an empty
// answer: team B's request id and cost never appear).
func TestCrossTenant_FiltersNamingAnotherTeam(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := buildAccountingWorld(t, b)
	now := time.Now().UTC().Truncate(time.Microsecond)
	project, team := w.ids["project_id"], w.ids["team_id"]
	const reqID, cost = "req_teamb_secret_0001", 987654321
	b.seed([]store.UsageEvent{{
		RequestID: reqID, CreatedAt: now.Add(-time.Minute), ProjectID: &project, TeamID: &team, Model: "acc-model",
		InboundShape: "openai_chat", UpstreamShape: "openai", Status: 200, Attempts: 1, InputTokens: 5, OutputTokens: 5, Cost: cost,
	}})
	from, to := now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339)
	window := "from=" + from + "&to=" + to
	paths := []string{
		"/api/usage/summary?" + window + "&project_id=" + project.String(),
		"/api/usage/summary?" + window + "&team_id=" + team.String(),
		"/api/usage/summary?" + window + "&group_by=project",
		"/api/usage/timeseries?" + window + "&project_id=" + project.String(),
		"/api/usage/timeseries?" + window + "&team_id=" + team.String(),
		"/api/usage/events?" + window + "&project_id=" + project.String(),
		"/api/usage/events?" + window + "&team_id=" + team.String(),
		"/api/usage/events?" + window + "&project_id=" + project.String() + "&format=csv",
		"/api/usage/events/" + reqID,
		"/api/audit?object_id=" + project.String(),
		"/api/relay-keys?project_id=" + project.String(),
		"/api/service-accounts?project_id=" + project.String(),
		"/api/policy-bindings?project_id=" + project.String(),
		"/api/budgets?team_id=" + team.String(),
		"/api/role-bindings?project_id=" + project.String(),
		"/api/auth/tokens?project_id=" + project.String(),
		"/api/projects?team_id=" + team.String(),
	}
	tries := 0
	for _, role := range []string{"nobody", "viewerA1", "devA1", "padminA1", "tadminA"} {
		for _, p := range paths {
			tries++
			req, _ := http.NewRequestWithContext(b.ctx, http.MethodGet, b.srv.URL+strings.ReplaceAll(p, "+", "%2B"), nil)
			resp, err := w.cookies[role].Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			leaks := strings.Contains(string(body), reqID) || strings.Contains(string(body), fmt.Sprint(cost))
			for _, id := range w.teamB {
				leaks = leaks || strings.Contains(string(body), id) && !strings.Contains(p, id)
			}
			if resp.StatusCode >= 500 || resp.StatusCode < 400 && leaks {
				t.Errorf("%s as %s: %d, team B's data in the answer: %.300s", p, role, resp.StatusCode, body)
			}
		}
	}
	t.Logf("%d cross-tenant reads, none answered with team B's data", tries)
}
