package controlapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"
	relaynull "github.com/relay-llm/relay/openapi/nullable"

	"github.com/google/uuid"
)

// TestRouteCatalog_ModelStrategyAndFallbacks creates, patches and reads a model's
// strategy and fallback list, and checks every rule with the field at fault.
func TestRouteCatalog_ModelStrategyAndFallbacks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	alt, other := b.model("alt"), b.model("other")
	if alt.Strategy != models.ModelRouteStrategyPriority || alt.Fallbacks == nil || len(alt.Fallbacks) != 0 {
		t.Errorf("defaults: strategy %q, fallbacks %#v", alt.Strategy, alt.Fallbacks)
	}
	m := call(c.CreateModelWithResponse(ctx, models.ModelCreate{
		Name: "main", Strategy: ptr(models.ModelRouteStrategyCost), Fallbacks: &[]uuid.UUID{alt.ID, other.ID},
	})).want(t, http.StatusCreated).JSON201
	if m.Strategy != models.ModelRouteStrategyCost || !slices.Equal(m.Fallbacks, []uuid.UUID{alt.ID, other.ID}) {
		t.Errorf("create = %+v", m)
	}
	upd := call(c.UpdateModelWithResponse(ctx, m.ID, models.ModelUpdate{
		Strategy: ptr(models.ModelRouteStrategyLeastBusy), Fallbacks: &[]uuid.UUID{other.ID},
	})).want(t, http.StatusOK).JSON200
	if upd.Strategy != models.ModelRouteStrategyLeastBusy || !slices.Equal(upd.Fallbacks, []uuid.UUID{other.ID}) {
		t.Errorf("update = %+v", upd)
	}
	// A patch without the fields keeps them.
	upd = call(c.UpdateModelWithResponse(ctx, m.ID, models.ModelUpdate{ContextWindow: ptr[int32](1000)})).want(t, http.StatusOK).JSON200
	if upd.Strategy != models.ModelRouteStrategyLeastBusy || len(upd.Fallbacks) != 1 {
		t.Errorf("unrelated update = %+v", upd)
	}
	if got := call(c.GetModelWithResponse(ctx, m.ID)).want(t, http.StatusOK).JSON200; !slices.Equal(got.Fallbacks, []uuid.UUID{other.ID}) {
		t.Errorf("get = %+v", got)
	}

	emb := call(c.CreateModelWithResponse(ctx, models.ModelCreate{Name: "emb", Kind: ptr(models.ModelKindEmbedding)})).want(t, http.StatusCreated).JSON201
	patch := func(body string) func() (statusCoder, error) {
		return wrap(c.UpdateModelWithBodyWithResponse(ctx, m.ID, "application/json", strings.NewReader(body)))
	}
	for _, tc := range []struct {
		name   string
		call   func() (statusCoder, error)
		status int
		code   string
		field  string
	}{
		{"bad strategy", patch(`{"strategy":"fastest"}`), 400, "invalid_request", "strategy"},
		{"fallback not a uuid", patch(`{"fallbacks":["nope"]}`), 400, "invalid_request", ""},
		{"itself", patch(`{"fallbacks":["` + m.ID.String() + `"]}`), 422, "validation_failed", "fallbacks.0"},
		{"twice", patch(`{"fallbacks":["` + alt.ID.String() + `","` + alt.ID.String() + `"]}`), 422, "validation_failed", "fallbacks.1"},
		{"another kind", patch(`{"fallbacks":["` + emb.ID.String() + `"]}`), 422, "validation_failed", "fallbacks.0"},
		{"no such model", patch(`{"fallbacks":["` + uuid.NewString() + `"]}`), 422, "validation_failed", "fallbacks.0"},
		{"kind change against its own list", patch(`{"kind":"embedding"}`), 422, "validation_failed", "fallbacks.0"},
		{"kind change of a fallback", wrap(c.UpdateModelWithBodyWithResponse(ctx, other.ID, "application/json",
			strings.NewReader(`{"kind":"embedding"}`))), 422, "validation_failed", "fallbacks"},
		{"create with an unknown fallback", wrap(c.CreateModelWithResponse(ctx, models.ModelCreate{Name: "x", Fallbacks: &[]uuid.UUID{uuid.New()}})),
			422, "validation_failed", "fallbacks.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call(tc.call()).wantErr(t, tc.status, tc.code, tc.field)
		})
	}

	// Deleting a fallback takes it out of the list.
	call(c.DeleteModelWithResponse(ctx, other.ID)).want(t, http.StatusNoContent)
	if got := call(c.GetModelWithResponse(ctx, m.ID)).want(t, http.StatusOK).JSON200; len(got.Fallbacks) != 0 {
		t.Errorf("fallbacks after deleting the model = %v", got.Fallbacks)
	}
}

