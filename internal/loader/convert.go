package loader

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/wire"
)

// converter turns store rows into snapshot rows; it resolves host key secrets.
type converter struct {
	l *Loader
}

func ref(id *uuid.UUID) snapshot.ID {
	if id == nil {
		return uuid.Nil
	}
	return *id
}

func at(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func ms(v int32) time.Duration { return time.Duration(v) * time.Millisecond }

func hash32(b []byte) (h [32]byte) {
	copy(h[:], b)
	return h
}

func (c converter) team(r store.Team) *snapshot.Team {
	return &snapshot.Team{ID: r.ID, Slug: r.Slug, Name: r.Name}
}

func (c converter) project(r store.Project) *snapshot.Project {
	return &snapshot.Project{ID: r.ID, TeamID: r.TeamID, Slug: r.Slug, Name: r.Name}
}

func (c converter) user(r store.User) *snapshot.User {
	return &snapshot.User{ID: r.ID, Email: r.Email, Name: r.Name, Disabled: r.Disabled}
}

func (c converter) groups(rows []store.Group, members []store.GroupMembership) []*snapshot.Group {
	byID := make(map[uuid.UUID]*snapshot.Group, len(rows))
	out := make([]*snapshot.Group, 0, len(rows))
	for _, r := range rows {
		g := &snapshot.Group{ID: r.ID, Slug: r.Slug, Members: map[snapshot.ID]struct{}{}}
		byID[r.ID] = g
		out = append(out, g)
	}
	for _, m := range members {
		if g := byID[m.GroupID]; g != nil {
			g.Members[m.UserID] = struct{}{}
		}
	}
	return out
}

func (c converter) serviceAccount(r store.ServiceAccount) *snapshot.ServiceAccount {
	return &snapshot.ServiceAccount{ID: r.ID, ProjectID: r.ProjectID, Slug: r.Slug, PolicyID: ref(r.PolicyID)}
}

func (c converter) rateLimits(rows []store.RateLimit, rules []store.RateLimitRule) []*snapshot.RateLimit {
	byID := make(map[uuid.UUID]*snapshot.RateLimit, len(rows))
	out := make([]*snapshot.RateLimit, 0, len(rows))
	for _, r := range rows {
		rl := &snapshot.RateLimit{ID: r.ID, Slug: r.Slug}
		byID[r.ID] = rl
		out = append(out, rl)
	}
	for _, r := range rules {
		if rl := byID[r.RateLimitID]; rl != nil {
			rl.Rules = append(rl.Rules, &snapshot.Rule{
				ID: r.ID, RateLimitID: r.RateLimitID, Meter: snapshot.Meter(r.Meter), Amount: r.Amount,
				Window: time.Duration(r.WindowSeconds) * time.Second, PerPrincipal: r.PerPrincipal,
			})
		}
	}
	return out
}

func (c converter) host(r store.Host) *snapshot.Host {
	return &snapshot.Host{
		ID: r.ID, Slug: r.Slug, Name: r.Name, Provider: r.Provider, BaseURL: r.BaseURL, Enabled: r.Enabled,
		ConnectTimeout: ms(r.ConnectTimeoutMs), FirstByteTimeout: ms(r.FirstByteTimeoutMs),
		IdleTimeout: ms(r.IdleTimeoutMs), TotalTimeout: ms(r.TotalTimeoutMs), ForwardHeaders: r.ForwardHeaders,
		BreakerServerFailures: threshold(r.BreakerServerFailures), BreakerNetworkFailures: threshold(r.BreakerNetworkFailures),
		Profile: r.Profile, ProfileParams: profileParams(r.ProfileParams),
	}
}

// profileParams is a host's profile parameters; never nil. The control
// API wrote a JSON object of strings; anything else reads as none.
func profileParams(raw json.RawMessage) map[string]string {
	out := map[string]string{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &out)
	}
	return out
}

// threshold is a host's breaker threshold; 0 (the process setting) when unset.
func threshold(n *int32) int {
	if n == nil {
		return 0
	}
	return int(*n)
}

