package ui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/rbac"
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
		l, err := listOrSearch(p, term, models.ListPoliciesParams{Limit: &limit, Cursor: cursor}, h.svc.ListPolicies, h.svc.SearchPolicies)
		if err != nil {
			return nil, nil, err
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
			withHelp(checkbox("cache_enabled", "Response cache", v.on("cache_enabled")),
				"Answers identical requests from the cache (docs/caching.md); turning it off drops the settings below."),
			checklist("cache_models", "Cached models (none ticked: every model the policy grants)", v.Values["cache_models"], h.modelOptions(p)),
			withHelp(selectOf("cache_scope", "Cache scope", v.str("cache_scope"), enumOptions("project", "relay_key", "header")),
				"Who shares an entry within the project."),
			withHelp(text("cache_scope_header", "Cache scope header", v.str("cache_scope_header")), "With scope header: the request header whose value narrows the scope."),
			withHelp(number("cache_ttl_seconds", "Cache entry lifetime (s)", v.str("cache_ttl_seconds")), "Empty or 0: 3600."),
			withHelp(number("cache_max_entry_bytes", "Largest cached answer (bytes)", v.str("cache_max_entry_bytes")), "Empty or 0: 1048576."),
			checkbox("cache_nondeterministic", "Also cache sampled requests and answers that call tools", v.on("cache_nondeterministic")),
			withHelp(field{Name: "guardrails", Label: "Guardrails (JSON)", Kind: "textarea", Value: v.Get("guardrails")},
				`The policy's guardrails as the API takes them (docs/guardrails.md), e.g. {"rules":[{"name":"pii","stage":"both","action":"redact","detectors":["email","card"]}],"max_prompt_bytes":0}; empty: none.`),
			withHelp(text("mcp_grants", "MCP grants", v.str("mcp_grants")),
				"MCP tools the policy grants, separated by commas: <server>, <server>__<tool> or globs with * (docs/mcp.md#grants)."),
			checkbox("mcp_require_approval", "Withhold granted tools no operator has approved", v.on("mcp_require_approval")),
		), nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.PolicyCreate{Slug: v.str("slug"), Name: v.optStr("name"), AllModels: v.onPtr("all_models"), AllHostKeys: v.onPtr("all_host_keys"),
			RateLimitID: v.optID("rate_limit_id"), MaxWaitMs: v.optInt32("max_wait_ms"), Priority: v.optInt32("priority"),
			RouteStrategy: routeStrategy(v), Affinity: affinity(v), BudgetFallback: v.onPtr("budget_fallback"), TeamID: v.optID("team_id"),
			DegradeAfterMs: v.optInt32("degrade_after_ms"), DegradeBelowPriority: v.optInt32("degrade_below_priority"),
			ResponseCache: responseCache(v), Guardrails: guardrails(v, false)}
		models, keys := v.ids("models"), v.ids("host_keys")
		mcp := mcpGrants(v)
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/policies", b); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/policies/"+uuid.Nil.String()+"/mcp", mcp); err != nil {
			return err
		}
		created, err := h.svc.CreatePolicy(p.ctx, &b)
		if err != nil {
			return err
		}
		if err := h.setMCPGrants(p, created.ID, models0(), mcp); err != nil {
			return err
		}
		return h.setGrants(p, created.ID, models, keys)
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetPolicy(p.ctx, id)
		if err != nil {
			return nil, err
		}
		models, keys, err := h.grants(p, id)
		if err != nil {
			return nil, err
		}
		v := url.Values{"slug": {x.Slug}, "team_id": {idStr(x.TeamID)}, "name": {x.Name}, "all_models": {onOff(x.AllModels)}, "all_host_keys": {onOff(x.AllHostKeys)},
			"rate_limit_id": {idStr(x.RateLimitID)}, "max_wait_ms": {strconv.Itoa(int(x.MaxWaitMs))}, "priority": {strconv.Itoa(int(x.Priority))},
			"route_strategy": {string(x.RouteStrategy)}, "affinity": {string(x.Affinity)}, "budget_fallback": {onOff(x.BudgetFallback)},
			"degrade_after_ms": {optNumber(x.DegradeAfterMs)}, "degrade_below_priority": {optNumber(x.DegradeBelowPriority)}}
		cacheValues(v, x.ResponseCache)
		if g := x.Guardrails; g != nil && (len(g.Rules) > 0 || (g.MaxPromptBytes != nil && *g.MaxPromptBytes > 0)) {
			j, _ := json.MarshalIndent(g, "", "  ") // a decoded value encodes
			v.Set("guardrails", string(j))
		}
		if x.McpGrants != nil {
			v.Set("mcp_grants", strings.Join(*x.McpGrants, ", "))
		}
		if x.McpRequireApproval != nil {
			v.Set("mcp_require_approval", onOff(*x.McpRequireApproval))
		}
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
		b.ResponseCache, b.Guardrails = responseCache(v), guardrails(v, true)
		models, keys := v.ids("models"), v.ids("host_keys")
		mcp := mcpGrants(v)
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/policies/"+id.String(), b); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/policies/"+id.String()+"/mcp", mcp); err != nil {
			return err
		}
		updated, err := h.svc.UpdatePolicy(p.ctx, id, &b)
		if err != nil {
			return err
		}
		if err := h.setMCPGrants(p, id, policyOf(updated), mcp); err != nil {
			return err
		}
		return h.setGrants(p, id, models, keys)
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeletePolicy(p.ctx, id)
		return err
	}
	return k
}

