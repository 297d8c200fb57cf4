package ui

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/profile"
	"github.com/relay-llm/relay/internal/rbac"
	relaynull "github.com/relay-llm/relay/openapi/nullable"
)

// The catalog kinds: hosts, models, bindings, host keys, rate limits and
// policies. Only a system-wide admin changes them (rbac.ManageSystem).

func manageSystem(p *controlapi.Principal) bool { return p.Can(rbac.ManageSystem, rbac.System()) }

// check validates a body against the API's description, as the API does.
func (p *page) check(h *Handler, method, path string, body any) error {
	return h.api.Check(p.ctx, method, path, body)
}

func enabled(on bool) cell {
	if on {
		return cell{Text: "enabled", Badge: "ok"}
	}
	return cell{Text: "disabled", Badge: "warn"}
}

func (h *Handler) catalog() []*kind {
	return []*kind{
		h.hostKind(), h.modelKind(), h.bindingKind(), h.hostKeyKind(), h.rateLimitKind(), h.policyKind(), h.mcpServerKind(),
		h.teamKind(), h.projectKind(), h.serviceAccountKind(), h.relayKeyKind(), h.policyBindingKind(), h.budgetKind(),
		h.userKind(), h.groupKind(), h.roleBindingKind(),
	}
}

func (h *Handler) hostKind() *kind {
	k := &kind{slug: "hosts", search: "slug, name or base URL", title: "Hosts", one: "host", write: manageSystem,
		columns: []column{{Title: "Slug"}, {Title: "Name"}, {Title: "Provider"}, {Title: "Base URL"}, {Title: "State"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := listOrSearch(p, term, models.ListHostsParams{Limit: &limit, Cursor: cursor}, h.svc.ListHosts, h.svc.SearchHosts)
		if err != nil {
			return nil, nil, err
		}
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: x.Name}, {Text: string(x.Provider)}, {Text: x.BaseURL, Mono: true}, enabled(x.Enabled)}}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, _ bool) ([]field, error) {
		en := v.on("enabled") || v.Values.Get("slug") == ""
		return []field{
			{Name: "slug", Label: "Slug", Kind: "text", Value: v.str("slug"), Required: true, Help: "Lower case letters, digits and dashes; requests pin a host as model@slug."},
			text("name", "Name", v.str("name")),
			selectOf("provider", "Provider", v.str("provider"), enumOptions("openai", "anthropic", "google", "custom")),
			{Name: "base_url", Label: "Base URL", Kind: "text", Value: v.str("base_url"), Required: true, Help: "For example https://api.openai.com/v1"},
			selectOf("profile", "Profile", v.str("profile"), profileOptions()),
			{Name: "profile_params", Label: "Profile parameters", Kind: "text", Value: v.str("profile_params"), Help: "The profile's settings as name=value, comma-separated (e.g. api_version=2024-10-21, tenant_id=…); docs/profiles.md lists each profile's. Secrets go in host keys."},
			{Name: "forward_headers", Label: "Forwarded headers", Kind: "text", Value: v.str("forward_headers"), Help: "Callers' headers this host gets beyond its shape's allow-list, comma-separated (e.g. x-app). Credential and billing headers are refused."},
			{Name: "breaker_server_failures", Label: "Breaker: server errors", Kind: "number", Value: v.str("breaker_server_failures"), Help: "Server errors (5xx, 529, 408) in a row that open a breaker of one of this host's keys, 1 to 1000; empty takes RELAY_BREAKER_SERVER_FAILURES."},
			{Name: "breaker_network_failures", Label: "Breaker: network failures", Kind: "number", Value: v.str("breaker_network_failures"), Help: "Network failures (connect, reset, timeout) in a row that open a breaker, 1 to 1000; empty takes RELAY_BREAKER_NETWORK_FAILURES."},
			checkbox("enabled", "Enabled", en),
		}, nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.HostCreate{Slug: v.str("slug"), Name: v.optStr("name"), Provider: models.Provider(v.str("provider")), BaseURL: v.str("base_url"), Enabled: v.onPtr("enabled"),
			BreakerServerFailures: v.optInt32("breaker_server_failures"), BreakerNetworkFailures: v.optInt32("breaker_network_failures")}
		if fwd := headerList(v.str("forward_headers")); len(fwd) > 0 {
			b.ForwardHeaders = &fwd
		}
		prof, params := v.str("profile"), paramList(v.str("profile_params"))
		b.Profile, b.ProfileParams = &prof, &params
		if err := p.check(h, http.MethodPost, "/api/hosts", b); err != nil {
			return err
		}
		_, err := h.svc.CreateHost(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetHost(p.ctx, id)
		if err != nil {
			return nil, err
		}
		return url.Values{"slug": {x.Slug}, "name": {x.Name}, "provider": {string(x.Provider)}, "base_url": {x.BaseURL}, "enabled": {onOff(x.Enabled)}, "forward_headers": {strings.Join(x.ForwardHeaders, ", ")},
			"profile": {x.Profile}, "profile_params": {paramText(x.ProfileParams)},
			"breaker_server_failures": {optNumber(x.BreakerServerFailures)}, "breaker_network_failures": {optNumber(x.BreakerNetworkFailures)}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name, base, prov := v.str("slug"), v.str("name"), v.str("base_url"), models.Provider(v.str("provider"))
		fwd := headerList(v.str("forward_headers"))
		prof, params := v.str("profile"), paramList(v.str("profile_params"))
		b := models.HostUpdate{Slug: &slug, Name: &name, BaseURL: &base, Provider: &prov, Enabled: v.onPtr("enabled"), ForwardHeaders: &fwd,
			Profile: &prof, ProfileParams: &params,
			BreakerServerFailures:  relaynull.FromPointer(v.optInt32("breaker_server_failures")),
			BreakerNetworkFailures: relaynull.FromPointer(v.optInt32("breaker_network_failures"))}
		if err := p.check(h, http.MethodPatch, "/api/hosts/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateHost(p.ctx, id, &b)
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteHost(p.ctx, id)
		return err
	}
	return k
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return ""
}

func (h *Handler) modelKind() *kind {
	k := &kind{slug: "models", search: "name or provider", title: "Models", one: "model", write: manageSystem,
		columns: []column{{Title: "Name"}, {Title: "Provider"}, {Title: "Kind"}, {Title: "Context", Num: true}, {Title: "Max output", Num: true}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := listOrSearch(p, term, models.ListModelsParams{Limit: &limit, Cursor: cursor}, h.svc.ListModels, h.svc.SearchModels)
		if err != nil {
			return nil, nil, err
		}
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Name, Mono: true}, {Text: x.Provider}, {Text: string(x.Kind)},
				{Text: strconv.Itoa(int(x.ContextWindow)), Num: true}, {Text: strconv.Itoa(int(x.MaxOutputTokens)), Num: true}}}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, _ bool) ([]field, error) {
		return []field{
			{Name: "name", Label: "Name", Kind: "text", Value: v.str("name"), Required: true, Help: "What callers send as model."},
			text("provider", "Provider", v.str("provider")),
			selectOf("kind", "Kind", v.str("kind"), enumOptions("chat", "embedding", "image", "audio", "moderation", "rerank")),
			number("context_window", "Context window (tokens)", v.str("context_window")),
			number("max_output_tokens", "Max output tokens", v.str("max_output_tokens")),
			checkbox("supports_tools", "Tools", v.on("supports_tools")),
			checkbox("supports_vision", "Vision", v.on("supports_vision")),
			checkbox("supports_json", "JSON / structured output", v.on("supports_json")),
			checkbox("supports_thinking", "Thinking", v.on("supports_thinking")),
			selectOf("strategy", "Routing strategy", v.str("strategy"), enumOptions("priority", "weighted", "cost", "latency", "least_busy")),
			{Name: "fallbacks", Label: "Fallback models", Kind: "text", Value: v.str("fallbacks"),
				Help: "Model names, in order, separated by commas: tried when every binding of this model fails before the first byte."},
		}, nil
	}
	body := func(p *page, v *vals) models.ModelUpdate {
		name, prov, kd := v.str("name"), v.str("provider"), models.ModelKind(v.str("kind"))
		strategy := models.ModelRouteStrategy(v.str("strategy"))
		if strategy == "" {
			strategy = models.ModelRouteStrategyPriority
		}
		fallbacks := h.modelIDs(p, v, "fallbacks")
		return models.ModelUpdate{Name: &name, Provider: &prov, Kind: &kd, ContextWindow: v.optInt32("context_window"), MaxOutputTokens: v.optInt32("max_output_tokens"),
			SupportsTools: v.onPtr("supports_tools"), SupportsVision: v.onPtr("supports_vision"), SupportsJSON: v.onPtr("supports_json"), SupportsThinking: v.onPtr("supports_thinking"),
			Strategy: &strategy, Fallbacks: &fallbacks}
	}
	k.create = func(p *page, v *vals) error {
		u := body(p, v)
		if err := v.err(); err != nil {
			return err
		}
		b := models.ModelCreate{Name: *u.Name, Provider: v.optStr("provider"), Kind: u.Kind, ContextWindow: u.ContextWindow, MaxOutputTokens: u.MaxOutputTokens,
			SupportsTools: u.SupportsTools, SupportsVision: u.SupportsVision, SupportsJSON: u.SupportsJSON, SupportsThinking: u.SupportsThinking,
			Strategy: u.Strategy, Fallbacks: u.Fallbacks}
		if err := p.check(h, http.MethodPost, "/api/models", b); err != nil {
			return fallbackFields(http.MethodPost, err)
		}
		_, err := h.svc.CreateModel(p.ctx, &b)
		return fallbackFields(http.MethodPost, err)
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetModel(p.ctx, id)
		if err != nil {
			return nil, err
		}
		names := labels(h.modelOptions(p))
		fallbacks := make([]string, len(x.Fallbacks))
		for i, f := range x.Fallbacks {
			fallbacks[i] = names.of(f)
		}
		return url.Values{"name": {x.Name}, "provider": {x.Provider}, "kind": {string(x.Kind)},
			"context_window": {strconv.Itoa(int(x.ContextWindow))}, "max_output_tokens": {strconv.Itoa(int(x.MaxOutputTokens))},
			"supports_tools": {onOff(x.SupportsTools)}, "supports_vision": {onOff(x.SupportsVision)},
			"supports_json": {onOff(x.SupportsJSON)}, "supports_thinking": {onOff(x.SupportsThinking)},
			"strategy": {string(x.Strategy)}, "fallbacks": {strings.Join(fallbacks, ", ")}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		b := body(p, v)
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/models/"+id.String(), b); err != nil {
			return fallbackFields(http.MethodPatch, err)
		}
		_, err := h.svc.UpdateModel(p.ctx, id, &b)
		return fallbackFields(http.MethodPatch, err)
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteModel(p.ctx, id)
		return err
	}
	return k
}

