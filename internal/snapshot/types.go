package snapshot

import (
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/wire"
)

// ID identifies a row. It is the row's UUID primary key.
type ID = uuid.UUID

// Secret holds a decrypted host key. It never prints, logs or marshals its
// value; only Reveal gives it out, and only the proxy calls Reveal.
type Secret struct{ v string }

// NewSecret wraps a plaintext credential.
func NewSecret(v string) Secret { return Secret{v: v} }

// Reveal returns the plaintext, for the upstream request header only.
func (s Secret) Reveal() string { return s.v }

// Empty reports whether there is no credential.
func (s Secret) Empty() bool { return s.v == "" }

// String implements fmt.Stringer without the value.
func (s Secret) String() string { return "[redacted]" }

// GoString implements fmt.GoStringer without the value.
func (s Secret) GoString() string { return "[redacted]" }

// LogValue implements slog.LogValuer without the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// MarshalText implements encoding.TextMarshaler without the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// Team is a tenancy root.
type Team struct {
	ID   ID
	Slug string
	Name string
}

// Project belongs to a team and holds service accounts, keys and policy bindings.
type Project struct {
	ID     ID
	TeamID ID
	Slug   string
	Name   string
}

// User is a person who signs in to the control plane and may own relay keys.
type User struct {
	ID       ID
	Email    string
	Name     string
	Disabled bool
}

// Group is a set of users; Members holds their IDs.
type Group struct {
	ID      ID
	Slug    string
	Members map[ID]struct{}
}

// ServiceAccount is a non-human principal inside a project.
type ServiceAccount struct {
	ID        ID
	ProjectID ID
	Slug      string
	PolicyID  ID // uuid.Nil when it has none
}

// Meter is what a rate-limit rule counts.
type Meter string

// Meters of a rate-limit rule.
const (
	MeterRequests     Meter = "requests"
	MeterInputTokens  Meter = "input_tokens"
	MeterOutputTokens Meter = "output_tokens"
	MeterTotalTokens  Meter = "total_tokens"
	MeterConcurrency  Meter = "concurrency"
)

// Rule is one meter of a rate limit.
type Rule struct {
	ID           ID
	RateLimitID  ID
	Meter        Meter
	Amount       int64
	Window       time.Duration
	PerPrincipal bool
}

// RateLimit is a named rule set.
type RateLimit struct {
	ID    ID
	Slug  string
	Rules []*Rule // ordered by meter, then window
}

// Host is an upstream endpoint.
type Host struct {
	ID               ID
	Slug             string
	Name             string
	Provider         string
	BaseURL          string
	Enabled          bool
	ConnectTimeout   time.Duration
	FirstByteTimeout time.Duration
	IdleTimeout      time.Duration
	TotalTimeout     time.Duration
	// ForwardHeaders are the caller's headers, canonical names, the
	// operator lets through to this host beyond what the binding's shape
	// forwards (wire.ForwardsHeader); wire.CheckForwardHeaders vetted them.
	ForwardHeaders []string
	// BreakerServerFailures and BreakerNetworkFailures are how many server
	// errors, network failures, in a row open a breaker of one of the
	// host's keys; 0 takes the process setting (keypool.BreakerConfig).
	BreakerServerFailures  int
	BreakerNetworkFailures int
	// Profile names the host's profile (package profile): how Relay
	// addresses and authenticates it beyond the binding's shape; "" is the
	// shape's plain public API. ProfileParams are its non-secret
	// parameters (region, api_version, project …); never nil.
	Profile       string
	ProfileParams map[string]string
}

// Model is a catalog entry.
type Model struct {
	ID               ID
	Name             string
	Provider         string
	Kind             string // "chat", "embedding", "image", "audio", "moderation" or "rerank" (wire.Inbound.ModelKind)
	ContextWindow    int
	MaxOutputTokens  int
	SupportsTools    bool
	SupportsVision   bool
	SupportsJSON     bool
	SupportsThinking bool
	// Strategy orders the model's bindings; "" is RoutePriority. A
	// policy's RouteStrategy overrides it.
	Strategy RouteStrategy
	// Fallbacks are other models, in order, that serve a request when
	// every binding of this one failed before the first byte (or a
	// budget refused it and the policy allows BudgetFallback).
	Fallbacks []ID
	CreatedAt time.Time
}

// RouteStrategy is how the router orders a model's bindings.
type RouteStrategy string

// Routing strategies.
const (
	RoutePriority  RouteStrategy = "priority"   // binding position
	RouteWeighted  RouteStrategy = "weighted"   // at random, by Binding.Weight
	RouteCost      RouteStrategy = "cost"       // lowest estimated cost first
	RouteLatency   RouteStrategy = "latency"    // lowest time to first byte (live EWMA) first
	RouteLeastBusy RouteStrategy = "least_busy" // fewest requests in flight first
)

