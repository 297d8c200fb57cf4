package controlapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/bridge"
	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/store"
)

func TestBreakers_ListAndClearWithAudit(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	breakers := keypool.NewMemory(keypool.BreakerConfig{})
	b := setup(t, func(cfg *controlapi.Config) {
		cfg.Breakers, cfg.ClearBreakers = bridge.Breakers(breakers, func() time.Time { return now })
	})
	ctx, c := b.ctx, b.admin
	h := b.host("h")
	k1, k2 := b.hostKey(h.ID, "k1"), b.hostKey(h.ID, "k2")
	hold := func(id uuid.UUID, model string, r keypool.Result) {
		ref := keypool.KeyRef{ID: id, Version: 1}
		tk, ok := breakers.Acquire(ref, model, now)
		if !ok {
			t.Fatalf("acquire %v %q", id, model)
		}
		breakers.Report(tk, r, now)
	}
	hold(k1.ID, "gpt-4o", keypool.Result{Outcome: keypool.OutcomeFailure, Scope: keypool.ScopeModel, Reason: "500"})
	hold(k1.ID, "gpt-4o-mini", keypool.Result{Outcome: keypool.OutcomeRateLimited, Scope: keypool.ScopeModel, RetryAfter: time.Minute, Reason: "429"})
	hold(k2.ID, "gpt-4o", keypool.Result{Outcome: keypool.OutcomeAuth, Scope: keypool.ScopeKey, Reason: "401"})

	list := call(c.ListBreakersWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200.Items
	byKey := map[uuid.UUID][]models.Breaker{}
	for _, it := range list {
		byKey[it.HostKeyID] = append(byKey[it.HostKeyID], it)
	}
	if len(list) != 3 || len(byKey[k1.ID]) != 2 || len(byKey[k2.ID]) != 1 {
		t.Fatalf("breakers = %+v", list)
	}
	m := byKey[k1.ID][0]
	if m.Scope != models.BreakerScopeModel || m.Model == nil || *m.Model != "gpt-4o" || m.State != models.BreakerStateOpen ||
		m.Hold != models.BreakerHoldOpen || m.Reason != "500" || m.HostID != h.ID || m.RetryAt == nil || !m.RetryAt.Equal(now.Add(time.Second)) {
		t.Errorf("model hold = %+v", m)
	}
	if cool := byKey[k1.ID][1]; cool.Hold != models.BreakerHoldCooling || *cool.Model != "gpt-4o-mini" {
		t.Errorf("cooling hold = %+v", cool)
	}
	k := byKey[k2.ID][0]
	if k.Scope != models.BreakerScopeKey || k.Model != nil || k.Hold != models.BreakerHoldAuthFailed || k.Reason != "401" ||
		k.RetryAt == nil || !k.RetryAt.Equal(now.Add(30*time.Second)) {
		t.Errorf("key hold = %+v", k)
	}

	// A viewer may list but not clear.
	viewer := b.newUser("viewer")
	b.grant(viewer.user.ID, models.RoleViewer, nil, nil)
	call(viewer.ClearBreakersWithResponse(ctx, &models.ClearBreakersParams{HostKeyID: k1.ID})).want(t, http.StatusForbidden)
	call(c.ClearBreakersWithResponse(ctx, &models.ClearBreakersParams{HostKeyID: uuid.New()})).want(t, http.StatusNotFound)

	// One model's hold, then every hold of a key.
	model := "gpt-4o"
	got := call(c.ClearBreakersWithResponse(ctx, &models.ClearBreakersParams{HostKeyID: k1.ID, Model: &model})).want(t, http.StatusOK).JSON200.Items
	if len(got) != 1 || *got[0].Model != "gpt-4o" || got[0].HostID != h.ID {
		t.Fatalf("cleared = %+v", got)
	}
	if !breakers.Ready(keypool.KeyRef{ID: k1.ID, Version: 1}, "gpt-4o", now) || breakers.Ready(keypool.KeyRef{ID: k1.ID, Version: 1}, "gpt-4o-mini", now) {
		t.Error("the clear of one model's hold did not close exactly it")
	}
	got = call(c.ClearBreakersWithResponse(ctx, &models.ClearBreakersParams{HostKeyID: k2.ID})).want(t, http.StatusOK).JSON200.Items
	if len(got) != 1 || got[0].Scope != models.BreakerScopeKey {
		t.Fatalf("cleared = %+v", got)
	}
	if !breakers.Ready(keypool.KeyRef{ID: k2.ID, Version: 1}, "", now) {
		t.Error("the key is still held")
	}
	if list := call(c.ListBreakersWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200.Items; len(list) != 1 {
		t.Errorf("left = %+v", list)
	}

	kind := "breakers"
	rows, err := b.st.ListAuditLog(ctx, store.AuditLogPage{Kind: &kind, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Action != "delete" || rows[0].ObjectID != k1.ID.String() || rows[0].Actor != controlapi.AdminTokenActor(adminToken) ||
		rows[1].ObjectID != k2.ID.String() {
		t.Fatalf("audit rows = %+v", rows)
	}
	var after struct {
		HostKeyID uuid.UUID `json:"host_key_id"`
		Model     string    `json:"model"`
		Cleared   []string  `json:"cleared"`
	}
	if err := json.Unmarshal(rows[0].After, &after); err != nil || after.HostKeyID != k1.ID || after.Model != "gpt-4o" ||
		len(after.Cleared) != 1 || after.Cleared[0] != "gpt-4o: open" {
		t.Errorf("audit row after = %s (%v)", rows[0].After, err)
	}
}

func TestBreakers_ClearWithoutBreakers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := b.hostKey(b.host("h").ID, "k")
	call(b.admin.ClearBreakersWithResponse(b.ctx, &models.ClearBreakersParams{HostKeyID: k.ID})).wantErr(t, http.StatusNotImplemented, "not_implemented", "")
}
