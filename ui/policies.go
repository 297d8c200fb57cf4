package ui

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/rbac"
	gen "github.com/relay-llm/relay/openapi/controlgen"
	relaynull "github.com/relay-llm/relay/openapi/nullable"
)

// Policies: the form shows the models and host keys a policy grants as
// checklists; a save writes the policy, then adds and removes grants to
// match the lists (each grant is its own audited write, as in the API).

// managePolicies: system admins write every policy, team admins their
// team's (the API decides row by row, as for every write).
func managePolicies(p *controlapi.Principal) bool {
	return manageSystem(p) || p.CanAnywhere(rbac.ManageTeam)
}

func (h *Handler) policyKind() *kind {
	k := &kind{slug: "policies", search: "slug or name", title: "Policies", one: "policy", write: managePolicies,
		columns: []column{{Title: "Slug"}, {Title: "Name"}, {Title: "Owner"}, {Title: "Models"}, {Title: "Host keys"}, {Title: "Max wait", Num: true}, {Title: "Priority", Num: true}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		var l gen.ListPolicies200JSONResponse
		if term != "" {
			items, next, err := h.api.SearchPolicies(p.ctx, term, limit, cursor)
			if err != nil {
				return nil, nil, err
			}
			l.Items, l.NextCursor = items, next
		} else {
			resp, err := h.api.ListPolicies(p.ctx, gen.ListPoliciesRequestObject{Params: models.ListPoliciesParams{Limit: &limit, Cursor: cursor}})
			if err != nil {
				return nil, nil, err
			}
			l = resp.(gen.ListPolicies200JSONResponse)
		}
		teams := map[string]string{}
		for _, o := range h.teamOptions(p) {
			teams[o.Value] = o.Label
		}
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			owner := "System"
			if x.TeamID != nil {
				owner = "Team " + teams[x.TeamID.String()]
			}
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: x.Name}, {Text: owner}, {Text: allOr(x.AllModels)}, {Text: allOr(x.AllHostKeys)},
				{Text: strconv.Itoa(int(x.MaxWaitMs)) + " ms", Num: true}, {Text: strconv.Itoa(int(x.Priority)), Num: true}}}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, editing bool) ([]field, error) {
		owner := withHelp(selectOf("team_id", "Owner", v.str("team_id"), withNone("The system", h.teamOptions(p))),
			"A team's policy is usable only in its projects and lists only host keys shared with the team; a system policy is attached by system admins or by the teams it is shared with. The owner never changes.")
		fs := []field{{Name: "slug", Label: "Slug", Kind: "text", Value: v.str("slug"), Required: true}}
		if !editing { // chosen once: the owner never changes
			fs = append(fs, owner)
		}
		return append(fs,
			text("name", "Name", v.str("name")),
			checkbox("all_models", "Grant every model", v.on("all_models")),
			checklist("models", "Models", v.Values["models"], h.modelOptions(p)),
			checkbox("all_host_keys", "May spend every host key", v.on("all_host_keys")),
			checklist("host_keys", "Host keys", v.Values["host_keys"], h.hostKeyOptions(p)),
			selectOf("rate_limit_id", "Rate limit", v.str("rate_limit_id"), withNone("None", h.rateLimitOptions(p))),
			field{Name: "max_wait_ms", Label: "Pacing: longest wait (ms)", Kind: "number", Value: v.str("max_wait_ms"), Help: "How long a request may wait for budget before a 429."},
			number("priority", "Priority", v.str("priority")),
			selectOf("route_strategy", "Routing strategy", v.str("route_strategy"),
				append([]option{{Value: "", Label: "Each model's own"}}, enumOptions("priority", "weighted", "cost", "latency", "least_busy")...)),
			withHelp(selectOf("affinity", "Prompt-cache affinity", v.str("affinity"), enumOptions("key", "binding", "off")),
				"key keeps a session on one host key; binding also on one binding; off spreads requests."),
			checkbox("budget_fallback", "When a budget refuses, use the model's fallbacks", v.on("budget_fallback")),
			withHelp(number("degrade_after_ms", "Degrade after a wait of (ms)", v.str("degrade_after_ms")),
				"A request that would wait longer than this for its rate limit is served by its model's cheaper fallback instead (0: any wait); empty: never."),
			withHelp(number("degrade_below_priority", "Degrade priorities below", v.str("degrade_below_priority")),
				"A request whose priority is below this goes to its model's cheaper fallback instead of waiting; empty: never."),
		), nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.PolicyCreate{Slug: v.str("slug"), Name: v.optStr("name"), AllModels: v.onPtr("all_models"), AllHostKeys: v.onPtr("all_host_keys"),
			RateLimitID: v.optID("rate_limit_id"), MaxWaitMs: v.optInt32("max_wait_ms"), Priority: v.optInt32("priority"),
			RouteStrategy: routeStrategy(v), Affinity: affinity(v), BudgetFallback: v.onPtr("budget_fallback"), TeamID: v.optID("team_id"),
			DegradeAfterMs: v.optInt32("degrade_after_ms"), DegradeBelowPriority: v.optInt32("degrade_below_priority")}
		models, keys := v.ids("models"), v.ids("host_keys")
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/policies", b); err != nil {
			return err
		}
		resp, err := h.api.CreatePolicy(p.ctx, gen.CreatePolicyRequestObject{Body: &b})
		if err != nil {
			return err
		}
		id := resp.(gen.CreatePolicy201JSONResponse).ID
		return h.setGrants(p, id, models, keys)
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		resp, err := h.api.GetPolicy(p.ctx, gen.GetPolicyRequestObject{ID: id})
		if err != nil {
			return nil, err
		}
		x := resp.(gen.GetPolicy200JSONResponse)
		models, keys, err := h.grants(p, id)
		if err != nil {
			return nil, err
		}
		v := url.Values{"slug": {x.Slug}, "team_id": {idStr(x.TeamID)}, "name": {x.Name}, "all_models": {onOff(x.AllModels)}, "all_host_keys": {onOff(x.AllHostKeys)},
			"rate_limit_id": {idStr(x.RateLimitID)}, "max_wait_ms": {strconv.Itoa(int(x.MaxWaitMs))}, "priority": {strconv.Itoa(int(x.Priority))},
			"route_strategy": {string(x.RouteStrategy)}, "affinity": {string(x.Affinity)}, "budget_fallback": {onOff(x.BudgetFallback)},
			"degrade_after_ms": {optNumber(x.DegradeAfterMs)}, "degrade_below_priority": {optNumber(x.DegradeBelowPriority)}}
		for id := range models {
			v.Add("models", id.String())
		}
		for id := range keys {
			v.Add("host_keys", id.String())
		}
		return v, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name := v.str("slug"), v.str("name")
		b := models.PolicyUpdate{Slug: &slug, Name: &name, AllModels: v.onPtr("all_models"), AllHostKeys: v.onPtr("all_host_keys"),
			MaxWaitMs: v.optInt32("max_wait_ms"), Priority: v.optInt32("priority"),
			RouteStrategy: routeStrategy(v), Affinity: affinity(v), BudgetFallback: v.onPtr("budget_fallback")}
		b.RateLimitID = relaynull.FromPointer(v.optID("rate_limit_id"))
		b.DegradeAfterMs = relaynull.FromPointer(v.optInt32("degrade_after_ms"))
		b.DegradeBelowPriority = relaynull.FromPointer(v.optInt32("degrade_below_priority"))
		models, keys := v.ids("models"), v.ids("host_keys")
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/policies/"+id.String(), b); err != nil {
			return err
		}
		if _, err := h.api.UpdatePolicy(p.ctx, gen.UpdatePolicyRequestObject{ID: id, Body: &b}); err != nil {
			return err
		}
		return h.setGrants(p, id, models, keys)
	}
	k.remove = func(p *page, id uuid.UUID) error {
		_, err := h.api.DeletePolicy(p.ctx, gen.DeletePolicyRequestObject{ID: id})
		return err
	}
	return k
}

