package configfile

import (
	"slices"

	"github.com/google/uuid"
	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/openapi/nullable"
)

// resolver returns the id of the object of kind k with natural key key.
type resolver func(k Kind, key string) uuid.UUID

func (r resolver) opt(k Kind, key string) *uuid.UUID {
	if key == "" {
		return nil
	}
	id := r(k, key)
	return &id
}

func ptr[T any](v T) *T { return &v }

// createBody is the API's create request for a spec, with every field set
// (defaults included), so that what is created is exactly what the document
// says. Grants, memberships and per-model rate limits are separate calls.
// The second result names the request's schema in the API spec.
func createBody(s spec, id resolver) (any, string) {
	switch s := s.(type) {
	case *TeamSpec:
		return models.TeamCreate{Slug: s.Slug, Name: &s.Name}, "TeamCreate"
	case *ProjectSpec:
		return models.ProjectCreate{TeamID: id(KindTeam, s.Team), Slug: s.Slug, Name: &s.Name}, "ProjectCreate"
	case *RateLimitSpec:
		rules := make([]models.RateLimitRuleCreate, len(s.Rules))
		for i, r := range s.Rules {
			rules[i] = ruleCreate(r)
		}
		return models.RateLimitCreate{Slug: s.Slug, Name: &s.Name, Rules: &rules}, "RateLimitCreate"
	case *HostSpec:
		return models.HostCreate{
			Slug: s.Slug, Name: &s.Name, Provider: models.Provider(s.Provider), BaseURL: s.BaseURL, Enabled: &s.Enabled,
			ConnectTimeoutMs: &s.ConnectTimeoutMs, FirstByteTimeoutMs: &s.FirstByteTimeoutMs,
			IdleTimeoutMs: &s.IdleTimeoutMs, TotalTimeoutMs: &s.TotalTimeoutMs, ForwardHeaders: forwardHeaders(s.ForwardHeaders),
			BreakerServerFailures: s.BreakerServerFailures, BreakerNetworkFailures: s.BreakerNetworkFailures,
			Profile: &s.Profile, ProfileParams: profileParams(s.ProfileParams),
		}, "HostCreate"
	case *ModelSpec:
		return models.ModelCreate{
			Name: s.Name, Provider: &s.Provider, Kind: ptr(models.ModelKind(s.Kind)), ContextWindow: &s.ContextWindow,
			MaxOutputTokens: &s.MaxOutputTokens, SupportsTools: &s.SupportsTools, SupportsVision: &s.SupportsVision,
			SupportsJSON: &s.SupportsJSON, SupportsThinking: &s.SupportsThinking,
			Strategy: ptr(models.ModelRouteStrategy(s.Strategy)),
		}, "ModelCreate"
	case *BindingSpec:
		tiers, units := priceTiers(s.PriceTiers), unitPrices(s.UnitPrices)
		return models.BindingCreate{
			ModelID: id(KindModel, s.Model), HostID: id(KindHost, s.Host), Shape: models.Shape(s.Shape),
			UpstreamModel: s.UpstreamModel, Position: &s.Position, Weight: &s.Weight, Enabled: &s.Enabled,
			InputPrice: &s.InputPrice, OutputPrice: &s.OutputPrice, CachedInputPrice: &s.CachedInputPrice,
			CacheWritePrice: &s.CacheWritePrice, ReasoningPrice: s.ReasoningPrice, PriceTiers: &tiers, UnitPrices: &units,
		}, "BindingCreate"
	case *HostKeySpec:
		b := models.HostKeyCreate{
			HostID: id(KindHost, s.Host), Slug: s.Slug, TierRateLimitID: id.opt(KindRateLimit, s.TierRateLimit),
			Position: &s.Position, Enabled: &s.Enabled,
		}
		if s.SecretRef != "" {
			b.SecretRef = &s.SecretRef
		}
		if s.Secret != "" {
			b.Secret = &s.Secret
		}
		return b, "HostKeyCreate"
	case *MCPServerSpec:
		b := models.McpServerCreate{
			Slug: s.Slug, Name: &s.Name, URL: s.URL, Enabled: &s.Enabled, TimeoutMs: &s.TimeoutMs,
			RateLimitID: id.opt(KindRateLimit, s.RateLimit), ToolRateLimits: toolRateLimits(s.ToolRateLimits, id),
		}
		if s.AuthHeader != "" {
			b.AuthHeader = &s.AuthHeader
		}
		if s.AuthSecretRef != "" {
			b.AuthSecretRef = &s.AuthSecretRef
		}
		if s.AuthSecret != "" {
			b.AuthSecret = &s.AuthSecret
		}
		if s.ToolPrices != nil {
			tp := models.McpToolPrices(s.ToolPrices)
			b.ToolPrices = &tp
		}
		b.Oauth = oauthInput(s.OAuth)
		return b, "McpServerCreate"
	case *PolicySpec:
		return models.PolicyCreate{
			Slug: s.Slug, Name: &s.Name, AllModels: &s.AllModels, AllHostKeys: &s.AllHostKeys,
			KeyStrategy: ptr(models.KeyStrategy(s.KeyStrategy)), RateLimitID: id.opt(KindRateLimit, s.RateLimit),
			MaxWaitMs: &s.MaxWaitMs, Priority: &s.Priority, MaxAttempts: &s.MaxAttempts,
			LimiterFailureMode: ptr(models.LimiterFailureMode(s.LimiterFailureMode)),
			CapturePayloads:    &s.CapturePayloads, CaptureMaxBytes: &s.CaptureMaxBytes,
			RouteStrategy: ptr(models.PolicyRouteStrategy(s.RouteStrategy)), Affinity: ptr(models.RouteAffinity(s.Affinity)),
			BudgetFallback: &s.BudgetFallback, TeamID: id.opt(KindTeam, s.Team),
			DegradeAfterMs: s.DegradeAfterMs, DegradeBelowPriority: s.DegradeBelowPriority,
			ResponseCache: responseCacheBody(s.ResponseCache, id), Guardrails: guardrailsBody(s.Guardrails),
		}, "PolicyCreate"
	case *ServiceAccountSpec:
		return models.ServiceAccountCreate{
			ProjectID: id(KindProject, s.Project), Slug: s.Slug, Name: &s.Name, PolicyID: id.opt(KindPolicy, s.Policy),
		}, "ServiceAccountCreate"
	case *GroupSpec:
		return models.GroupCreate{Slug: s.Slug, Name: &s.Name}, "GroupCreate"
	case *UserSpec:
		return models.UserCreate{Email: models.Email(s.Email), Name: &s.Name, Disabled: &s.Disabled}, "UserCreate"
	case *PolicyBindingSpec:
		b := models.PolicyBindingCreate{ProjectID: id(KindProject, s.Project), PolicyID: id(KindPolicy, s.Policy), Position: &s.Position}
		switch {
		case s.ServiceAccount != "":
			b.ServiceAccountID = id.opt(KindServiceAccount, s.Project+"/"+s.ServiceAccount)
		case s.User != "":
			b.UserID = id.opt(KindUser, lowerEmail(s.User))
		default:
			b.GroupID = id.opt(KindGroup, s.Group)
		}
		return b, "PolicyBindingCreate"
	case *RoleBindingSpec:
		return models.RoleBindingCreate{
			Role: models.Role(s.Role), UserID: id.opt(KindUser, lowerEmail(s.User)), GroupID: id.opt(KindGroup, s.Group),
			TeamID: id.opt(KindTeam, s.Team), ProjectID: id.opt(KindProject, s.Project),
		}, "RoleBindingCreate"
	case *BudgetSpec:
		return models.BudgetCreate{
			TeamID: id.opt(KindTeam, s.Team), ProjectID: id.opt(KindProject, s.Project),
			Period: models.Period(s.Period), Amount: s.Amount,
		}, "BudgetCreate"
	}
	panic("configfile: no create body for " + s.key())
}