func (c converter) model(r store.Model) *snapshot.Model {
	return &snapshot.Model{
		ID: r.ID, Name: r.Name, Provider: r.Provider, Kind: r.Kind, ContextWindow: int(r.ContextWindow),
		MaxOutputTokens: int(r.MaxOutputTokens), SupportsTools: r.SupportsTools, SupportsVision: r.SupportsVision,
		SupportsJSON: r.SupportsJSON, SupportsThinking: r.SupportsThinking, CreatedAt: r.CreatedAt,
		Strategy: snapshot.RouteStrategy(r.Strategy), Fallbacks: fallbacks(r.Fallbacks),
	}
}

// fallbacks copies a model's fallback list (nil when empty). The schema keeps
// it to other existing models of the same kind; the router skips an entry
// the snapshot does not hold.
func fallbacks(ids []uuid.UUID) []snapshot.ID {
	if len(ids) == 0 {
		return nil
	}
	return append([]snapshot.ID(nil), ids...)
}

func (c converter) binding(r store.Binding) *snapshot.Binding {
	p := snapshot.Pricing{
		Input: r.InputPrice, Output: r.OutputPrice, CachedInput: r.CachedInputPrice,
		CacheWrite: r.CacheWritePrice, Reasoning: r.OutputPrice,
	}
	if r.ReasoningPrice != nil {
		p.Reasoning = *r.ReasoningPrice
	}
	if len(r.PriceTiers) > 0 {
		if err := json.Unmarshal(r.PriceTiers, &p.Tiers); err != nil {
			c.l.log.Warn("ignoring malformed price tiers", "binding", r.ID, "err", err)
		}
	}
	if len(r.UnitPrices) > 0 {
		if err := json.Unmarshal(r.UnitPrices, &p.Units); err != nil {
			c.l.log.Warn("ignoring malformed unit prices", "binding", r.ID, "err", err)
		}
	}
	return &snapshot.Binding{
		ID: r.ID, ModelID: r.ModelID, HostID: r.HostID, Shape: wire.Shape(r.Shape),
		UpstreamModel: r.UpstreamModel, Position: int(r.Position), Enabled: r.Enabled, Pricing: p,
		Weight: int(r.Weight),
	}
}

func (c converter) hostKey(r store.HostKey) *snapshot.HostKey {
	k := &snapshot.HostKey{
		ID: r.ID, HostID: r.HostID, Slug: r.Slug, SecretVersion: int(r.SecretVersion),
		TierRateLimitID: ref(r.TierRateLimitID), Position: int(r.Position), Enabled: r.Enabled,
	}
	v, err := c.l.box.Resolve(r.SecretRef, r.SecretCiphertext, c.l.getenv)
	if err != nil {
		k.Problem = err.Error()
		c.l.log.Warn("host key unusable", "host_key", r.ID, "slug", r.Slug, "problem", k.Problem)
		return k
	}
	k.Secret = snapshot.NewSecret(v)
	k.Usable = true
	return k
}