func withHelp(f field, help string) field {
	f.Help = help
	return f
}

// routeStrategy is the form's policy route strategy ("" keeps the models' own).
func routeStrategy(v *vals) *models.PolicyRouteStrategy {
	s := models.PolicyRouteStrategy(v.str("route_strategy"))
	return &s
}

// affinity is the form's affinity (key when the form has none).
func affinity(v *vals) *models.RouteAffinity {
	a := models.RouteAffinity(v.str("affinity"))
	if a == "" {
		a = models.RouteAffinityKey
	}
	return &a
}

func allOr(all bool) string {
	if all {
		return "all"
	}
	return "listed"
}

// grants reads a policy's model and host-key grants (at most the API's
// largest page each: a policy's grants are few).
func (h *Handler) grants(p *page, id uuid.UUID) (modelIDs, keys map[uuid.UUID]bool, err error) {
	limit := int32(500)
	mr, err := h.api.ListPolicyModelGrants(p.ctx, gen.ListPolicyModelGrantsRequestObject{ID: id, Params: models.ListPolicyModelGrantsParams{Limit: &limit}})
	if err != nil {
		return nil, nil, err
	}
	kr, err := h.api.ListPolicyHostKeyGrants(p.ctx, gen.ListPolicyHostKeyGrantsRequestObject{ID: id, Params: models.ListPolicyHostKeyGrantsParams{Limit: &limit}})
	if err != nil {
		return nil, nil, err
	}
	modelIDs, keys = map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
	for _, g := range mr.(gen.ListPolicyModelGrants200JSONResponse).Items {
		modelIDs[g.ModelID] = true
	}
	for _, g := range kr.(gen.ListPolicyHostKeyGrants200JSONResponse).Items {
		keys[g.HostKeyID] = true
	}
	return modelIDs, keys, nil
}

// setGrants makes a policy's grants the given lists.
func (h *Handler) setGrants(p *page, id uuid.UUID, modelIDs, keys []uuid.UUID) error {
	haveM, haveK, err := h.grants(p, id)
	if err != nil {
		return err
	}
	for _, m := range modelIDs {
		if haveM[m] {
			delete(haveM, m)
			continue
		}
		if _, err := h.api.CreatePolicyModelGrant(p.ctx, gen.CreatePolicyModelGrantRequestObject{ID: id, Body: &models.PolicyModelGrantCreate{ModelID: m}}); err != nil {
			return err
		}
	}
	for m := range haveM {
		if _, err := h.api.DeletePolicyModelGrant(p.ctx, gen.DeletePolicyModelGrantRequestObject{ID: id, ModelID: m}); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if haveK[k] {
			delete(haveK, k)
			continue
		}
		if _, err := h.api.CreatePolicyHostKeyGrant(p.ctx, gen.CreatePolicyHostKeyGrantRequestObject{ID: id, Body: &models.PolicyHostKeyGrantCreate{HostKeyID: k}}); err != nil {
			return err
		}
	}
	for k := range haveK {
		if _, err := h.api.DeletePolicyHostKeyGrant(p.ctx, gen.DeletePolicyHostKeyGrantRequestObject{ID: id, HostKeyID: k}); err != nil {
			return err
		}
	}
	return nil
}