// Affinity is how a policy keeps one session on one host key, so that
// the provider's prompt cache keeps serving it.
type Affinity string

// Affinity modes.
const (
	AffinityKey     Affinity = "key"     // default: a session keeps its host key within a binding
	AffinityBinding Affinity = "binding" // and its binding among the model's equals
	AffinityOff     Affinity = "off"
)

// PriceTier replaces the base prices when a request's input exceeds AboveInputTokens.
type PriceTier struct {
	AboveInputTokens int64 `json:"above_input_tokens"`
	InputPrice       int64 `json:"input_price"`
	OutputPrice      int64 `json:"output_price"`
	CachedInputPrice int64 `json:"cached_input_price"`
	CacheWritePrice  int64 `json:"cache_write_price"`
}

// Units a binding may bill per unit rather than per token.
const (
	UnitImage  = "image"  // one image generated
	UnitSecond = "second" // one second of audio
)

// UnitPrice is a price per unit, in micro-units of currency: an image of a
// size and quality ("" matches any), or a second of audio.
type UnitPrice struct {
	Unit    string `json:"unit"`
	Size    string `json:"size,omitempty"`
	Quality string `json:"quality,omitempty"`
	Price   int64  `json:"price"`
}

// Pricing is in micro-units of currency per million tokens, and per unit
// for Units.
type Pricing struct {
	Input       int64
	Output      int64
	CachedInput int64
	CacheWrite  int64
	Reasoning   int64 // equals Output when the binding sets none
	Tiers       []PriceTier
	Units       []UnitPrice
}

// Binding joins a model and a host.
type Binding struct {
	ID            ID
	ModelID       ID
	HostID        ID
	Shape         wire.Shape
	UpstreamModel string
	Position      int
	Enabled       bool
	Pricing       Pricing
	// Weight is the binding's share under RouteWeighted (1 when unset).
	Weight int
}

// HostKey is a provider credential with its decrypted secret. Usable is
// false when the secret could not be resolved (missing environment variable,
// wrong master key); Problem then says why, without the value.
type HostKey struct {
	ID              ID
	HostID          ID
	Slug            string
	Secret          Secret
	SecretVersion   int
	TierRateLimitID ID // uuid.Nil when none
	Position        int
	Enabled         bool
	Usable          bool
	Problem         string
}

// KeyStrategy is how a policy picks among usable host keys.
type KeyStrategy string

// Key selection strategies.
const (
	StrategyPrioritized       KeyStrategy = "prioritized"
	StrategyRoundRobin        KeyStrategy = "round_robin"
	StrategyLeastRecentlyUsed KeyStrategy = "least_recently_used"
)

// ModelRateLimit binds a rate limit to one model within a policy.
type ModelRateLimit struct {
	ModelID     ID
	RateLimitID ID
	Position    int
}

// Policy says which models a caller reaches, which host keys it spends and
// which limits apply.
type Policy struct {
	ID                 ID
	Slug               string
	AllModels          bool
	AllHostKeys        bool
	Models             map[ID]struct{}
	HostKeys           map[ID]struct{}
	KeyStrategy        KeyStrategy
	RateLimitID        ID // uuid.Nil when none
	ModelRateLimits    []ModelRateLimit
	MaxWait            time.Duration
	Priority           int
	MaxAttempts        int
	LimiterFailureMode string // "open" or "closed"
	// RouteStrategy overrides the models' own strategies; "" keeps them.
	RouteStrategy RouteStrategy
	// Affinity is "" (AffinityKey), or another Affinity mode.
	Affinity Affinity
	// BudgetFallback routes a request a budget refuses to the model's
	// first fallback whose estimate fits, instead of refusing it.
	BudgetFallback bool
	// Degrade instead of wait (docs/rate-limits.md): a request that would
	// wait for its rate limit longer than DegradeAfter (when
	// HasDegradeAfter; 0 is any wait), or whose priority is below
	// DegradeBelowPriority (when HasDegradeBelow) and would wait at all,
	// is served by its model's first cheaper fallback instead.
	DegradeAfter         time.Duration
	HasDegradeAfter      bool
	DegradeBelowPriority int
	HasDegradeBelow      bool
	// CapturePayloads turns on payload capture: the request and response
	// bodies of its requests, each up to CaptureMaxBytes, are stored apart
	// (docs/observability.md).
	CapturePayloads bool
	CaptureMaxBytes int
	// Cache is the policy's exact response cache; nil: off.
	Cache *ResponseCache
	// MCPGrants are the MCP tool patterns the policy grants (docs/mcp.md);
	// MCPRequireApproval withholds tools no operator has approved yet.
	MCPGrants          []string
	MCPRequireApproval bool
	// Guardrails are the policy's compiled guardrails (docs/guardrails.md);
	// nil: none.
	Guardrails *guardrail.Policy
}