// fallbackFields moves the API's messages about fallbacks.N to the form's
// one fallbacks field.
func fallbackFields(method string, err error) error {
	if err == nil {
		return nil
	}
	pr := explain(method, err)
	moved := false
	for f, m := range pr.Fields {
		if strings.HasPrefix(f, "fallbacks.") {
			delete(pr.Fields, f)
			pr.Fields["fallbacks"] = m
			moved = true
		}
	}
	if !moved {
		return err
	}
	return &formError{pr}
}

// modelIDs resolves a field of model names separated by commas, in order;
// an unknown name marks the field.
func (h *Handler) modelIDs(p *page, v *vals, name string) []uuid.UUID {
	ids := []uuid.UUID{}
	raw := v.str(name)
	if raw == "" {
		return ids
	}
	byName := map[string]string{}
	for _, o := range h.modelOptions(p) {
		byName[o.Label] = o.Value
	}
	for _, n := range strings.Split(raw, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		id, err := uuid.Parse(byName[n])
		if err != nil {
			v.errs[name] = "no model named " + n
			return ids
		}
		ids = append(ids, id)
	}
	return ids
}

func (h *Handler) bindingKind() *kind {
	k := &kind{slug: "bindings", title: "Bindings", one: "binding", write: manageSystem,
		columns: []column{{Title: "Model"}, {Title: "Host"}, {Title: "Shape"}, {Title: "Upstream model"}, {Title: "Input /M", Num: true}, {Title: "Output /M", Num: true}, {Title: "Order", Num: true}, {Title: "State"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := h.svc.ListBindings(p.ctx, models.ListBindingsParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		models, hosts := labels(h.modelOptions(p)), labels(h.hostOptions(p))
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: models.of(x.ModelID), Mono: true}, {Text: hosts.of(x.HostID), Mono: true}, {Text: string(x.Shape)},
				{Text: x.UpstreamModel, Mono: true}, {Text: price(x.InputPrice), Num: true}, {Text: price(x.OutputPrice), Num: true},
				{Text: strconv.Itoa(int(x.Position)), Num: true}, enabled(x.Enabled)}}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, editing bool) ([]field, error) {
		fs := []field{}
		if !editing {
			fs = append(fs, selectOf("model_id", "Model", v.str("model_id"), withNone("Choose a model", h.modelOptions(p))),
				selectOf("host_id", "Host", v.str("host_id"), withNone("Choose a host", h.hostOptions(p))))
		}
		return append(fs,
			selectOf("shape", "Shape", v.str("shape"), enumOptions("openai", "openai_responses", "anthropic", "gemini", "bedrock_converse")),
			field{Name: "upstream_model", Label: "Upstream model", Kind: "text", Value: v.str("upstream_model"), Required: true, Help: "The model name the host knows."},
			field{Name: "input_price", Label: "Input price per million tokens", Kind: "text", Value: v.str("input_price"), Help: "In your currency, e.g. 2.50"},
			text("output_price", "Output price per million tokens", v.str("output_price")),
			text("cached_input_price", "Cached input price per million tokens", v.str("cached_input_price")),
			number("position", "Order", v.str("position")),
			field{Name: "weight", Label: "Weight", Kind: "number", Value: v.str("weight"), Help: "Share of the model's traffic under the weighted strategy (1 when empty)."},
			checkbox("enabled", "Enabled", v.on("enabled") || v.Values.Get("upstream_model") == ""),
		), nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.BindingCreate{ModelID: v.id("model_id", "model"), HostID: v.id("host_id", "host"), Shape: models.Shape(v.str("shape")), UpstreamModel: v.str("upstream_model"),
			InputPrice: v.optPrice("input_price"), OutputPrice: v.optPrice("output_price"), CachedInputPrice: v.optPrice("cached_input_price"),
			Position: v.optInt32("position"), Weight: v.optInt32("weight"), Enabled: v.onPtr("enabled")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/bindings", b); err != nil {
			return err
		}
		_, err := h.svc.CreateBinding(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetBinding(p.ctx, id)
		if err != nil {
			return nil, err
		}
		return url.Values{"shape": {string(x.Shape)}, "upstream_model": {x.UpstreamModel}, "input_price": {price(x.InputPrice)},
			"output_price": {price(x.OutputPrice)}, "cached_input_price": {price(x.CachedInputPrice)},
			"position": {strconv.Itoa(int(x.Position))}, "weight": {strconv.Itoa(int(x.Weight))}, "enabled": {onOff(x.Enabled)}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		shape, up := models.Shape(v.str("shape")), v.str("upstream_model")
		b := models.BindingUpdate{Shape: &shape, UpstreamModel: &up, InputPrice: v.optPrice("input_price"), OutputPrice: v.optPrice("output_price"),
			CachedInputPrice: v.optPrice("cached_input_price"), Position: v.optInt32("position"), Weight: v.optInt32("weight"), Enabled: v.onPtr("enabled")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/bindings/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateBinding(p.ctx, id, &b)
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteBinding(p.ctx, id)
		return err
	}
	return k
}

func (h *Handler) hostKeyKind() *kind {
	k := &kind{slug: "host-keys", title: "Host keys", one: "host key", write: manageSystem,
		columns: []column{{Title: "Slug"}, {Title: "Host"}, {Title: "Secret"}, {Title: "Version", Num: true}, {Title: "Order", Num: true}, {Title: "State"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := h.svc.ListHostKeys(p.ctx, models.ListHostKeysParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		hosts := labels(h.hostOptions(p))
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			secret := "sealed"
			if x.SecretRef != nil {
				secret = *x.SecretRef
			}
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: hosts.of(x.HostID), Mono: true}, {Text: secret, Mono: true},
				{Text: strconv.Itoa(int(x.SecretVersion)), Num: true}, {Text: strconv.Itoa(int(x.Position)), Num: true}, enabled(x.Enabled)}}
			if manageSystem(p.who) {
				rows[i].Actions = []rowAction{{Href: "/host-keys/" + x.ID.String() + "/test", Label: "Test"}}
			}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, editing bool) ([]field, error) {
		fs := []field{}
		if !editing {
			fs = append(fs, selectOf("host_id", "Host", v.str("host_id"), withNone("Choose a host", h.hostOptions(p))))
		}
		help := "Write-only: stored encrypted under RELAY_MASTER_KEY and never shown again."
		if editing {
			help = "Write-only: leave empty to keep the stored secret."
		}
		return append(fs,
			field{Name: "slug", Label: "Slug", Kind: "text", Value: v.str("slug"), Required: true},
			field{Name: "secret", Label: "Secret", Kind: "secret", Help: help},
			field{Name: "secret_ref", Label: "Or an environment variable", Kind: "text", Value: v.str("secret_ref"), Help: "env:OPENAI_API_KEY — give this or a secret, not both."},
			selectOf("tier_rate_limit_id", "Tier rate limit", v.str("tier_rate_limit_id"), withNone("None", h.rateLimitOptions(p))),
			number("position", "Order", v.str("position")),
			checkbox("enabled", "Enabled", v.on("enabled") || v.Values.Get("slug") == ""),
		), nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.HostKeyCreate{HostID: v.id("host_id", "host"), Slug: v.str("slug"), Secret: v.optStr("secret"), SecretRef: v.optStr("secret_ref"),
			TierRateLimitID: v.optID("tier_rate_limit_id"), Position: v.optInt32("position"), Enabled: v.onPtr("enabled")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/host-keys", b); err != nil {
			return err
		}
		_, err := h.svc.CreateHostKey(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetHostKey(p.ctx, id)
		if err != nil {
			return nil, err
		}
		v := url.Values{"slug": {x.Slug}, "position": {strconv.Itoa(int(x.Position))}, "enabled": {onOff(x.Enabled)}, "tier_rate_limit_id": {idStr(x.TierRateLimitID)}}
		if x.SecretRef != nil {
			v.Set("secret_ref", *x.SecretRef)
		}
		return v, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug := v.str("slug")
		b := models.HostKeyUpdate{Slug: &slug, Secret: v.optStr("secret"), Position: v.optInt32("position"), Enabled: v.onPtr("enabled")}
		if b.Secret == nil {
			b.SecretRef = v.optStr("secret_ref")
		}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/host-keys/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateHostKey(p.ctx, id, &b)
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteHostKey(p.ctx, id)
		return err
	}
	return k
}

func (h *Handler) rateLimitKind() *kind {
	k := &kind{slug: "rate-limits", title: "Rate limits", one: "rate limit", write: manageSystem,
		columns: []column{{Title: "Slug"}, {Title: "Name"}, {Title: "Rules", Num: true}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := h.svc.ListRateLimits(p.ctx, models.ListRateLimitsParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: x.Name}, {Text: strconv.Itoa(len(x.Rules)), Num: true}}}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, _ bool) ([]field, error) {
		fs := []field{
			{Name: "slug", Label: "Slug", Kind: "text", Value: v.str("slug"), Required: true, Help: "Policies and host keys name a rate limit by this."},
			text("name", "Name", v.str("name")),
		}
		for i := range ruleSlots(v) {
			n := "rule" + itoa(i) + "_"
			fs = append(fs,
				selectOf(n+"meter", "Rule "+itoa(i+1)+": meter", v.str(n+"meter"), withNone("No rule", enumOptions("requests", "input_tokens", "output_tokens", "total_tokens", "concurrency"))),
				number(n+"amount", "Rule "+itoa(i+1)+": amount per window (at once, for concurrency)", v.str(n+"amount")),
				number(n+"window", "Rule "+itoa(i+1)+": window in seconds", v.str(n+"window")),
				checkbox(n+"per_principal", "Rule "+itoa(i+1)+": a cap for each relay key or user", v.on(n+"per_principal")))
		}
		return fs, nil
	}
	k.create = func(p *page, v *vals) error {
		rules, slots := v.rules()
		b := models.RateLimitCreate{Slug: v.str("slug"), Name: v.optStr("name"), Rules: &rules}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/rate-limits", b); err != nil {
			return ruleFields(err, slots)
		}
		_, err := h.svc.CreateRateLimit(p.ctx, &b)
		return ruleFields(err, slots)
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetRateLimit(p.ctx, id)
		if err != nil {
			return nil, err
		}
		out := url.Values{"slug": {x.Slug}, "name": {x.Name}}
		for i, r := range x.Rules {
			n := "rule" + itoa(i) + "_"
			out.Set(n+"meter", string(r.Meter))
			out.Set(n+"amount", strconv.FormatInt(r.Amount, 10))
			out.Set(n+"window", strconv.Itoa(int(r.WindowSeconds)))
			out.Set(n+"per_principal", onOff(r.PerPrincipal))
		}
		return out, nil
	}
	// edit saves the slug and name, then makes the stored rules match the
	// form's, slot by slot in the stored order: a cleared slot deletes its
	// rule, a filled one past the stored rules adds one.
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name := v.str("slug"), v.str("name")
		rules, slots := v.rules()
		if err := v.err(); err != nil {
			return err
		}
		b := models.RateLimitUpdate{Slug: &slug, Name: &name}
		if err := p.check(h, http.MethodPatch, "/api/rate-limits/"+id.String(), b); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/rate-limits", models.RateLimitCreate{Slug: slug, Rules: &rules}); err != nil {
			return ruleFields(err, slots)
		}
		resp, err := h.svc.GetRateLimit(p.ctx, id)
		if err != nil {
			return err
		}
		if _, err := h.svc.UpdateRateLimit(p.ctx, id, &b); err != nil {
			return err
		}
		stored := resp.Rules
		for i, r := range rules {
			if i < len(stored) {
				u := models.RateLimitRuleUpdate{Meter: &r.Meter, Amount: &r.Amount, WindowSeconds: r.WindowSeconds, PerPrincipal: r.PerPrincipal}
				if _, err := h.svc.UpdateRateLimitRule(p.ctx, id, stored[i].ID, &u); err != nil {
					return ruleFields(err, slots)
				}
				continue
			}
			if _, err := h.svc.CreateRateLimitRule(p.ctx, id, &rules[i]); err != nil {
				return ruleFields(err, slots)
			}
		}
		for _, r := range stored[min(len(rules), len(stored)):] {
			if err := h.svc.DeleteRateLimitRule(p.ctx, id, r.ID); err != nil {
				return err
			}
		}
		return nil
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteRateLimit(p.ctx, id)
		return err
	}
	return k
}