func (c converter) policies(rows []store.Policy, models []store.PolicyModel, keys []store.PolicyHostKey, limits []store.PolicyModelRateLimit) []*snapshot.Policy {
	byID := make(map[uuid.UUID]*snapshot.Policy, len(rows))
	out := make([]*snapshot.Policy, 0, len(rows))
	for _, r := range rows {
		p := &snapshot.Policy{
			ID: r.ID, Slug: r.Slug, AllModels: r.AllModels, AllHostKeys: r.AllHostKeys,
			Models: map[snapshot.ID]struct{}{}, HostKeys: map[snapshot.ID]struct{}{},
			KeyStrategy: snapshot.KeyStrategy(r.KeyStrategy), RateLimitID: ref(r.RateLimitID),
			MaxWait: ms(r.MaxWaitMs), Priority: int(r.Priority), MaxAttempts: int(r.MaxAttempts),
			LimiterFailureMode: r.LimiterFailureMode,
			CapturePayloads:    r.CapturePayloads, CaptureMaxBytes: int(r.CaptureMaxBytes),
			RouteStrategy: snapshot.RouteStrategy(r.RouteStrategy), Affinity: snapshot.Affinity(r.Affinity),
			BudgetFallback: r.BudgetFallback,
			MCPGrants:      r.MCPGrants, MCPRequireApproval: r.MCPRequireApproval,
		}
		if r.DegradeAfterMs != nil {
			p.DegradeAfter, p.HasDegradeAfter = ms(*r.DegradeAfterMs), true
		}
		if r.DegradeBelowPriority != nil {
			p.DegradeBelowPriority, p.HasDegradeBelow = int(*r.DegradeBelowPriority), true
		}
		if rc, err := snapshot.ParseResponseCache(r.ResponseCache); err != nil {
			// The control API validates what it writes: this is a row
			// written around it. The policy serves without a cache.
			c.l.log.Warn("policy response cache unreadable", "policy", r.ID, "slug", r.Slug, "error", err)
		} else if rc != nil {
			p.Cache = rc.ResponseCache()
		}
		if _, g, err := guardrail.Parse(r.Guardrails); err != nil {
			// Written around the control API, like an unreadable cache: the
			// policy refuses every request rather than serve unguarded.
			c.l.log.Warn("policy guardrails unreadable", "policy", r.ID, "slug", r.Slug, "error", err)
			p.Guardrails = guardrail.Unreadable()
		} else {
			p.Guardrails = g
		}
		byID[r.ID] = p
		out = append(out, p)
	}
	for _, m := range models {
		if p := byID[m.PolicyID]; p != nil {
			p.Models[m.ModelID] = struct{}{}
		}
	}
	for _, k := range keys {
		if p := byID[k.PolicyID]; p != nil {
			p.HostKeys[k.HostKeyID] = struct{}{}
		}
	}
	for _, l := range limits { // already ordered by position
		if p := byID[l.PolicyID]; p != nil {
			p.ModelRateLimits = append(p.ModelRateLimits, snapshot.ModelRateLimit{
				ModelID: l.ModelID, RateLimitID: l.RateLimitID, Position: int(l.Position),
			})
		}
	}
	return out
}

func (c converter) policyBinding(r store.PolicyBinding) *snapshot.PolicyBinding {
	b := &snapshot.PolicyBinding{ID: r.ID, ProjectID: r.ProjectID, PolicyID: r.PolicyID, Position: int(r.Position)}
	switch {
	case r.ServiceAccountID != nil:
		b.SubjectKind, b.SubjectID = snapshot.SubjectServiceAccount, *r.ServiceAccountID
	case r.UserID != nil:
		b.SubjectKind, b.SubjectID = snapshot.SubjectUser, *r.UserID
	case r.GroupID != nil:
		b.SubjectKind, b.SubjectID = snapshot.SubjectGroup, *r.GroupID
	}
	return b
}

func (c converter) relayKey(r store.RelayKey) *snapshot.RelayKey {
	k := &snapshot.RelayKey{
		ID: r.ID, Hash: hash32(r.KeyHash), DisplayPrefix: r.DisplayPrefix, Name: r.Name, ProjectID: r.ProjectID,
		ServiceAccountID: ref(r.ServiceAccountID), UserID: ref(r.UserID), PolicyID: ref(r.PolicyID),
		ExpiresAt: at(r.ExpiresAt), RevokedAt: at(r.RevokedAt),
	}
	if r.Priority != nil {
		k.Priority, k.HasPriority = int(*r.Priority), true
	}
	return k
}

func (c converter) inferenceToken(r store.InferenceToken) *snapshot.InferenceToken {
	return &snapshot.InferenceToken{
		ID: r.ID, Hash: hash32(r.TokenHash), UserID: r.UserID, ProjectID: r.ProjectID,
		ExpiresAt: r.ExpiresAt, RevokedAt: at(r.RevokedAt),
	}
}

