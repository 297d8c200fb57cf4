package ui_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/bridge"
	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/store"
)

// breakerBundle is a console whose control API reads and clears a real
// breaker store, with three holds open: two model holds on k1 (gpt-4o,
// gpt-4o-mini) and a key hold on k2.
func breakerBundle(t *testing.T) (b *bundle, breakers *keypool.Memory, now time.Time, k1, k2 uuid.UUID) {
	t.Helper()
	now = time.Now().UTC().Truncate(time.Millisecond)
	breakers = keypool.NewMemory(keypool.BreakerConfig{})
	b = setup(t, func(cfg *controlapi.Config) {
		cfg.Breakers, cfg.ClearBreakers = bridge.Breakers(breakers, func() time.Time { return now })
	})
	host := b.apiCall("POST", "/api/hosts", map[string]any{"slug": "up", "provider": "openai", "base_url": "https://api.example.com/v1"})
	k1 = uuid.MustParse(b.apiCall("POST", "/api/host-keys", map[string]any{"host_id": host["id"], "slug": "first", "secret": "sk-first-secret-value"})["id"].(string))
	k2 = uuid.MustParse(b.apiCall("POST", "/api/host-keys", map[string]any{"host_id": host["id"], "slug": "second", "secret": "sk-second-secret-value"})["id"].(string))
	hold := func(id uuid.UUID, model string, r keypool.Result) {
		tk, ok := breakers.Acquire(keypool.KeyRef{ID: id, Version: 1}, model, now)
		if !ok {
			t.Fatalf("acquire %v %q", id, model)
		}
		breakers.Report(tk, r, now)
	}
	hold(k1, "gpt-4o", keypool.Result{Outcome: keypool.OutcomeFailure, Scope: keypool.ScopeModel, Reason: "upstream 500"})
	hold(k1, "gpt-4o-mini", keypool.Result{Outcome: keypool.OutcomeRateLimited, Scope: keypool.ScopeModel, RetryAfter: time.Minute, Reason: "upstream 429"})
	hold(k2, "gpt-4o", keypool.Result{Outcome: keypool.OutcomeAuth, Scope: keypool.ScopeKey, Reason: "upstream 401"})
	return b, breakers, now, k1, k2
}

func ready(b *keypool.Memory, id uuid.UUID, model string, now time.Time) bool {
	return b.Ready(keypool.KeyRef{ID: id, Version: 1}, model, now)
}

func TestConsole_BreakerHoldsListedAndCleared(t *testing.T) {
	t.Parallel()
	b, breakers, now, k1, k2 := breakerBundle(t)
	b.user("ada@example.com", "admin")
	br := b.signedIn("ada@example.com")

	clearModel := "/breakers/" + k1.String() + "/clear?model=gpt-4o"
	clearKey := "/breakers/" + k2.String() + "/clear"
	a := br.get("/breakers")
	must(t, a, http.StatusOK, "first", "second", "gpt-4o-mini", "upstream 500", "upstream 429", "upstream 401",
		">model<", ">key<", "auth_failed", "cooling", now.Add(time.Minute).Format("15:04:05"),
		`action="`+clearModel+`"`, `action="`+clearKey+`"`, "Clear this model&#39;s hold", "Clear all holds of this key")

	// A POST without the CSRF token changes nothing.
	must(t, br.post(clearModel, url.Values{"csrf": {""}}), http.StatusForbidden, "reload the page")
	if ready(breakers, k1, "gpt-4o", now) {
		t.Fatal("a CSRF-less POST cleared a hold")
	}

	// One model's hold, as a plain POST: exactly it is closed.
	a = br.post(clearModel, url.Values{})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/breakers" {
		t.Fatalf("clear: %d %s", a.status, a.body)
	}
	if !ready(breakers, k1, "gpt-4o", now) || ready(breakers, k1, "gpt-4o-mini", now) || ready(breakers, k2, "", now) {
		t.Fatal("clearing gpt-4o's hold did not close exactly it")
	}
	// Every hold of a key, through htmx.
	req, _ := http.NewRequest("POST", br.base+clearKey, nil)
	req.Header.Set("HX-Request", "true")
	req.Header.Set(controlapi.CSRFHeader, br.csrf)
	if a := br.do(req); a.status != http.StatusNoContent || a.header.Get("HX-Location") == "" {
		t.Fatalf("htmx clear: %d %v", a.status, a.header)
	}
	if !ready(breakers, k2, "", now) || ready(breakers, k1, "gpt-4o-mini", now) {
		t.Fatal("clearing the key's holds did not close exactly them")
	}
	a = br.get("/breakers")
	must(t, a, http.StatusOK, "gpt-4o-mini")
	mustNot(t, a, "upstream 500", "upstream 401")

	kind := "breakers"
	rows, err := b.st.ListAuditLog(t.Context(), store.AuditLogPage{Kind: &kind, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].ObjectID != k1.String() || rows[1].ObjectID != k2.String() || rows[0].Action != "delete" {
		t.Fatalf("audit rows = %+v", rows)
	}
	var after struct {
		Model   string   `json:"model"`
		Cleared []string `json:"cleared"`
	}
	if err := json.Unmarshal(rows[0].After, &after); err != nil || after.Model != "gpt-4o" || len(after.Cleared) != 1 {
		t.Errorf("audit row after = %s (%v)", rows[0].After, err)
	}
}

func TestConsole_ViewerSeesHoldsButMayNotClear(t *testing.T) {
	t.Parallel()
	b, breakers, now, k1, _ := breakerBundle(t)
	b.user("vic@example.com", "viewer")
	br := b.signedIn("vic@example.com")

	a := br.get("/breakers")
	must(t, a, http.StatusOK, "first", "gpt-4o-mini", "upstream 500")
	mustNot(t, a, "Clear this model", "Clear all holds", "/clear")

	// Forced anyway: the API's RBAC refuses it and nothing changes.
	must(t, br.post("/breakers/"+k1.String()+"/clear", url.Values{}), http.StatusForbidden)
	if ready(breakers, k1, "gpt-4o", now) || ready(breakers, k1, "gpt-4o-mini", now) {
		t.Fatal("a viewer's forced POST cleared a hold")
	}
	kind := "breakers"
	if rows, err := b.st.ListAuditLog(t.Context(), store.AuditLogPage{Kind: &kind, Limit: 10}); err != nil || len(rows) != 0 {
		t.Fatalf("audit rows = %+v (%v)", rows, err)
	}
}

func TestConsole_OverviewShowsPacingQueue(t *testing.T) {
	t.Parallel()
	var waiting int64 = 1234
	b := setup(t, func(cfg *controlapi.Config) { cfg.PacingQueue = func() int64 { return waiting } })
	b.user("ada@example.com", "admin")
	b.user("vic@example.com", "viewer")
	must(t, b.signedIn("ada@example.com").get("/"), http.StatusOK, "Pacing queues", `<strong id="pacing-queue">1,234</strong>`)

	// A project developer does not see the pod's queues.
	team := b.apiCall("POST", "/api/teams", map[string]any{"slug": "core"})
	project := b.apiCall("POST", "/api/projects", map[string]any{"team_id": team["id"], "slug": "app"})
	dev := b.apiCall("POST", "/api/users", map[string]any{"email": "dev@example.com", "password": "correct horse battery"})
	b.apiCall("POST", "/api/role-bindings", map[string]any{"user_id": dev["id"], "role": "developer", "project_id": project["id"]})
	mustNot(t, b.signedIn("dev@example.com").get("/"), "Pacing queues")
}
