package controlapi

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/profile"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/wire"
)

// Rows to API models. None of these copies a secret: host keys show where
// their secret lives, never the value; relay keys and inference tokens show
// neither their hash nor their secret; users show has_password.

func hostOut(r store.Host) models.Host {
	return models.Host{
		ID: r.ID, Slug: r.Slug, Name: r.Name, Provider: models.Provider(r.Provider), BaseURL: r.BaseURL,
		Enabled: r.Enabled, ConnectTimeoutMs: r.ConnectTimeoutMs, FirstByteTimeoutMs: r.FirstByteTimeoutMs,
		IdleTimeoutMs: r.IdleTimeoutMs, TotalTimeoutMs: r.TotalTimeoutMs, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		ForwardHeaders:        forwardHeadersOut(r.ForwardHeaders),
		BreakerServerFailures: r.BreakerServerFailures, BreakerNetworkFailures: r.BreakerNetworkFailures,
		Profile: r.Profile, ProfileParams: profileParamsOut(r.ProfileParams),
	}
}

// profileParamsOut is a host's profile parameters; never null on the wire.
func profileParamsOut(raw json.RawMessage) map[string]string {
	out := map[string]string{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &out)
	}
	return out
}

// profileIn vets a host's profile and its parameters against the
// registry (profile.Check): an unknown profile or parameter, a missing
// required one or a bad value is a 400 naming it. A token_url goes through
// the egress rule like a base URL.
func (s *Server) profileIn(ctx context.Context, name string, params *models.ProfileParams) (string, json.RawMessage, error) {
	p := map[string]string{}
	if params != nil {
		p = *params
	}
	if err := profile.Check(name, p); err != nil {
		var ce *profile.CheckError
		if errors.As(err, &ce) {
			return "", nil, badRequest(ce.Error(), detail(ce.Field, ce.Message))
		}
		return "", nil, badRequest(err.Error())
	}
	if u := p["token_url"]; u != "" {
		if err := s.cfg.Egress.CheckURL(ctx, u, nil); err != nil {
			return "", nil, invalid("profile_params.token_url: "+err.Error(), "profile_params.token_url")
		}
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return "", nil, err
	}
	return name, raw, nil
}

// forwardHeadersOut is never null on the wire.
func forwardHeadersOut(h []string) []string {
	if h == nil {
		return []string{}
	}
	return h
}

// forwardHeadersIn vets a host's forward_headers (wire.CheckForwardHeaders):
// a header that carries credentials or selects billing is refused with 400.
func forwardHeadersIn(h *models.ForwardHeaders) ([]string, error) {
	if h == nil {
		return []string{}, nil
	}
	out, err := wire.CheckForwardHeaders(*h)
	if err != nil {
		return nil, badRequest(err.Error(), detail("forward_headers", err.Error()))
	}
	return out, nil
}