func ruleCreate(r Rule) models.RateLimitRuleCreate {
	return models.RateLimitRuleCreate{Meter: models.Meter(r.Meter), Amount: r.Amount, WindowSeconds: &r.WindowSeconds, PerPrincipal: &r.PerPrincipal}
}

func priceTiers(ts []PriceTier) []models.PriceTier {
	out := make([]models.PriceTier, len(ts))
	for i, t := range ts {
		out[i] = models.PriceTier{
			AboveInputTokens: t.AboveInputTokens, InputPrice: t.InputPrice, OutputPrice: t.OutputPrice,
			CachedInputPrice: t.CachedInputPrice, CacheWritePrice: t.CacheWritePrice, ReasoningPrice: t.ReasoningPrice,
		}
	}
	return out
}

func unitPrices(us []UnitPrice) []models.UnitPrice {
	out := make([]models.UnitPrice, len(us))
	for i, u := range us {
		out[i] = models.UnitPrice{Unit: models.UnitPriceUnit(u.Unit), Price: u.Price}
		if u.Size != "" {
			out[i].Size = &us[i].Size
		}
		if u.Quality != "" {
			out[i].Quality = &us[i].Quality
		}
	}
	return out
}

// fieldSet is the names of the fields an update changes.
type fieldSet map[string]bool

