package controlapi

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store"
	gen "github.com/relay-llm/relay/openapi/controlgen"
)

// Rows to API models. None of these copies a secret: host keys show where
// their secret lives, never the value; relay keys and inference tokens show
// neither their hash nor their secret; users show has_password.

func hostOut(r store.Host) gen.Host {
	return gen.Host{
		ID: r.ID, Slug: r.Slug, Name: r.Name, Provider: gen.Provider(r.Provider), BaseURL: r.BaseURL,
		Enabled: r.Enabled, ConnectTimeoutMs: r.ConnectTimeoutMs, FirstByteTimeoutMs: r.FirstByteTimeoutMs,
		IdleTimeoutMs: r.IdleTimeoutMs, TotalTimeoutMs: r.TotalTimeoutMs, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func modelOut(r store.Model) gen.Model {
	return gen.Model{
		ID: r.ID, Name: r.Name, Provider: r.Provider, Kind: gen.ModelKind(r.Kind), ContextWindow: r.ContextWindow,
		MaxOutputTokens: r.MaxOutputTokens, SupportsTools: r.SupportsTools, SupportsVision: r.SupportsVision,
		SupportsJSON: r.SupportsJSON, SupportsThinking: r.SupportsThinking, Strategy: gen.ModelRouteStrategy(r.Strategy),
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

func bindingOut(r store.Binding) gen.Binding {
	tiers := []gen.PriceTier{}
	if len(r.PriceTiers) > 0 {
		// Written by this API from validated tiers; a row that does not decode
		// (edited by hand) shows no tiers rather than failing the read.
		if err := json.Unmarshal(r.PriceTiers, &tiers); err != nil || tiers == nil {
			tiers = []gen.PriceTier{}
		}
	}
	return gen.Binding{
		ID: r.ID, ModelID: r.ModelID, HostID: r.HostID, Shape: gen.Shape(r.Shape), UpstreamModel: r.UpstreamModel,
		Position: r.Position, Weight: r.Weight, Enabled: r.Enabled, InputPrice: r.InputPrice, OutputPrice: r.OutputPrice,
		CachedInputPrice: r.CachedInputPrice, CacheWritePrice: r.CacheWritePrice, ReasoningPrice: r.ReasoningPrice,
		PriceTiers: tiers, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func hostKeyOut(r store.HostKey) gen.HostKey {
	src := gen.SecretSourceSealed
	if r.SecretRef != nil {
		src = gen.SecretSourceEnv
	}
	return gen.HostKey{
		ID: r.ID, HostID: r.HostID, Slug: r.Slug, SecretSource: src, SecretRef: r.SecretRef,
		SecretVersion: r.SecretVersion, TierRateLimitID: r.TierRateLimitID, Position: r.Position,
		Enabled: r.Enabled, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func rateLimitOut(r store.RateLimit, rules []store.RateLimitRule) gen.RateLimit {
	return gen.RateLimit{
		ID: r.ID, Slug: r.Slug, Name: r.Name, Rules: convertAll(rules, ruleOut),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func ruleOut(r store.RateLimitRule) gen.RateLimitRule {
	return gen.RateLimitRule{
		ID: r.ID, RateLimitID: r.RateLimitID, Meter: gen.Meter(r.Meter), Amount: r.Amount,
		WindowSeconds: r.WindowSeconds, PerPrincipal: r.PerPrincipal, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func policyOut(r store.Policy) gen.Policy {
	return gen.Policy{
		ID: r.ID, Slug: r.Slug, Name: r.Name, AllModels: r.AllModels, AllHostKeys: r.AllHostKeys,
		KeyStrategy: gen.KeyStrategy(r.KeyStrategy), RateLimitID: r.RateLimitID, MaxWaitMs: r.MaxWaitMs,
		Priority: r.Priority, MaxAttempts: r.MaxAttempts, LimiterFailureMode: gen.LimiterFailureMode(r.LimiterFailureMode),
		CapturePayloads: r.CapturePayloads, CaptureMaxBytes: r.CaptureMaxBytes,
		RouteStrategy: gen.PolicyRouteStrategy(r.RouteStrategy), Affinity: gen.RouteAffinity(r.Affinity),
		BudgetFallback: r.BudgetFallback, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func policyModelOut(r store.PolicyModel) gen.PolicyModelGrant {
	return gen.PolicyModelGrant{PolicyID: r.PolicyID, ModelID: r.ModelID}
}

func policyHostKeyOut(r store.PolicyHostKey) gen.PolicyHostKeyGrant {
	return gen.PolicyHostKeyGrant{PolicyID: r.PolicyID, HostKeyID: r.HostKeyID}
}

func policyModelRateLimitOut(r store.PolicyModelRateLimit) gen.PolicyModelRateLimit {
	return gen.PolicyModelRateLimit{PolicyID: r.PolicyID, ModelID: r.ModelID, RateLimitID: r.RateLimitID, Position: r.Position}
}

func policyBindingOut(r store.PolicyBinding) gen.PolicyBinding {
	return gen.PolicyBinding{
		ID: r.ID, ProjectID: r.ProjectID, PolicyID: r.PolicyID, ServiceAccountID: r.ServiceAccountID,
		UserID: r.UserID, GroupID: r.GroupID, Position: r.Position, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func teamOut(r store.Team) gen.Team {
	return gen.Team{ID: r.ID, Slug: r.Slug, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func projectOut(r store.Project) gen.Project {
	return gen.Project{ID: r.ID, TeamID: r.TeamID, Slug: r.Slug, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func serviceAccountOut(r store.ServiceAccount) gen.ServiceAccount {
	return gen.ServiceAccount{
		ID: r.ID, ProjectID: r.ProjectID, Slug: r.Slug, Name: r.Name, PolicyID: r.PolicyID,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func userOut(r store.User) gen.User {
	return gen.User{
		ID: r.ID, Email: gen.Email(r.Email), Name: r.Name, Disabled: r.Disabled,
		HasPassword: r.PasswordHash != nil && *r.PasswordHash != "", CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func groupOut(r store.Group) gen.Group {
	return gen.Group{ID: r.ID, Slug: r.Slug, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func memberOut(r store.GroupMembership) gen.GroupMember {
	return gen.GroupMember{GroupID: r.GroupID, UserID: r.UserID, CreatedAt: r.CreatedAt}
}

func roleBindingOut(r store.RoleBinding) gen.RoleBinding {
	return gen.RoleBinding{
		ID: r.ID, Role: gen.Role(r.Role), UserID: r.UserID, GroupID: r.GroupID, TeamID: r.TeamID,
		ProjectID: r.ProjectID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func budgetOut(r store.Budget) gen.Budget {
	return gen.Budget{
		ID: r.ID, TeamID: r.TeamID, ProjectID: r.ProjectID, RelayKeyID: r.RelayKeyID,
		Period: gen.Period(r.Period), Amount: r.Amount, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// credentialStatus is whether a relay key or inference token works at now.
// A revocation time in the future (a grace period) still works.
func credentialStatus(now time.Time, expires, revoked *time.Time) gen.CredentialStatus {
	switch {
	case revoked != nil && !now.Before(*revoked):
		return gen.CredentialStatusRevoked
	case expires != nil && !now.Before(*expires):
		return gen.CredentialStatusExpired
	default:
		return gen.CredentialStatusActive
	}
}

func (s *Server) relayKeyOut(r store.RelayKey) gen.RelayKey {
	return gen.RelayKey{
		ID: r.ID, Name: r.Name, DisplayPrefix: r.DisplayPrefix, ProjectID: r.ProjectID,
		ServiceAccountID: r.ServiceAccountID, UserID: r.UserID, PolicyID: r.PolicyID, Priority: r.Priority,
		ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt, Status: credentialStatus(s.now(), r.ExpiresAt, r.RevokedAt),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func (s *Server) inferenceTokenOut(r store.InferenceToken) gen.InferenceToken {
	return gen.InferenceToken{
		ID: r.ID, UserID: r.UserID, ProjectID: r.ProjectID, ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt,
		Status: credentialStatus(s.now(), &r.ExpiresAt, r.RevokedAt), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}