// ruleSlots is how many rule rows a rate limit's form shows: those filled
// and one empty, at least three.
func ruleSlots(v *vals) int {
	n := 0
	for i := 0; i < 50; i++ {
		if v.str("rule"+itoa(i)+"_meter") != "" {
			n = i + 1
		}
	}
	return max(3, n+1)
}

// rules reads a rate limit form's filled rule rows; slots[j] is the form row
// of rules[j].
func (v *vals) rules() (rules []models.RateLimitRuleCreate, slots []int) {
	rules = []models.RateLimitRuleCreate{}
	for i := range ruleSlots(v) {
		n := "rule" + itoa(i) + "_"
		m := v.str(n + "meter")
		if m == "" {
			continue
		}
		r := models.RateLimitRuleCreate{Meter: models.Meter(m), WindowSeconds: v.optInt32(n + "window"), PerPrincipal: v.onPtr(n + "per_principal")}
		switch a, err := strconv.ParseInt(v.str(n+"amount"), 10, 64); {
		case v.str(n+"amount") == "":
			v.errs[n+"amount"] = "enter how many"
		case err != nil:
			v.errs[n+"amount"] = "enter a whole number"
		default:
			r.Amount = a
		}
		rules, slots = append(rules, r), append(slots, i)
	}
	return rules, slots
}