func changed(cs []Change) fieldSet {
	f := fieldSet{}
	for _, c := range cs {
		f[c.Field] = true
	}
	return f
}

// when returns &v when the field changes, else nil (left out of the PATCH).
// forwardHeaders is a host's list as a body sends it: never null.
func forwardHeaders(h []string) *models.ForwardHeaders {
	if h == nil {
		h = []string{}
	}
	return &h
}

// profileParams is a host's profile parameters as a body sends them: never null.
func profileParams(p map[string]string) *models.ProfileParams {
	out := models.ProfileParams{}
	for k, v := range p {
		out[k] = v
	}
	return &out
}

func when[T any](f fieldSet, name string, v T) *T {
	if !f[name] {
		return nil
	}
	return &v
}

// nullRef is a PATCH value for a nullable reference: absent when unchanged,
// null when the document drops it, else its id.
func nullRef(f fieldSet, name string, id resolver, k Kind, key string) nullable.UUID {
	switch {
	case !f[name]:
		return nil
	case key == "":
		return nullable.Null[uuid.UUID]()
	}
	return nullable.Value(id(k, key))
}

// updateBody is the API's update request with the changed fields only (nil
// when only sub-collections change: grants, rules, memberships).
func updateBody(s spec, f fieldSet, id resolver) any {
	switch s := s.(type) {
	case *TeamSpec:
		return models.TeamUpdate{Name: when(f, "name", s.Name)}
	case *ProjectSpec:
		return models.ProjectUpdate{Name: when(f, "name", s.Name)}
	case *RateLimitSpec:
		if !f["name"] {
			return nil
		}
		return models.RateLimitUpdate{Name: &s.Name}
	case *HostSpec:
		b := models.HostUpdate{
			Name: when(f, "name", s.Name), BaseURL: when(f, "base_url", s.BaseURL), Enabled: when(f, "enabled", s.Enabled),
			ConnectTimeoutMs: when(f, "connect_timeout_ms", s.ConnectTimeoutMs), FirstByteTimeoutMs: when(f, "first_byte_timeout_ms", s.FirstByteTimeoutMs),
			IdleTimeoutMs: when(f, "idle_timeout_ms", s.IdleTimeoutMs), TotalTimeoutMs: when(f, "total_timeout_ms", s.TotalTimeoutMs),
		}
		if f["forward_headers"] {
			b.ForwardHeaders = forwardHeaders(s.ForwardHeaders)
		}
		if f["profile"] || f["profile_params"] {
			// Checked together by the control API: send both.
			b.Profile, b.ProfileParams = &s.Profile, profileParams(s.ProfileParams)
		}
		if f["breaker_server_failures"] {
			b.BreakerServerFailures = nullable.FromPointer(s.BreakerServerFailures)
		}
		if f["breaker_network_failures"] {
			b.BreakerNetworkFailures = nullable.FromPointer(s.BreakerNetworkFailures)
		}
		if f["provider"] {
			b.Provider = ptr(models.Provider(s.Provider))
		}
		return b
	case *ModelSpec:
		b := models.ModelUpdate{
			Provider: when(f, "provider", s.Provider), ContextWindow: when(f, "context_window", s.ContextWindow),
			MaxOutputTokens: when(f, "max_output_tokens", s.MaxOutputTokens), SupportsTools: when(f, "supports_tools", s.SupportsTools),
			SupportsVision: when(f, "supports_vision", s.SupportsVision), SupportsJSON: when(f, "supports_json", s.SupportsJSON),
			SupportsThinking: when(f, "supports_thinking", s.SupportsThinking),
		}
		if f["kind"] {
			b.Kind = ptr(models.ModelKind(s.Kind))
		}
		if f["strategy"] {
			b.Strategy = ptr(models.ModelRouteStrategy(s.Strategy))
		}
		// Fallbacks are set once every model of the plan exists (Apply's
		// fallback pass), since they may name models created beside this one.
		if b == (models.ModelUpdate{}) {
			return nil
		}
		return b
	case *BindingSpec:
		b := models.BindingUpdate{
			UpstreamModel: when(f, "upstream_model", s.UpstreamModel), Position: when(f, "position", s.Position),
			Weight: when(f, "weight", s.Weight), Enabled: when(f, "enabled", s.Enabled), InputPrice: when(f, "input_price", s.InputPrice),
			OutputPrice: when(f, "output_price", s.OutputPrice), CachedInputPrice: when(f, "cached_input_price", s.CachedInputPrice),
			CacheWritePrice: when(f, "cache_write_price", s.CacheWritePrice),
		}
		if f["shape"] {
			b.Shape = ptr(models.Shape(s.Shape))
		}
		if f["reasoning_price"] {
			b.ReasoningPrice = nullable.FromPointer(s.ReasoningPrice)
		}
		if f["price_tiers"] {
			b.PriceTiers = ptr(priceTiers(s.PriceTiers))
		}
		if f["unit_prices"] {
			b.UnitPrices = ptr(unitPrices(s.UnitPrices))
		}
		return b
	case *HostKeySpec:
		b := models.HostKeyUpdate{
			Position: when(f, "position", s.Position), Enabled: when(f, "enabled", s.Enabled),
			TierRateLimitID: nullRef(f, "tier_rate_limit", id, KindRateLimit, s.TierRateLimit),
		}
		if f["secret_ref"] {
			b.SecretRef = &s.SecretRef
		}
		if f["secret"] {
			b.Secret = &s.Secret
		}
		return b
	case *MCPServerSpec:
		b := models.McpServerUpdate{
			Name: when(f, "name", s.Name), URL: when(f, "url", s.URL), Enabled: when(f, "enabled", s.Enabled),
			TimeoutMs: when(f, "timeout_ms", s.TimeoutMs), RateLimitID: nullRef(f, "rate_limit", id, KindRateLimit, s.RateLimit),
		}
		if f["tool_rate_limits"] {
			b.ToolRateLimits = toolRateLimits(s.ToolRateLimits, id)
		}
		if f["auth_header"] || f["auth_secret_ref"] || f["auth_secret"] {
			// The API checks the three together: a new header needs its
			// credential in the same call.
			b.AuthHeader = &s.AuthHeader
			if s.AuthSecretRef != "" {
				b.AuthSecretRef = &s.AuthSecretRef
			}
			if s.AuthSecret != "" {
				b.AuthSecret = &s.AuthSecret
			}
		}
		if f["tool_prices"] {
			tp := models.McpToolPrices(s.ToolPrices)
			if tp == nil {
				tp = models.McpToolPrices{}
			}
			b.ToolPrices = &tp
		}
		if f["oauth"] {
			b.Oauth = nullable.FromPointer(oauthInput(s.OAuth)) // none in the document takes it off
		}
		return b
	case *PolicySpec:
		b := models.PolicyUpdate{
			Name: when(f, "name", s.Name), AllModels: when(f, "all_models", s.AllModels), AllHostKeys: when(f, "all_host_keys", s.AllHostKeys),
			RateLimitID: nullRef(f, "rate_limit", id, KindRateLimit, s.RateLimit),
			MaxWaitMs:   when(f, "max_wait_ms", s.MaxWaitMs), Priority: when(f, "priority", s.Priority),
			MaxAttempts:     when(f, "max_attempts", s.MaxAttempts),
			CapturePayloads: when(f, "capture_payloads", s.CapturePayloads), CaptureMaxBytes: when(f, "capture_max_bytes", s.CaptureMaxBytes),
			BudgetFallback: when(f, "budget_fallback", s.BudgetFallback),
		}
		if f["route_strategy"] {
			b.RouteStrategy = ptr(models.PolicyRouteStrategy(s.RouteStrategy))
		}
		if f["affinity"] {
			b.Affinity = ptr(models.RouteAffinity(s.Affinity))
		}
		if f["key_strategy"] {
			b.KeyStrategy = ptr(models.KeyStrategy(s.KeyStrategy))
		}
		if f["limiter_failure_mode"] {
			b.LimiterFailureMode = ptr(models.LimiterFailureMode(s.LimiterFailureMode))
		}
		if f["degrade_after_ms"] {
			b.DegradeAfterMs = nullable.FromPointer(s.DegradeAfterMs)
		}
		if f["degrade_below_priority"] {
			b.DegradeBelowPriority = nullable.FromPointer(s.DegradeBelowPriority)
		}
		if f["response_cache"] {
			if b.ResponseCache = responseCacheBody(s.ResponseCache, id); b.ResponseCache == nil {
				b.ResponseCache = &models.ResponseCache{Enabled: false}
			}
		}
		if f["guardrails"] {
			if b.Guardrails = guardrailsBody(s.Guardrails); b.Guardrails == nil {
				b.Guardrails = &models.Guardrails{Rules: []models.GuardrailRule{}}
			}
		}
		if b.ResponseCache == nil && b.Guardrails == nil && b.Name == nil && b.AllModels == nil && b.AllHostKeys == nil && b.RateLimitID == nil && b.MaxWaitMs == nil &&
			b.Priority == nil && b.MaxAttempts == nil && b.KeyStrategy == nil && b.LimiterFailureMode == nil &&
			b.CapturePayloads == nil && b.CaptureMaxBytes == nil && b.RouteStrategy == nil && b.Affinity == nil &&
			b.BudgetFallback == nil && !b.DegradeAfterMs.IsSpecified() && !b.DegradeBelowPriority.IsSpecified() {
			return nil
		}
		return b
	case *ServiceAccountSpec:
		return models.ServiceAccountUpdate{Name: when(f, "name", s.Name), PolicyID: nullRef(f, "policy", id, KindPolicy, s.Policy)}
	case *GroupSpec:
		return models.GroupUpdate{Name: when(f, "name", s.Name)}
	case *UserSpec:
		if !f["email"] && !f["name"] && !f["disabled"] {
			return nil
		}
		b := models.UserUpdate{Name: when(f, "name", s.Name), Disabled: when(f, "disabled", s.Disabled)}
		if f["email"] {
			b.Email = ptr(models.Email(s.Email))
		}
		return b
	case *PolicyBindingSpec:
		return models.PolicyBindingUpdate{Position: when(f, "position", s.Position)}
	case *BudgetSpec:
		return models.BudgetUpdate{Amount: when(f, "amount", s.Amount)}
	}
	return nil // role bindings: every field is identity
}