// ResponseCache is a policy's exact response cache (docs/caching.md): which
// of its models' answers are kept, in what scope, for how long.
type ResponseCache struct {
	// Models are the models whose answers are cached; nil: every model the
	// policy grants.
	Models map[ID]struct{}
	// Scope narrows who shares an entry within the project.
	Scope CacheScope
	// ScopeHeader is the request header whose value is the scope when
	// Scope is CacheScopeHeader.
	ScopeHeader string
	// TTL is how long an entry answers.
	TTL time.Duration
	// MaxEntryBytes is the largest answer kept.
	MaxEntryBytes int
	// Nondeterministic caches requests that sample (temperature above 0,
	// or unset, without a seed) and answers that call tools.
	Nondeterministic bool
	// Semantic are the semantic cache's domains, in the order a request
	// is matched against them (the first that takes it); nil: exact only.
	Semantic []SemanticDomain
}

// Caches reports whether the cache keeps answers of the model.
func (c *ResponseCache) Caches(model ID) bool {
	if c == nil {
		return false
	}
	if c.Models == nil {
		return true
	}
	_, ok := c.Models[model]
	return ok
}

// CacheScope is who shares a response cache entry. Every scope lies within
// one project: two projects never share an entry.
type CacheScope string

// Cache scopes.
const (
	CacheScopeProject  CacheScope = "project"   // every caller of the project
	CacheScopeRelayKey CacheScope = "relay_key" // one relay key (or inference token)
	CacheScopeHeader   CacheScope = "header"    // callers that send the same ScopeHeader value
)

// GrantsModel reports whether the policy grants the model.
func (p *Policy) GrantsModel(id ID) bool {
	if p.AllModels {
		return true
	}
	_, ok := p.Models[id]
	return ok
}

// GrantsHostKey reports whether the policy lets its requests spend the host key.
func (p *Policy) GrantsHostKey(id ID) bool {
	if p.AllHostKeys {
		return true
	}
	_, ok := p.HostKeys[id]
	return ok
}

// Degrades reports whether the policy may degrade a request of priority
// prio instead of letting it wait, and if so how long it may wait on the
// model it asked for first (0: not at all).
func (p *Policy) Degrades(prio int) (time.Duration, bool) {
	switch {
	case p.HasDegradeBelow && prio < p.DegradeBelowPriority:
		return 0, true
	case p.HasDegradeAfter:
		return p.DegradeAfter, true
	}
	return 0, false
}

// RateLimitFor returns the rate limit that applies to a model: the first
// per-model entry for it, else the policy's own.
func (p *Policy) RateLimitFor(model ID) ID {
	for i := range p.ModelRateLimits {
		if p.ModelRateLimits[i].ModelID == model {
			return p.ModelRateLimits[i].RateLimitID
		}
	}
	return p.RateLimitID
}

// SubjectKind is what a policy binding binds.
type SubjectKind string

// Subjects of a policy binding.
const (
	SubjectServiceAccount SubjectKind = "service_account"
	SubjectUser           SubjectKind = "user"
	SubjectGroup          SubjectKind = "group"
)

// PolicyBinding binds a subject to a policy within a project.
type PolicyBinding struct {
	ID          ID
	ProjectID   ID
	PolicyID    ID
	SubjectKind SubjectKind
	SubjectID   ID
	Position    int
}

// RelayKey is a long-lived caller credential, known only by its hash.
type RelayKey struct {
	ID               ID
	Hash             [32]byte
	DisplayPrefix    string
	Name             string
	ProjectID        ID
	ServiceAccountID ID // uuid.Nil for a user's key
	UserID           ID // uuid.Nil for a service account's key
	PolicyID         ID // uuid.Nil when it names none
	Priority         int
	HasPriority      bool
	ExpiresAt        time.Time // zero: never
	RevokedAt        time.Time // zero: not revoked
}

// InferenceToken is a short-lived credential for a signed-in user in one project.
type InferenceToken struct {
	ID        ID
	Hash      [32]byte
	UserID    ID
	ProjectID ID
	ExpiresAt time.Time
	RevokedAt time.Time
}

// Budget caps spend (micro-units of currency) per day or month.
type Budget struct {
	ID         ID
	TeamID     ID
	ProjectID  ID
	RelayKeyID ID
	Period     string // "day" or "month"
	Amount     int64
}