func (c converter) budget(r store.Budget) *snapshot.Budget {
	return &snapshot.Budget{
		ID: r.ID, TeamID: ref(r.TeamID), ProjectID: ref(r.ProjectID), RelayKeyID: ref(r.RelayKeyID),
		Period: r.Period, Amount: r.Amount,
	}
}

func each[R any, T any](rows []R, f func(R) *T) []*T {
	out := make([]*T, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

// data converts a full catalog read.
func (c converter) data(cat *store.Catalog) *snapshot.Data {
	return &snapshot.Data{
		Teams:           each(cat.Teams, c.team),
		Projects:        each(cat.Projects, c.project),
		Users:           each(cat.Users, c.user),
		Groups:          c.groups(cat.Groups, cat.GroupMemberships),
		ServiceAccounts: each(cat.ServiceAccounts, c.serviceAccount),
		RateLimits:      c.rateLimits(cat.RateLimits, cat.RateLimitRules),
		Hosts:           each(cat.Hosts, c.host),
		Models:          each(cat.Models, c.model),
		Bindings:        each(cat.Bindings, c.binding),
		HostKeys:        each(cat.HostKeys, c.hostKey),
		Policies:        c.policies(cat.Policies, cat.PolicyModels, cat.PolicyHostKeys, cat.PolicyModelRateLimits),
		PolicyBindings:  each(cat.PolicyBindings, c.policyBinding),
		RelayKeys:       each(cat.RelayKeys, c.relayKey),
		InferenceTokens: each(cat.InferenceTokens, c.inferenceToken),
		Budgets:         each(cat.Budgets, c.budget),
		MCPServers:      c.mcpServers(cat.MCPServers, cat.MCPToolApprovals),
	}
}

// changes converts a partial read plus the deleted IDs per kind.
func (c converter) changes(cat *store.Catalog, deleted map[store.Kind][]uuid.UUID) *snapshot.Changes {
	d := c.data(cat)
	return &snapshot.Changes{
		Teams:           snapshot.Delta[snapshot.Team]{Upserts: d.Teams, Deletes: deleted[store.KindTeams]},
		Projects:        snapshot.Delta[snapshot.Project]{Upserts: d.Projects, Deletes: deleted[store.KindProjects]},
		Users:           snapshot.Delta[snapshot.User]{Upserts: d.Users, Deletes: deleted[store.KindUsers]},
		Groups:          snapshot.Delta[snapshot.Group]{Upserts: d.Groups, Deletes: deleted[store.KindGroups]},
		ServiceAccounts: snapshot.Delta[snapshot.ServiceAccount]{Upserts: d.ServiceAccounts, Deletes: deleted[store.KindServiceAccounts]},
		RateLimits:      snapshot.Delta[snapshot.RateLimit]{Upserts: d.RateLimits, Deletes: deleted[store.KindRateLimits]},
		Hosts:           snapshot.Delta[snapshot.Host]{Upserts: d.Hosts, Deletes: deleted[store.KindHosts]},
		Models:          snapshot.Delta[snapshot.Model]{Upserts: d.Models, Deletes: deleted[store.KindModels]},
		Bindings:        snapshot.Delta[snapshot.Binding]{Upserts: d.Bindings, Deletes: deleted[store.KindBindings]},
		HostKeys:        snapshot.Delta[snapshot.HostKey]{Upserts: d.HostKeys, Deletes: deleted[store.KindHostKeys]},
		Policies:        snapshot.Delta[snapshot.Policy]{Upserts: d.Policies, Deletes: deleted[store.KindPolicies]},
		PolicyBindings:  snapshot.Delta[snapshot.PolicyBinding]{Upserts: d.PolicyBindings, Deletes: deleted[store.KindPolicyBindings]},
		RelayKeys:       snapshot.Delta[snapshot.RelayKey]{Upserts: d.RelayKeys, Deletes: deleted[store.KindRelayKeys]},
		InferenceTokens: snapshot.Delta[snapshot.InferenceToken]{Upserts: d.InferenceTokens, Deletes: deleted[store.KindInferenceTokens]},
		Budgets:         snapshot.Delta[snapshot.Budget]{Upserts: d.Budgets, Deletes: deleted[store.KindBudgets]},
		MCPServers:      snapshot.Delta[snapshot.MCPServer]{Upserts: d.MCPServers, Deletes: deleted[store.KindMCPServers]},
	}
}

// mcpServers converts MCP servers with their tool approvals, resolving each
// server's credential as host keys' are.
func (c converter) mcpServers(rows []store.MCPServer, approvals []store.MCPToolApproval) []*snapshot.MCPServer {
	byID := make(map[uuid.UUID]*snapshot.MCPServer, len(rows))
	out := make([]*snapshot.MCPServer, 0, len(rows))
	for _, r := range rows {
		m := &snapshot.MCPServer{
			ID: r.ID, Slug: r.Slug, Name: r.Name, URL: r.URL, Enabled: r.Enabled, Timeout: ms(r.TimeoutMs),
			RateLimitID: ref(r.RateLimitID), CallPrice: r.CallPrice, AuthHeader: r.AuthHeader, UpdatedAt: r.UpdatedAt,
			Approved: map[string]string{}, Usable: true,
		}
		if len(r.ToolRateLimits) > 0 {
			var tl map[string]uuid.UUID
			if err := json.Unmarshal(r.ToolRateLimits, &tl); err != nil {
				c.l.log.Warn("mcp server tool rate limits unreadable", "mcp_server", r.ID, "slug", r.Slug, "err", err)
			}
			for tool, id := range tl {
				if m.ToolRateLimits == nil {
					m.ToolRateLimits = make(map[string]snapshot.MCPToolRateLimit, len(tl))
				}
				m.ToolRateLimits[tool] = snapshot.MCPToolRateLimit{RateLimitID: id, Scope: snapshot.MCPToolScope(r.ID, tool)}
			}
		}
		if len(r.ToolPrices) > 0 {
			var tp map[string]int64
			if err := json.Unmarshal(r.ToolPrices, &tp); err != nil {
				c.l.log.Warn("mcp server tool prices unreadable", "mcp_server", r.ID, "slug", r.Slug, "err", err)
			}
			for pattern, price := range tp {
				m.ToolPrices = append(m.ToolPrices, snapshot.MCPToolPrice{Pattern: pattern, Price: price})
			}
			snapshot.SortToolPrices(m.ToolPrices)
		}
		if r.OAuthTokenURL != "" {
			m.OAuth = &snapshot.MCPOAuth{TokenURL: r.OAuthTokenURL, ClientID: r.OAuthClientID, Scopes: r.OAuthScopes,
				Audience: r.OAuthAudience, Resource: r.OAuthResource, AuthMethod: r.OAuthAuthMethod}
			v, err := c.l.box.Resolve(r.OAuthClientSecretRef, r.OAuthClientSecretCiphertext, c.l.getenv)
			if err != nil {
				m.Usable, m.Problem = false, "oauth client secret: "+err.Error()
				c.l.log.Warn("mcp server credential unusable", "mcp_server", r.ID, "slug", r.Slug, "problem", m.Problem)
			} else {
				m.OAuth.ClientSecret = snapshot.NewSecret(v)
			}
		}
		if r.AuthHeader != "" {
			v, err := c.l.box.Resolve(r.AuthSecretRef, r.AuthSecretCiphertext, c.l.getenv)
			if err != nil {
				m.Usable, m.Problem = false, err.Error()
				c.l.log.Warn("mcp server credential unusable", "mcp_server", r.ID, "slug", r.Slug, "problem", m.Problem)
			} else {
				m.AuthValue = snapshot.NewSecret(v)
			}
		}
		byID[r.ID] = m
		out = append(out, m)
	}
	for _, a := range approvals {
		if m := byID[a.MCPServerID]; m != nil {
			m.Approved[a.Tool] = a.Fingerprint
		}
	}
	return out
}