// responseCacheBody is a policy's cache settings as a body sends them: nil
// when off (left out of a create; an update sends enabled false instead).
func responseCacheBody(c *ResponseCache, id resolver) *models.ResponseCache {
	if c == nil {
		return nil
	}
	b := &models.ResponseCache{Enabled: true, TTLSeconds: &c.TTLSeconds, MaxEntryBytes: &c.MaxEntryBytes, Nondeterministic: &c.Nondeterministic}
	if c.Scope != "" {
		b.Scope = ptr(models.ResponseCacheScope(c.Scope))
	}
	if c.ScopeHeader != "" {
		b.ScopeHeader = &c.ScopeHeader
	}
	if len(c.Models) > 0 {
		ms := make([]uuid.UUID, len(c.Models))
		for i, m := range c.Models {
			ms[i] = id(KindModel, m)
		}
		b.Models = &ms
	}
	if len(c.Semantic) > 0 {
		ds := make([]models.SemanticCacheDomain, len(c.Semantic))
		for i, d := range c.Semantic {
			ds[i] = models.SemanticCacheDomain{Name: d.Name, EmbeddingsModel: id(KindModel, d.EmbeddingsModel)}
			if d.Threshold != 0 {
				ds[i].Threshold = ptr(float32(d.Threshold))
			}
			if len(d.Models) > 0 {
				ms := make([]uuid.UUID, len(d.Models))
				for j, m := range d.Models {
					ms[j] = id(KindModel, m)
				}
				ds[i].Models = &ms
			}
			if len(d.Metadata) > 0 {
				ds[i].Metadata = &d.Metadata
			}
			if len(d.SystemSHA256) > 0 {
				ds[i].SystemSha256 = &d.SystemSHA256
			}
		}
		b.Semantic = &ds
	}
	return b
}