func modelOut(r store.Model) models.Model {
	return models.Model{
		ID: r.ID, Name: r.Name, Provider: r.Provider, Kind: models.ModelKind(r.Kind), ContextWindow: r.ContextWindow,
		MaxOutputTokens: r.MaxOutputTokens, SupportsTools: r.SupportsTools, SupportsVision: r.SupportsVision,
		SupportsJSON: r.SupportsJSON, SupportsThinking: r.SupportsThinking, Strategy: models.ModelRouteStrategy(r.Strategy),
		Fallbacks: nonNilIDs(r.Fallbacks), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// nonNilIDs is ids, or an empty list for nil (the API's lists are never null).
func nonNilIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}

func bindingOut(r store.Binding) models.Binding {
	tiers := []models.PriceTier{}
	if len(r.PriceTiers) > 0 {
		// Written by this API from validated tiers; a row that does not decode
		// (edited by hand) shows no tiers rather than failing the read.
		if err := json.Unmarshal(r.PriceTiers, &tiers); err != nil || tiers == nil {
			tiers = []models.PriceTier{}
		}
	}
	units := []models.UnitPrice{}
	if len(r.UnitPrices) > 0 {
		if err := json.Unmarshal(r.UnitPrices, &units); err != nil || units == nil {
			units = []models.UnitPrice{}
		}
	}
	return models.Binding{
		ID: r.ID, ModelID: r.ModelID, HostID: r.HostID, Shape: models.Shape(r.Shape), UpstreamModel: r.UpstreamModel,
		Position: r.Position, Weight: r.Weight, Enabled: r.Enabled, InputPrice: r.InputPrice, OutputPrice: r.OutputPrice,
		CachedInputPrice: r.CachedInputPrice, CacheWritePrice: r.CacheWritePrice, ReasoningPrice: r.ReasoningPrice,
		PriceTiers: tiers, UnitPrices: units, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func hostKeyOut(r store.HostKey) models.HostKey {
	src := models.SecretSourceSealed
	if r.SecretRef != nil {
		src = models.SecretSourceEnv
	}
	return models.HostKey{
		ID: r.ID, HostID: r.HostID, Slug: r.Slug, SecretSource: src, SecretRef: r.SecretRef,
		SecretVersion: r.SecretVersion, TierRateLimitID: r.TierRateLimitID, Position: r.Position,
		Enabled: r.Enabled, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func rateLimitOut(r store.RateLimit, rules []store.RateLimitRule) models.RateLimit {
	return models.RateLimit{
		ID: r.ID, Slug: r.Slug, Name: r.Name, Rules: convertAll(rules, ruleOut),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func ruleOut(r store.RateLimitRule) models.RateLimitRule {
	return models.RateLimitRule{
		ID: r.ID, RateLimitID: r.RateLimitID, Meter: models.Meter(r.Meter), Amount: r.Amount,
		WindowSeconds: r.WindowSeconds, PerPrincipal: r.PerPrincipal, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func policyOut(r store.Policy) models.Policy {
	grants := r.MCPGrants
	if grants == nil {
		grants = []string{}
	}
	return models.Policy{
		ID: r.ID, Slug: r.Slug, Name: r.Name, AllModels: r.AllModels, AllHostKeys: r.AllHostKeys,
		KeyStrategy: models.KeyStrategy(r.KeyStrategy), RateLimitID: r.RateLimitID, MaxWaitMs: r.MaxWaitMs,
		Priority: r.Priority, MaxAttempts: r.MaxAttempts, LimiterFailureMode: models.LimiterFailureMode(r.LimiterFailureMode),
		CapturePayloads: r.CapturePayloads, CaptureMaxBytes: r.CaptureMaxBytes,
		RouteStrategy: models.PolicyRouteStrategy(r.RouteStrategy), Affinity: models.RouteAffinity(r.Affinity),
		BudgetFallback: r.BudgetFallback, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, TeamID: r.TeamID,
		DegradeAfterMs: r.DegradeAfterMs, DegradeBelowPriority: r.DegradeBelowPriority,
		ResponseCache: responseCacheOut(r.ResponseCache),
		Guardrails:    guardrailsOut(r.Guardrails),
		McpGrants:     &grants, McpRequireApproval: &r.MCPRequireApproval,
	}
}

func policyModelOut(r store.PolicyModel) models.PolicyModelGrant {
	return models.PolicyModelGrant{PolicyID: r.PolicyID, ModelID: r.ModelID}
}

func policyHostKeyOut(r store.PolicyHostKey) models.PolicyHostKeyGrant {
	return models.PolicyHostKeyGrant{PolicyID: r.PolicyID, HostKeyID: r.HostKeyID}
}

func policyModelRateLimitOut(r store.PolicyModelRateLimit) models.PolicyModelRateLimit {
	return models.PolicyModelRateLimit{PolicyID: r.PolicyID, ModelID: r.ModelID, RateLimitID: r.RateLimitID, Position: r.Position}
}

func policyBindingOut(r store.PolicyBinding) models.PolicyBinding {
	return models.PolicyBinding{
		ID: r.ID, ProjectID: r.ProjectID, PolicyID: r.PolicyID, ServiceAccountID: r.ServiceAccountID,
		UserID: r.UserID, GroupID: r.GroupID, Position: r.Position, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func teamOut(r store.Team) models.Team {
	return models.Team{ID: r.ID, Slug: r.Slug, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func projectOut(r store.Project) models.Project {
	return models.Project{ID: r.ID, TeamID: r.TeamID, Slug: r.Slug, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func serviceAccountOut(r store.ServiceAccount) models.ServiceAccount {
	return models.ServiceAccount{
		ID: r.ID, ProjectID: r.ProjectID, Slug: r.Slug, Name: r.Name, PolicyID: r.PolicyID,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func userOut(r store.User) models.User {
	return models.User{
		ID: r.ID, Email: models.Email(r.Email), Name: r.Name, Disabled: r.Disabled,
		HasPassword: r.PasswordHash != nil && *r.PasswordHash != "", CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func groupOut(r store.Group) models.Group {
	return models.Group{ID: r.ID, Slug: r.Slug, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func memberOut(r store.GroupMembership) models.GroupMember {
	return models.GroupMember{GroupID: r.GroupID, UserID: r.UserID, CreatedAt: r.CreatedAt}
}

func roleBindingOut(r store.RoleBinding) models.RoleBinding {
	return models.RoleBinding{
		ID: r.ID, Role: models.Role(r.Role), UserID: r.UserID, GroupID: r.GroupID, TeamID: r.TeamID,
		ProjectID: r.ProjectID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func budgetOut(r store.Budget) models.Budget {
	return models.Budget{
		ID: r.ID, TeamID: r.TeamID, ProjectID: r.ProjectID, RelayKeyID: r.RelayKeyID,
		Period: models.Period(r.Period), Amount: r.Amount, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// credentialStatus is whether a relay key or inference token works at now.
// A revocation time in the future (a grace period) still works.
func credentialStatus(now time.Time, expires, revoked *time.Time) models.CredentialStatus {
	switch {
	case revoked != nil && !now.Before(*revoked):
		return models.CredentialStatusRevoked
	case expires != nil && !now.Before(*expires):
		return models.CredentialStatusExpired
	default:
		return models.CredentialStatusActive
	}
}

func (s *Server) relayKeyOut(r store.RelayKey) models.RelayKey {
	return models.RelayKey{
		ID: r.ID, Name: r.Name, DisplayPrefix: r.DisplayPrefix, ProjectID: r.ProjectID,
		ServiceAccountID: r.ServiceAccountID, UserID: r.UserID, PolicyID: r.PolicyID, Priority: r.Priority,
		ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt, Status: credentialStatus(s.now(), r.ExpiresAt, r.RevokedAt),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func (s *Server) inferenceTokenOut(r store.InferenceToken) models.InferenceToken {
	return models.InferenceToken{
		ID: r.ID, UserID: r.UserID, ProjectID: r.ProjectID, ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt,
		Status: credentialStatus(s.now(), &r.ExpiresAt, r.RevokedAt), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}
