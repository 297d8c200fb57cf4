package store

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// The store's rows: what its methods take and return. Each has the fields,
// in order, of the generated row it is converted from (Model(row)), so a
// column a migration adds fails to compile here until the row gains it.

// Team is a row of teams: it owns projects.
type Team struct {
	ID        uuid.UUID
	Slug      string
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Project is a row of projects: the unit usage is charged to, in one team.
type Project struct {
	ID        uuid.UUID
	TeamID    uuid.UUID
	Slug      string
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// User is a row of users: a person who signs in to the console or owns keys.
type User struct {
	ID           uuid.UUID
	Email        string
	Name         string
	PasswordHash *string
	Disabled     bool
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Group is a row of groups: users granted roles and policies together.
type Group struct {
	ID        uuid.UUID
	Slug      string
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// GroupMembership is a row of group_memberships: one user in one group.
type GroupMembership struct {
	GroupID   uuid.UUID
	UserID    uuid.UUID
	CreatedAt time.Time
}

// ServiceAccount is a row of service_accounts: a non-human owner of relay keys in a project.
type ServiceAccount struct {
	ID        uuid.UUID
	ProjectID uuid.UUID
	Slug      string
	Name      string
	PolicyID  *uuid.UUID
	CreatedAt time.Time
	UpdatedAt time.Time
}

// RateLimit is a row of rate_limits: a named set of rules.
type RateLimit struct {
	ID        uuid.UUID
	Slug      string
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// RateLimitRule is a row of rate_limit_rules: one meter, amount and window of a rate limit.
type RateLimitRule struct {
	ID            uuid.UUID
	RateLimitID   uuid.UUID
	Meter         string
	Amount        int64
	WindowSeconds int32
	PerPrincipal  bool
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Host is a row of hosts: an upstream provider endpoint.
type Host struct {
	ID                 uuid.UUID
	Slug               string
	Name               string
	Provider           string
	BaseURL            string
	Enabled            bool
	ConnectTimeoutMs   int32
	FirstByteTimeoutMs int32
	IdleTimeoutMs      int32
	TotalTimeoutMs     int32
	CreatedAt          time.Time
	UpdatedAt          time.Time
	// BreakerServerFailures and BreakerNetworkFailures: how many server
	// errors, network failures, in a row open a breaker of the host's keys;
	// nil takes the process setting (RELAY_BREAKER_*_FAILURES).
	BreakerServerFailures  *int32
	BreakerNetworkFailures *int32
	ForwardHeaders         []string // canonical header names forwarded beyond the shape's allow-list
	// Profile names the host's profile (package profile); '' is the plain
	// public API of the binding's shape. ProfileParams is its non-secret
	// parameters, a JSON object of strings.
	Profile       string
	ProfileParams json.RawMessage
}

// Model is a row of models: a model callers ask for by name.
type Model struct {
	ID               uuid.UUID
	Name             string
	Provider         string
	Kind             string
	ContextWindow    int32
	MaxOutputTokens  int32
	SupportsTools    bool
	SupportsVision   bool
	SupportsJSON     bool
	SupportsThinking bool
	CreatedAt        time.Time
	UpdatedAt        time.Time
	Strategy         string
	Fallbacks        []uuid.UUID
}

// Binding is a row of bindings: one model served by one host, with its prices.
type Binding struct {
	ID               uuid.UUID
	ModelID          uuid.UUID
	HostID           uuid.UUID
	Shape            string
	UpstreamModel    string
	Position         int32
	Enabled          bool
	InputPrice       int64
	OutputPrice      int64
	CachedInputPrice int64
	CacheWritePrice  int64
	ReasoningPrice   *int64
	PriceTiers       json.RawMessage
	CreatedAt        time.Time
	UpdatedAt        time.Time
	Weight           int32
	// UnitPrices is a JSON array of per-unit prices (images, seconds).
	UnitPrices json.RawMessage
}

// HostKey is a row of host_keys: one credential for a host, as an environment reference or ciphertext.
type HostKey struct {
	ID               uuid.UUID
	HostID           uuid.UUID
	Slug             string
	SecretRef        *string
	SecretCiphertext []byte
	SecretVersion    int32
	TierRateLimitID  *uuid.UUID
	Position         int32
	Enabled          bool
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Policy is a row of policies: what a relay key may use and how its requests are routed.
type Policy struct {
	ID                 uuid.UUID
	Slug               string
	Name               string
	AllModels          bool
	AllHostKeys        bool
	KeyStrategy        string
	RateLimitID        *uuid.UUID
	MaxWaitMs          int32
	Priority           int32
	MaxAttempts        int32
	LimiterFailureMode string
	CreatedAt          time.Time
	UpdatedAt          time.Time
	CapturePayloads    bool
	CaptureMaxBytes    int32
	RouteStrategy      string
	Affinity           string
	BudgetFallback     bool
	// TeamID is the team that owns the policy; nil for a system policy.
	TeamID *uuid.UUID
	// DegradeAfterMs and DegradeBelowPriority turn on degrading instead
	// of waiting (nil: off).
	DegradeAfterMs       *int32
	DegradeBelowPriority *int32
	// ResponseCache is the policy's response cache settings as stored
	// (migration 00014); nil when it is off.
	ResponseCache json.RawMessage
	// Guardrails is the policy's guardrail settings as stored (migration
	// 00018); nil when it has none.
	Guardrails json.RawMessage
	// MCPGrants are the MCP tool patterns the policy grants and
	// MCPRequireApproval withholds tools no operator approved (migration
	// 00019, docs/mcp.md).
	MCPGrants          []string
	MCPRequireApproval bool
}

// MCPServer is a row of mcp_servers: an MCP server Relay fronts at /mcp
// (Streamable HTTP). The auth header's value is write-only, like a host
// key's secret: an env reference or AES-256-GCM ciphertext.
type MCPServer struct {
	ID                   uuid.UUID
	Slug                 string
	Name                 string
	URL                  string
	Enabled              bool
	TimeoutMs            int32
	RateLimitID          *uuid.UUID
	AuthHeader           string
	AuthSecretRef        *string
	AuthSecretCiphertext []byte
	CreatedAt            time.Time
	UpdatedAt            time.Time
	// ToolRateLimits is a JSON object from a tool's name to the id of its
	// rate limit (migration 00025); nil writes {}.
	ToolRateLimits json.RawMessage
	// CallPrice is what each tools/call to the server costs, in
	// micro-units of currency (migration 00026).
	CallPrice int64
	// OAuth client credentials (migration 00028), the other credential: a
	// token fetched at OAuthTokenURL ("" for none) with the client_credentials
	// grant, the client secret write-only as AuthSecret* is.
	OAuthTokenURL               string
	OAuthClientID               string
	OAuthClientSecretRef        *string
	OAuthClientSecretCiphertext []byte
	OAuthScopes                 []string
	OAuthAudience               string
	OAuthResource               string
	OAuthAuthMethod             string // client_secret_basic or client_secret_post
	// ToolPrices is a JSON object from a tool's name or glob to its price
	// per call in micro-units, over CallPrice (migration 00029); nil writes {}.
	ToolPrices json.RawMessage
}

// MCPToolApproval is a row of mcp_tool_approvals: an operator's approval
// of one tool of an MCP server as it was seen (its fingerprint).
type MCPToolApproval struct {
	MCPServerID uuid.UUID
	Tool        string
	Fingerprint string
	ApprovedBy  string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// PolicyTeamShare is a row of policy_team_shares: a system policy a system
// admin has shared with a team, whose admins may then attach it.
type PolicyTeamShare struct {
	PolicyID  uuid.UUID
	TeamID    uuid.UUID
	CreatedAt time.Time
}

// HostKeyTeamShare is a row of host_key_team_shares: a host key a system
// admin has shared with a team, whose policies may then list it.
type HostKeyTeamShare struct {
	HostKeyID uuid.UUID
	TeamID    uuid.UUID
	CreatedAt time.Time
}

// PolicyModel is a row of policy_models: a model a policy grants.
type PolicyModel struct {
	PolicyID uuid.UUID
	ModelID  uuid.UUID
}

// PolicyHostKey is a row of policy_host_keys: a host key a policy grants.
type PolicyHostKey struct {
	PolicyID  uuid.UUID
	HostKeyID uuid.UUID
}

// PolicyModelRateLimit is a row of policy_model_rate_limits: the rate limit a policy applies to one model.
type PolicyModelRateLimit struct {
	PolicyID    uuid.UUID
	ModelID     uuid.UUID
	RateLimitID uuid.UUID
	Position    int32
}

// PolicyBinding is a row of policy_bindings: a policy for a subject in a project.
type PolicyBinding struct {
	ID               uuid.UUID
	ProjectID        uuid.UUID
	PolicyID         uuid.UUID
	ServiceAccountID *uuid.UUID
	UserID           *uuid.UUID
	GroupID          *uuid.UUID
	Position         int32
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// RelayKey is a row of relay_keys: a caller's key, stored as its hash.
type RelayKey struct {
	ID               uuid.UUID
	KeyHash          []byte
	DisplayPrefix    string
	Name             string
	ProjectID        uuid.UUID
	ServiceAccountID *uuid.UUID
	UserID           *uuid.UUID
	PolicyID         *uuid.UUID
	Priority         *int32
	ExpiresAt        *time.Time
	RevokedAt        *time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// InferenceToken is a row of inference_tokens: a user's short-lived token, stored as its hash.
type InferenceToken struct {
	ID        uuid.UUID
	TokenHash []byte
	UserID    uuid.UUID
	ProjectID uuid.UUID
	ExpiresAt time.Time
	RevokedAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Budget is a row of budgets: a spend cap on a team, a project or a relay key.
type Budget struct {
	ID         uuid.UUID
	TeamID     *uuid.UUID
	ProjectID  *uuid.UUID
	RelayKeyID *uuid.UUID
	Period     string
	Amount     int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// RoleBinding is a row of role_bindings: a role for a user or a group.
type RoleBinding struct {
	ID        uuid.UUID
	Role      string
	UserID    *uuid.UUID
	GroupID   *uuid.UUID
	TeamID    *uuid.UUID
	ProjectID *uuid.UUID
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Session is a row of sessions: a console sign-in, keyed by the hash of its token.
type Session struct {
	TokenHash []byte
	UserID    uuid.UUID
	CSRFToken string
	ExpiresAt time.Time
	CreatedAt time.Time
}

// AuditLog is a row of the audit log: who did what to which object, with the row before and after.
type AuditLog struct {
	ID       int64
	At       time.Time
	Actor    string
	Action   string
	Kind     string
	ObjectID string
	Before   json.RawMessage
	After    json.RawMessage
	// ClientAddr is where the write came from (WithClientAddr); nil when
	// no request made it.
	ClientAddr *string
}

// UsageEvent is a row of the usage ledger: one request.
type UsageEvent struct {
	RequestID        string
	CreatedAt        time.Time
	RelayKeyID       *uuid.UUID
	ServiceAccountID *uuid.UUID
	UserID           *uuid.UUID
	ProjectID        *uuid.UUID
	TeamID           *uuid.UUID
	PolicyID         *uuid.UUID
	Model            string
	BindingID        *uuid.UUID
	HostID           *uuid.UUID
	HostKeyID        *uuid.UUID
	InboundShape     string
	UpstreamShape    string
	Stream           bool
	Status           int32
	ErrorKind        string
	Attempts         int32
	InputTokens      int64
	OutputTokens     int64
	CachedReadTokens int64
	CacheWriteTokens int64
	ReasoningTokens  int64
	Cost             int64
	TTFBMs           int32
	TotalMs          int32
	OverheadUs       int32
	InferenceTokenID *uuid.UUID
	ClientRequestID  *string
	Route            *string
	RouteDetail      json.RawMessage
	Saved            int64
	// RouteDetailZ is how the ledger stores RouteDetail (migration 00020):
	// always nil in what the store reads back or is given; the store packs
	// and unpacks it.
	RouteDetailZ []byte
}