func TestRouteCatalog_BindingWeight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	h, m := b.host("h"), b.model("m")
	bd := call(c.CreateBindingWithResponse(ctx, models.BindingCreate{
		ModelID: m.ID, HostID: h.ID, Shape: models.ShapeOpenai, UpstreamModel: "up",
	})).want(t, http.StatusCreated).JSON201
	if bd.Weight != 1 {
		t.Errorf("default weight %d", bd.Weight)
	}
	upd := call(c.UpdateBindingWithResponse(ctx, bd.ID, models.BindingUpdate{Weight: ptr[int32](30)})).want(t, http.StatusOK).JSON200
	if upd.Weight != 30 || call(c.GetBindingWithResponse(ctx, bd.ID)).want(t, http.StatusOK).JSON200.Weight != 30 {
		t.Errorf("weight after update %d", upd.Weight)
	}
	call(c.UpdateBindingWithResponse(ctx, bd.ID, models.BindingUpdate{Weight: ptr[int32](0)})).wantErr(t, http.StatusBadRequest, "invalid_request", "weight")
	h2 := b.host("h2")
	call(c.CreateBindingWithResponse(ctx, models.BindingCreate{
		ModelID: m.ID, HostID: h2.ID, Shape: models.ShapeOpenai, UpstreamModel: "up", Weight: ptr[int32](-2),
	})).wantErr(t, http.StatusBadRequest, "invalid_request", "weight")
}

func TestRouteCatalog_PolicyFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	p := b.policy("plain")
	if p.RouteStrategy != models.PolicyRouteStrategyEmpty || p.Affinity != models.RouteAffinityKey || p.BudgetFallback {
		t.Errorf("defaults = %q %q %v", p.RouteStrategy, p.Affinity, p.BudgetFallback)
	}
	p = *call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{
		Slug: "routed", RouteStrategy: ptr(models.PolicyRouteStrategyLatency), Affinity: ptr(models.RouteAffinityBinding), BudgetFallback: ptr(true),
	})).want(t, http.StatusCreated).JSON201
	if p.RouteStrategy != models.PolicyRouteStrategyLatency || p.Affinity != models.RouteAffinityBinding || !p.BudgetFallback {
		t.Errorf("create = %+v", p)
	}
	upd := call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{
		RouteStrategy: ptr(models.PolicyRouteStrategyEmpty), Affinity: ptr(models.RouteAffinityOff), BudgetFallback: ptr(false),
	})).want(t, http.StatusOK).JSON200
	if upd.RouteStrategy != "" || upd.Affinity != models.RouteAffinityOff || upd.BudgetFallback {
		t.Errorf("update = %+v", upd)
	}
	if got := call(c.GetPolicyWithResponse(ctx, p.ID)).want(t, http.StatusOK).JSON200; got.Affinity != models.RouteAffinityOff {
		t.Errorf("get = %+v", got)
	}
	for field, body := range map[string]string{
		"affinity":               `{"affinity":"sticky"}`,
		"route_strategy":         `{"route_strategy":"fastest"}`,
		"budget_fallback":        `{"budget_fallback":"yes"}`,
		"degrade_after_ms":       `{"degrade_after_ms":-1}`,
		"degrade_below_priority": `{"degrade_below_priority":"low"}`,
	} {
		call(c.UpdatePolicyWithBodyWithResponse(ctx, p.ID, "application/json", strings.NewReader(body))).
			wantErr(t, http.StatusBadRequest, "invalid_request", field)
	}
}

func TestRouteCatalog_PolicyDegrade(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	if p := b.policy("plain"); p.DegradeAfterMs != nil || p.DegradeBelowPriority != nil {
		t.Errorf("defaults = %v %v, want null", p.DegradeAfterMs, p.DegradeBelowPriority)
	}
	p := *call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{
		Slug: "degrading", DegradeAfterMs: ptr[int32](0), DegradeBelowPriority: ptr[int32](-3),
	})).want(t, http.StatusCreated).JSON201
	if p.DegradeAfterMs == nil || *p.DegradeAfterMs != 0 || p.DegradeBelowPriority == nil || *p.DegradeBelowPriority != -3 {
		t.Fatalf("create = %v %v, want 0 -3", p.DegradeAfterMs, p.DegradeBelowPriority)
	}
	upd := call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{Name: ptr("renamed")})).want(t, http.StatusOK).JSON200
	if upd.DegradeAfterMs == nil || *upd.DegradeAfterMs != 0 {
		t.Errorf("an update without the fields changed degrade_after_ms: %v", upd.DegradeAfterMs)
	}
	upd = call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{
		DegradeAfterMs: relaynull.Value[int32](1500), DegradeBelowPriority: relaynull.Null[int32](),
	})).want(t, http.StatusOK).JSON200
	if upd.DegradeAfterMs == nil || *upd.DegradeAfterMs != 1500 || upd.DegradeBelowPriority != nil {
		t.Errorf("after 1500 and null: %v %v", upd.DegradeAfterMs, upd.DegradeBelowPriority)
	}
	call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "bad", DegradeAfterMs: ptr[int32](-1)})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "degrade_after_ms")
}