// guardrailsBody is a policy's guardrails as a body sends them: nil when
// there are none.
func guardrailsBody(g *Guardrails) *models.Guardrails {
	if g == nil {
		return nil
	}
	b := &models.Guardrails{Rules: make([]models.GuardrailRule, len(g.Rules))}
	if g.MaxPromptBytes != 0 {
		b.MaxPromptBytes = &g.MaxPromptBytes
	}
	for i, r := range g.Rules {
		o := models.GuardrailRule{Name: r.Name, Stage: models.GuardrailRuleStage(r.Stage), Action: models.GuardrailRuleAction(r.Action)}
		if r.Detectors != nil {
			ds := make([]models.GuardrailRuleDetectors, len(r.Detectors))
			for j, d := range r.Detectors {
				ds[j] = models.GuardrailRuleDetectors(d)
			}
			o.Detectors = &ds
		}
		if r.DenyWords != nil {
			o.DenyWords = ptr(slices.Clone(r.DenyWords))
		}
		if r.DenyPatterns != nil {
			o.DenyPatterns = ptr(slices.Clone(r.DenyPatterns))
		}
		if w := r.Webhook; w != nil {
			ow := &models.GuardrailWebhook{URL: w.URL}
			if w.TimeoutMs != 0 {
				ow.TimeoutMs = ptr(w.TimeoutMs)
			}
			if w.MaxConcurrent != 0 {
				ow.MaxConcurrent = ptr(w.MaxConcurrent)
			}
			if w.Fail != "" {
				ow.Fail = ptr(models.GuardrailWebhookFail(w.Fail))
			}
			o.Webhook = ow
		}
		b.Rules[i] = o
	}
	return b
}