// ruleFields moves the API's messages about rules.j.x to the form's row.
func ruleFields(err error, slots []int) error {
	if err == nil {
		return nil
	}
	pr := explain(http.MethodPost, err)
	if pr.Status >= 500 || len(pr.Fields) == 0 {
		return err
	}
	moved := false
	for f, m := range pr.Fields {
		parts := strings.SplitN(f, ".", 3)
		if len(parts) != 3 || parts[0] != "rules" {
			continue
		}
		if j, err := strconv.Atoi(parts[1]); err == nil && j >= 0 && j < len(slots) {
			rest := parts[2]
			if rest == "window_seconds" {
				rest = "window"
			}
			delete(pr.Fields, f)
			pr.Fields["rule"+itoa(slots[j])+"_"+rest] = m
			moved = true
		}
	}
	if !moved {
		return err
	}
	return &formError{pr}
}

// optNumber is a nullable number as a form shows it: empty for null.
func optNumber(n *int32) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(int(*n))
}

// profileOptions are the host form's profiles: none (the shape's public
// API) and the registry's.
func profileOptions() []option {
	out := []option{{Value: "", Label: "none (the shape's public API)"}}
	for _, p := range profile.All() {
		out = append(out, option{Value: p.Name, Label: p.Name + " — " + p.Title})
	}
	return out
}

// paramList is the host form's name=value, comma-separated profile
// parameters; never nil. A pair without '=' is a name with no value,
// which the control API refuses naming it.
func paramList(s string) models.ProfileParams {
	out := models.ProfileParams{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if k = strings.TrimSpace(k); k != "" {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// paramText is paramList's inverse, names sorted.
func paramText(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + p[k]
	}
	return strings.Join(keys, ", ")
}

// headerList is the host form's comma-separated forward_headers; never nil.
func headerList(s string) models.ForwardHeaders {
	out := models.ForwardHeaders{}
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}