// responseCache is the form's response cache: off, or on with its settings.
func responseCache(v *vals) *models.ResponseCache {
	if !v.on("cache_enabled") {
		return &models.ResponseCache{Enabled: false}
	}
	c := &models.ResponseCache{Enabled: true, Nondeterministic: v.onPtr("cache_nondeterministic")}
	if ms := v.ids("cache_models"); len(ms) > 0 {
		c.Models = &ms
	}
	if s := v.str("cache_scope"); s != "" {
		sc := models.ResponseCacheScope(s)
		c.Scope = &sc
	}
	c.ScopeHeader = v.optStr("cache_scope_header")
	if n := v.optInt32("cache_ttl_seconds"); n != nil {
		i := int(*n)
		c.TTLSeconds = &i
	}
	if n := v.optInt32("cache_max_entry_bytes"); n != nil {
		i := int(*n)
		c.MaxEntryBytes = &i
	}
	return c
}

// cacheValues puts a policy's response cache into the form's values.
func cacheValues(v url.Values, c *models.ResponseCache) {
	v.Set("cache_scope", "project")
	if c == nil || !c.Enabled {
		return
	}
	v.Set("cache_enabled", "on")
	if c.Models != nil {
		for _, m := range *c.Models {
			v.Add("cache_models", m.String())
		}
	}
	if c.Scope != nil {
		v.Set("cache_scope", string(*c.Scope))
	}
	if c.ScopeHeader != nil {
		v.Set("cache_scope_header", *c.ScopeHeader)
	}
	if c.TTLSeconds != nil && *c.TTLSeconds > 0 {
		v.Set("cache_ttl_seconds", strconv.Itoa(*c.TTLSeconds))
	}
	if c.MaxEntryBytes != nil && *c.MaxEntryBytes > 0 {
		v.Set("cache_max_entry_bytes", strconv.Itoa(*c.MaxEntryBytes))
	}
	if c.Nondeterministic != nil {
		v.Set("cache_nondeterministic", onOff(*c.Nondeterministic))
	}
}

// guardrails reads the form's guardrails JSON: nil when empty on a create,
// no rules (which removes them) when empty on an edit. The API's own
// validation (p.check) judges the rest.
func guardrails(v *vals, editing bool) *models.Guardrails {
	s := strings.TrimSpace(v.Get("guardrails"))
	if s == "" {
		if editing {
			return &models.Guardrails{Rules: []models.GuardrailRule{}}
		}
		return nil
	}
	var g models.Guardrails
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		v.errs["guardrails"] = "this is not a guardrails object: " + err.Error()
		return nil
	}
	if g.Rules == nil {
		g.Rules = []models.GuardrailRule{}
	}
	return &g
}

// mcpGrants is the form's MCP grants as setPolicyMcpGrants takes them.
func mcpGrants(v *vals) models.PolicyMcpGrants {
	g := models.PolicyMcpGrants{Grants: []string{}, RequireApproval: v.onPtr("mcp_require_approval")}
	g.Grants = append(g.Grants, strings.FieldsFunc(v.str("mcp_grants"), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })...)
	return g
}

// models0 is a policy with no MCP grants (a new one).
func models0() models.Policy { return models.Policy{} }

func policyOf(x models.Policy) models.Policy { return models.Policy(x) }

// setMCPGrants writes the policy's MCP grants when they differ from cur's
// (each write is audited; an unchanged form writes nothing).
func (h *Handler) setMCPGrants(p *page, id uuid.UUID, cur models.Policy, want models.PolicyMcpGrants) error {
	have := []string{}
	if cur.McpGrants != nil {
		have = *cur.McpGrants
	}
	req := cur.McpRequireApproval != nil && *cur.McpRequireApproval
	if slices.Equal(have, want.Grants) && req == (want.RequireApproval != nil && *want.RequireApproval) {
		return nil
	}
	_, err := h.svc.SetPolicyMcpGrants(p.ctx, id, &want)
	return err
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
	mr, err := h.svc.ListPolicyModelGrants(p.ctx, id, models.ListPolicyModelGrantsParams{Limit: &limit})
	if err != nil {
		return nil, nil, err
	}
	kr, err := h.svc.ListPolicyHostKeyGrants(p.ctx, id, models.ListPolicyHostKeyGrantsParams{Limit: &limit})
	if err != nil {
		return nil, nil, err
	}
	modelIDs, keys = map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
	for _, g := range mr.Items {
		modelIDs[g.ModelID] = true
	}
	for _, g := range kr.Items {
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
		if _, err := h.svc.CreatePolicyModelGrant(p.ctx, id, &models.PolicyModelGrantCreate{ModelID: m}); err != nil {
			return err
		}
	}
	for m := range haveM {
		if err := h.svc.DeletePolicyModelGrant(p.ctx, id, m); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if haveK[k] {
			delete(haveK, k)
			continue
		}
		if _, err := h.svc.CreatePolicyHostKeyGrant(p.ctx, id, &models.PolicyHostKeyGrantCreate{HostKeyID: k}); err != nil {
			return err
		}
	}
	for k := range haveK {
		if err := h.svc.DeletePolicyHostKeyGrant(p.ctx, id, k); err != nil {
			return err
		}
	}
	return nil
}