// toolRateLimits is a server's per-tool rate limits as a body sends them:
// never null (an update replaces the whole object).
func toolRateLimits(m map[string]string, id resolver) *models.McpToolRateLimits {
	out := models.McpToolRateLimits{}
	for tool, rl := range m {
		out[tool] = id(KindRateLimit, rl)
	}
	return &out
}

// oauthInput is the control API's body of a document's client credentials
// (nil for none).
func oauthInput(o *MCPOAuthSpec) *models.McpOAuthInput {
	if o == nil {
		return nil
	}
	in := &models.McpOAuthInput{TokenURL: o.TokenURL, ClientID: o.ClientID}
	if o.ClientSecretRef != "" {
		in.ClientSecretRef = &o.ClientSecretRef
	}
	if o.ClientSecret != "" {
		in.ClientSecret = &o.ClientSecret
	}
	if len(o.Scopes) > 0 {
		sc := slices.Clone(o.Scopes)
		in.Scopes = &sc
	}
	if o.Audience != "" {
		in.Audience = &o.Audience
	}
	if o.Resource != "" {
		in.Resource = &o.Resource
	}
	if o.AuthMethod != "" {
		m := models.McpOAuthAuthMethod(o.AuthMethod)
		in.AuthMethod = &m
	}
	return in
}
