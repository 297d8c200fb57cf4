package configfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/textproto"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Kind is a document kind. The constants are in dependency order: apply
// creates and updates in this order and deletes in the reverse one.
//
// The order differs from a plain "catalog, then tenancy" reading in one
// place: policy bindings come after groups and users, because a policy
// binding may name a user or a group as its subject.
type Kind int

const (
	KindTeam Kind = iota
	KindProject
	KindRateLimit
	KindHost
	KindModel
	KindBinding
	KindHostKey
	KindMCPServer
	KindPolicy
	KindServiceAccount
	KindGroup
	KindUser
	KindPolicyBinding
	KindRoleBinding
	KindBudget
	numKinds
)

var kindNames = [numKinds]string{
	"Team", "Project", "RateLimit", "Host", "Model", "Binding", "HostKey", "MCPServer", "Policy",
	"ServiceAccount", "Group", "User", "PolicyBinding", "RoleBinding", "Budget",
}

func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// ParseKind returns the kind named s (as written in a document's `kind`).
func ParseKind(s string) (Kind, bool) {
	i := slices.Index(kindNames[:], s)
	return Kind(i), i >= 0
}

// Kinds returns every kind, in dependency order.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// spec is the body of one document, one struct per kind. The structs hold
// the canonical form both of what a file asks for and of what the control
// plane has: references are natural keys, sets are sorted, and a field left
// out of a document holds its default (the API's default on create), so a
// plain field-by-field comparison is the diff.
//
// Struct tags: `yaml` names the field in documents; `cfg:"key"` marks the
// fields that identify the object (never diffed: another value is another
// object), `cfg:"set"` a list compared as a set, `cfg:"secret"` a field that
// is never exported nor compared.
type spec interface {
	// key is the object's identity within its kind, also its name in a plan.
	key() string
	// refs lists the objects the spec names.
	refs() []ref
	// check reports what the document format itself rules out (a missing
	// natural key, two subjects); the API's rules are checked against its
	// spec before anything is written.
	check() error
	// normalize puts the spec in canonical form after decoding.
	normalize()
}

// ref is a reference from one object to another by natural key.
type ref struct {
	field string
	kind  Kind
	key   string
	// cascade: deleting the target deletes the referring object too (the
	// schema's ON DELETE CASCADE), which a plan shows.
	cascade bool
	// restrict: Relay refuses to delete the target while this object names
	// it (ON DELETE RESTRICT), which a plan foresees.
	restrict bool
}

// newSpec returns an empty spec of kind k with every field at its default.
func newSpec(k Kind) spec {
	switch k {
	case KindTeam:
		return &TeamSpec{}
	case KindProject:
		return &ProjectSpec{}
	case KindRateLimit:
		return &RateLimitSpec{}
	case KindHost:
		return &HostSpec{Enabled: true, ConnectTimeoutMs: 5000, FirstByteTimeoutMs: 60000, IdleTimeoutMs: 60000, TotalTimeoutMs: 600000}
	case KindModel:
		return &ModelSpec{Kind: "chat", MaxOutputTokens: 4096, SupportsTools: true, SupportsJSON: true, Strategy: "priority"}
	case KindBinding:
		return &BindingSpec{Enabled: true, Weight: 1}
	case KindHostKey:
		return &HostKeySpec{Enabled: true}
	case KindMCPServer:
		return &MCPServerSpec{Enabled: true, TimeoutMs: 60000}
	case KindPolicy:
		return &PolicySpec{KeyStrategy: "prioritized", MaxAttempts: 3, LimiterFailureMode: "open", Affinity: "key"}
	case KindServiceAccount:
		return &ServiceAccountSpec{}
	case KindGroup:
		return &GroupSpec{}
	case KindUser:
		return &UserSpec{}
	case KindPolicyBinding:
		return &PolicyBindingSpec{}
	case KindRoleBinding:
		return &RoleBindingSpec{}
	case KindBudget:
		return &BudgetSpec{}
	}
	panic("configfile: unknown kind " + k.String())
}

func required(fields ...string) error {
	return fmt.Errorf("%s is required", strings.Join(fields, ", "))
}

// projectRef splits "team/project".
func projectRef(s string) (team, project string, ok bool) {
	team, project, ok = strings.Cut(s, "/")
	return team, project, ok && team != "" && project != "" && !strings.Contains(project, "/")
}

func checkProjectRef(field, s string) error {
	if _, _, ok := projectRef(s); !ok {
		return fmt.Errorf("%s: want team/project, got %q", field, s)
	}
	return nil
}

func lowerEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// sortedSet sorts and de-duplicates a list, and turns an empty one into nil
// so that "left out" and "empty" compare equal.
func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// oneOf checks that exactly (or, with atMostOne, at most) one of the named
// values is set.
func oneOf(atMostOne bool, fields []string, values ...string) error {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("give only one of %s", strings.Join(fields, ", "))
	case n == 0 && !atMostOne:
		return fmt.Errorf("give one of %s", strings.Join(fields, ", "))
	}
	return nil
}

// Tenancy -----------------------------------------------------------------------

// TeamSpec is a team.
type TeamSpec struct {
	Slug string `yaml:"slug" cfg:"key"`
	Name string `yaml:"name"`
}

func (s *TeamSpec) key() string { return s.Slug }
func (s *TeamSpec) refs() []ref { return nil }
func (s *TeamSpec) normalize()  {}
func (s *TeamSpec) check() error {
	if s.Slug == "" {
		return required("slug")
	}
	return nil
}

// ProjectSpec is a project, named by its team and its slug.
type ProjectSpec struct {
	Team string `yaml:"team" cfg:"key"`
	Slug string `yaml:"slug" cfg:"key"`
	Name string `yaml:"name"`
}

func (s *ProjectSpec) key() string { return s.Team + "/" + s.Slug }
func (s *ProjectSpec) refs() []ref {
	return []ref{{field: "team", kind: KindTeam, key: s.Team, restrict: true}}
}
func (s *ProjectSpec) normalize() {}
func (s *ProjectSpec) check() error {
	if s.Team == "" || s.Slug == "" {
		return required("team", "slug")
	}
	return nil
}

// ServiceAccountSpec is a service account in a project ("team/project").
type ServiceAccountSpec struct {
	Project string `yaml:"project" cfg:"key"`
	Slug    string `yaml:"slug" cfg:"key"`
	Name    string `yaml:"name"`
	Policy  string `yaml:"policy"`
}

func (s *ServiceAccountSpec) key() string { return s.Project + "/" + s.Slug }
func (s *ServiceAccountSpec) normalize()  {}
func (s *ServiceAccountSpec) refs() []ref {
	r := []ref{{field: "project", kind: KindProject, key: s.Project, cascade: true}}
	if s.Policy != "" {
		r = append(r, ref{field: "policy", kind: KindPolicy, key: s.Policy, restrict: true})
	}
	return r
}
func (s *ServiceAccountSpec) check() error {
	if s.Project == "" || s.Slug == "" {
		return required("project", "slug")
	}
	return checkProjectRef("project", s.Project)
}

// GroupSpec is a group of users.
type GroupSpec struct {
	Slug string `yaml:"slug" cfg:"key"`
	Name string `yaml:"name"`
}

func (s *GroupSpec) key() string { return s.Slug }
func (s *GroupSpec) refs() []ref { return nil }
func (s *GroupSpec) normalize()  {}
func (s *GroupSpec) check() error {
	if s.Slug == "" {
		return required("slug")
	}
	return nil
}

// UserSpec is a user and the groups it belongs to. Emails compare without
// case, as the database's unique index does; a different case is an update.
// Passwords are not config.
type UserSpec struct {
	Email    string   `yaml:"email"`
	Name     string   `yaml:"name"`
	Disabled bool     `yaml:"disabled"`
	Groups   []string `yaml:"groups" cfg:"set"`
}

func (s *UserSpec) key() string { return lowerEmail(s.Email) }
func (s *UserSpec) normalize() {
	s.Email = strings.TrimSpace(s.Email)
	s.Groups = sortedSet(s.Groups)
}
func (s *UserSpec) refs() []ref {
	r := make([]ref, 0, len(s.Groups))
	for _, g := range s.Groups {
		r = append(r, ref{field: "groups", kind: KindGroup, key: g})
	}
	return r
}
func (s *UserSpec) check() error {
	if s.Email == "" {
		return required("email")
	}
	return nil
}

// PolicyBindingSpec binds one subject of a project — a service account (by
// slug, in the same project), a user (by email) or a group (by slug) — to a
// policy. Project, subject and policy identify it; position is its setting.
type PolicyBindingSpec struct {
	Project        string `yaml:"project" cfg:"key"`
	ServiceAccount string `yaml:"service_account" cfg:"key"`
	User           string `yaml:"user" cfg:"key"`
	Group          string `yaml:"group" cfg:"key"`
	Policy         string `yaml:"policy" cfg:"key"`
	Position       int32  `yaml:"position"`
}

func (s *PolicyBindingSpec) subject() string {
	switch {
	case s.ServiceAccount != "":
		return "service_account:" + s.ServiceAccount
	case s.User != "":
		return "user:" + lowerEmail(s.User)
	}
	return "group:" + s.Group
}

func (s *PolicyBindingSpec) key() string {
	return s.Project + " " + s.subject() + " → " + s.Policy
}
func (s *PolicyBindingSpec) normalize() {}
func (s *PolicyBindingSpec) refs() []ref {
	r := []ref{
		{field: "project", kind: KindProject, key: s.Project, cascade: true},
		{field: "policy", kind: KindPolicy, key: s.Policy, cascade: true},
	}
	switch {
	case s.ServiceAccount != "":
		r = append(r, ref{field: "service_account", kind: KindServiceAccount, key: s.Project + "/" + s.ServiceAccount, cascade: true})
	case s.User != "":
		r = append(r, ref{field: "user", kind: KindUser, key: lowerEmail(s.User), cascade: true})
	case s.Group != "":
		r = append(r, ref{field: "group", kind: KindGroup, key: s.Group, cascade: true})
	}
	return r
}
func (s *PolicyBindingSpec) check() error {
	if s.Project == "" || s.Policy == "" {
		return required("project", "policy")
	}
	if err := checkProjectRef("project", s.Project); err != nil {
		return err
	}
	return oneOf(false, []string{"service_account", "user", "group"}, s.ServiceAccount, s.User, s.Group)
}

// RoleBindingSpec gives a role to a user or a group, system-wide or in a team
// or a project. Every field is part of its identity (as in the database's
// unique index): a changed role is a delete and a create.
type RoleBindingSpec struct {
	Role    string `yaml:"role" cfg:"key"`
	User    string `yaml:"user" cfg:"key"`
	Group   string `yaml:"group" cfg:"key"`
	Team    string `yaml:"team" cfg:"key"`
	Project string `yaml:"project" cfg:"key"`
}

func (s *RoleBindingSpec) key() string {
	subject := "group:" + s.Group
	if s.User != "" {
		subject = "user:" + lowerEmail(s.User)
	}
	scope := "system"
	switch {
	case s.Team != "":
		scope = "team:" + s.Team
	case s.Project != "":
		scope = "project:" + s.Project
	}
	return s.Role + " " + subject + " on " + scope
}
func (s *RoleBindingSpec) normalize() {}
func (s *RoleBindingSpec) refs() []ref {
	var r []ref
	if s.User != "" {
		r = append(r, ref{field: "user", kind: KindUser, key: lowerEmail(s.User), cascade: true})
	}
	if s.Group != "" {
		r = append(r, ref{field: "group", kind: KindGroup, key: s.Group, cascade: true})
	}
	if s.Team != "" {
		r = append(r, ref{field: "team", kind: KindTeam, key: s.Team, cascade: true})
	}
	if s.Project != "" {
		r = append(r, ref{field: "project", kind: KindProject, key: s.Project, cascade: true})
	}
	return r
}
func (s *RoleBindingSpec) check() error {
	if s.Role == "" {
		return required("role")
	}
	if err := oneOf(false, []string{"user", "group"}, s.User, s.Group); err != nil {
		return err
	}
	if err := oneOf(true, []string{"team", "project"}, s.Team, s.Project); err != nil {
		return err
	}
	if s.Project != "" {
		return checkProjectRef("project", s.Project)
	}
	return nil
}

// BudgetSpec caps the spend of a team or a project per period. Scope and
// period identify it. Budgets on relay keys are not config (relay keys are
// minted, not declared); export leaves them out.
type BudgetSpec struct {
	Team    string `yaml:"team" cfg:"key"`
	Project string `yaml:"project" cfg:"key"`
	Period  string `yaml:"period" cfg:"key"`
	Amount  int64  `yaml:"amount"`
}

func (s *BudgetSpec) key() string {
	if s.Team != "" {
		return "team:" + s.Team + " " + s.Period
	}
	return "project:" + s.Project + " " + s.Period
}
func (s *BudgetSpec) normalize() {}
func (s *BudgetSpec) refs() []ref {
	if s.Team != "" {
		return []ref{{field: "team", kind: KindTeam, key: s.Team, cascade: true}}
	}
	return []ref{{field: "project", kind: KindProject, key: s.Project, cascade: true}}
}
func (s *BudgetSpec) check() error {
	if s.Period == "" {
		return required("period")
	}
	if err := oneOf(false, []string{"team", "project"}, s.Team, s.Project); err != nil {
		return err
	}
	if s.Project != "" {
		return checkProjectRef("project", s.Project)
	}
	return nil
}

// Catalog -------------------------------------------------------------------------

// RateLimitSpec is a rate limit with its rules (a set: their order carries
// no meaning).
type RateLimitSpec struct {
	Slug  string `yaml:"slug" cfg:"key"`
	Name  string `yaml:"name"`
	Rules []Rule `yaml:"rules"`
}

// Rule is one rule of a rate limit.
type Rule struct {
	Meter         string `yaml:"meter"`
	Amount        int64  `yaml:"amount"`
	WindowSeconds int32  `yaml:"window_seconds"`
	PerPrincipal  bool   `yaml:"per_principal,omitempty"`
}

func (r Rule) String() string {
	s := fmt.Sprintf("%s %d/%ds", r.Meter, r.Amount, r.WindowSeconds)
	if r.Meter == "concurrency" {
		s = fmt.Sprintf("%s %d", r.Meter, r.Amount)
	}
	if r.PerPrincipal {
		s += " per principal"
	}
	return s
}

func compareRules(a, b Rule) int {
	if c := strings.Compare(a.Meter, b.Meter); c != 0 {
		return c
	}
	if a.WindowSeconds != b.WindowSeconds {
		return int(a.WindowSeconds - b.WindowSeconds)
	}
	if a.PerPrincipal != b.PerPrincipal {
		if a.PerPrincipal {
			return 1
		}
		return -1
	}
	switch {
	case a.Amount < b.Amount:
		return -1
	case a.Amount > b.Amount:
		return 1
	}
	return 0
}

func (s *RateLimitSpec) key() string { return s.Slug }
func (s *RateLimitSpec) refs() []ref { return nil }
func (s *RateLimitSpec) normalize() {
	for i := range s.Rules {
		if s.Rules[i].WindowSeconds == 0 {
			s.Rules[i].WindowSeconds = 60 // the API's default
		}
	}
	slices.SortFunc(s.Rules, compareRules)
	if len(s.Rules) == 0 {
		s.Rules = nil
	}
}
func (s *RateLimitSpec) check() error {
	if s.Slug == "" {
		return required("slug")
	}
	for i, r := range s.Rules {
		if r.Meter == "" {
			return fmt.Errorf("rules.%d.meter is required", i)
		}
	}
	return nil
}

// HostSpec is a host.
type HostSpec struct {
	Slug               string `yaml:"slug" cfg:"key"`
	Name               string `yaml:"name"`
	Provider           string `yaml:"provider"`
	BaseURL            string `yaml:"base_url"`
	Enabled            bool   `yaml:"enabled"`
	ConnectTimeoutMs   int32  `yaml:"connect_timeout_ms"`
	FirstByteTimeoutMs int32  `yaml:"first_byte_timeout_ms"`
	IdleTimeoutMs      int32  `yaml:"idle_timeout_ms"`
	TotalTimeoutMs     int32  `yaml:"total_timeout_ms"`
	// ForwardHeaders are the caller's headers the host gets beyond what the
	// binding's shape forwards (docs/inference-api.md#headers).
	ForwardHeaders []string `yaml:"forward_headers"`
	// BreakerServerFailures and BreakerNetworkFailures are how many server
	// errors, network failures, in a row open a breaker of one of the
	// host's keys (docs/reliability.md#breakers); absent takes the process
	// setting.
	BreakerServerFailures  *int32 `yaml:"breaker_server_failures"`
	BreakerNetworkFailures *int32 `yaml:"breaker_network_failures"`
	// Profile and ProfileParams say how Relay addresses and authenticates
	// the host beyond the binding's shape (docs/profiles.md); absent is the
	// shape's plain public API. Secrets are host keys, never parameters.
	Profile       string            `yaml:"profile"`
	ProfileParams map[string]string `yaml:"profile_params"`
}

func (s *HostSpec) key() string { return s.Slug }
func (s *HostSpec) refs() []ref { return nil }

// normalize spells forward_headers as the control API returns them, and no
// profile parameters as none.
func (s *HostSpec) normalize() {
	if len(s.ProfileParams) == 0 {
		s.ProfileParams = nil
	}
	if len(s.ForwardHeaders) == 0 {
		s.ForwardHeaders = nil
	}
	for i, h := range s.ForwardHeaders {
		s.ForwardHeaders[i] = textproto.CanonicalMIMEHeaderKey(h)
	}
}
func (s *HostSpec) check() error {
	if s.Slug == "" || s.Provider == "" || s.BaseURL == "" {
		return required("slug", "provider", "base_url")
	}
	return nil
}

// ModelSpec is a model of the catalog. Fallbacks name other models, in
// order (a list, not a set: the order is the order they are tried in).
type ModelSpec struct {
	Name             string   `yaml:"name" cfg:"key"`
	Provider         string   `yaml:"provider"`
	Kind             string   `yaml:"kind"`
	ContextWindow    int32    `yaml:"context_window"`
	MaxOutputTokens  int32    `yaml:"max_output_tokens"`
	SupportsTools    bool     `yaml:"supports_tools"`
	SupportsVision   bool     `yaml:"supports_vision"`
	SupportsJSON     bool     `yaml:"supports_json"`
	SupportsThinking bool     `yaml:"supports_thinking"`
	Strategy         string   `yaml:"strategy"`
	Fallbacks        []string `yaml:"fallbacks"`
}

func (s *ModelSpec) key() string { return s.Name }

// refs names the fallbacks without cascade: deleting a model takes it out
// of the lists it is in.
func (s *ModelSpec) refs() []ref {
	var r []ref
	for _, m := range s.Fallbacks {
		r = append(r, ref{field: "fallbacks", kind: KindModel, key: m})
	}
	return r
}
func (s *ModelSpec) normalize() {
	if len(s.Fallbacks) == 0 {
		s.Fallbacks = nil
	}
}
func (s *ModelSpec) check() error {
	if s.Name == "" {
		return required("name")
	}
	for i, m := range s.Fallbacks {
		if m == s.Name {
			return fmt.Errorf("fallbacks.%d: a model cannot fall back to itself", i)
		}
		if slices.Contains(s.Fallbacks[:i], m) {
			return fmt.Errorf("fallbacks: model %q is listed twice", m)
		}
	}
	return nil
}

// BindingSpec joins a model (by name) and a host (by slug).
type BindingSpec struct {
	Model            string      `yaml:"model" cfg:"key"`
	Host             string      `yaml:"host" cfg:"key"`
	Shape            string      `yaml:"shape"`
	UpstreamModel    string      `yaml:"upstream_model"`
	Position         int32       `yaml:"position"`
	Weight           int32       `yaml:"weight"`
	Enabled          bool        `yaml:"enabled"`
	InputPrice       int64       `yaml:"input_price"`
	OutputPrice      int64       `yaml:"output_price"`
	CachedInputPrice int64       `yaml:"cached_input_price"`
	CacheWritePrice  int64       `yaml:"cache_write_price"`
	ReasoningPrice   *int64      `yaml:"reasoning_price"`
	PriceTiers       []PriceTier `yaml:"price_tiers"`
	UnitPrices       []UnitPrice `yaml:"unit_prices"`
}

// UnitPrice is a binding's price per image (of a size and quality, either
// left out to match any) or per second of audio.
type UnitPrice struct {
	Unit    string `yaml:"unit" json:"unit"`
	Size    string `yaml:"size,omitempty" json:"size,omitempty"`
	Quality string `yaml:"quality,omitempty" json:"quality,omitempty"`
	Price   int64  `yaml:"price" json:"price"`
}

// PriceTier is a binding's price above some number of input tokens.
type PriceTier struct {
	AboveInputTokens int64  `yaml:"above_input_tokens" json:"above_input_tokens"`
	InputPrice       int64  `yaml:"input_price" json:"input_price"`
	OutputPrice      int64  `yaml:"output_price" json:"output_price"`
	CachedInputPrice *int64 `yaml:"cached_input_price,omitempty" json:"cached_input_price,omitempty"`
	CacheWritePrice  *int64 `yaml:"cache_write_price,omitempty" json:"cache_write_price,omitempty"`
	ReasoningPrice   *int64 `yaml:"reasoning_price,omitempty" json:"reasoning_price,omitempty"`
}

func (s *BindingSpec) key() string { return s.Model + "@" + s.Host }
func (s *BindingSpec) refs() []ref {
	return []ref{
		{field: "model", kind: KindModel, key: s.Model, cascade: true},
		{field: "host", kind: KindHost, key: s.Host, cascade: true},
	}
}
func (s *BindingSpec) normalize() {
	if len(s.PriceTiers) == 0 {
		s.PriceTiers = nil // tiers keep their order: the API requires it ascending
	}
	if len(s.UnitPrices) == 0 {
		s.UnitPrices = nil
	}
}
func (s *BindingSpec) check() error {
	if s.Model == "" || s.Host == "" || s.Shape == "" || s.UpstreamModel == "" {
		return required("model", "host", "shape", "upstream_model")
	}
	return nil
}

// HostKeySpec is a host key, named by its host and its slug. Its secret is an
// env: reference; a literal secret is accepted only when the caller allows
// it, is sealed by the control plane, and is never exported.
type HostKeySpec struct {
	Host          string `yaml:"host" cfg:"key"`
	Slug          string `yaml:"slug" cfg:"key"`
	SecretRef     string `yaml:"secret_ref"`
	Secret        string `yaml:"secret" cfg:"secret"`
	TierRateLimit string `yaml:"tier_rate_limit"`
	Position      int32  `yaml:"position"`
	Enabled       bool   `yaml:"enabled"`
	// SharedWith are the teams (slugs) whose own policies may list the key.
	SharedWith []string `yaml:"shared_with,omitempty" cfg:"set"`
}

func (s *HostKeySpec) key() string { return s.Host + "/" + s.Slug }
func (s *HostKeySpec) normalize()  { s.SharedWith = sortedSet(s.SharedWith) }
func (s *HostKeySpec) refs() []ref {
	r := []ref{{field: "host", kind: KindHost, key: s.Host, cascade: true}}
	for _, t := range s.SharedWith {
		r = append(r, ref{field: "shared_with", kind: KindTeam, key: t})
	}
	if s.TierRateLimit != "" {
		r = append(r, ref{field: "tier_rate_limit", kind: KindRateLimit, key: s.TierRateLimit})
	}
	return r
}
func (s *HostKeySpec) check() error {
	if s.Host == "" || s.Slug == "" {
		return required("host", "slug")
	}
	if s.Secret != "" && s.SecretRef != "" {
		return errors.New("give only one of secret_ref, secret")
	}
	return nil
}

// MCPServerSpec is an MCP server Relay fronts at /mcp (docs/mcp.md),
// Streamable HTTP only. Its credential is one header: auth_header with
// auth_secret_ref (env:NAME), or a literal auth_secret that the control plane
// seals, accepted only when the caller allows it and never exported, as a
// host key's secret. Tool rate limits map a tool's name (as the server names
// it) to a rate limit's slug.
type MCPServerSpec struct {
	Slug           string            `yaml:"slug" cfg:"key"`
	Name           string            `yaml:"name"`
	URL            string            `yaml:"url"`
	Enabled        bool              `yaml:"enabled"`
	TimeoutMs      int32             `yaml:"timeout_ms"`
	RateLimit      string            `yaml:"rate_limit"`
	ToolRateLimits map[string]string `yaml:"tool_rate_limits"`
	ToolPrices     map[string]int64  `yaml:"tool_prices"`
	AuthHeader     string            `yaml:"auth_header"`
	AuthSecretRef  string            `yaml:"auth_secret_ref"`
	AuthSecret     string            `yaml:"auth_secret" cfg:"secret"`
	// OAuth is the other credential: client credentials (docs/mcp.md),
	// exclusive with auth_header. Its client secret follows auth_secret's
	// rules: client_secret_ref, or a literal only with --allow-secrets,
	// never exported.
	OAuth *MCPOAuthSpec `yaml:"oauth"`
}

// MCPOAuthSpec is an MCP server's OAuth client credentials.
type MCPOAuthSpec struct {
	TokenURL        string   `yaml:"token_url"`
	ClientID        string   `yaml:"client_id"`
	ClientSecretRef string   `yaml:"client_secret_ref"`
	ClientSecret    string   `yaml:"client_secret"`
	Scopes          []string `yaml:"scopes"`
	Audience        string   `yaml:"audience"`
	Resource        string   `yaml:"resource"`
	AuthMethod      string   `yaml:"auth_method"` // client_secret_basic (default) or client_secret_post
	sealed          bool     // Relay's client secret is sealed (read from Relay only)
}

// String shows the credentials without their secret, for a plan.
func (o *MCPOAuthSpec) String() string {
	if o == nil {
		return "null"
	}
	secret := o.ClientSecretRef
	switch {
	case o.ClientSecret != "" || o.sealed:
		secret = "(sealed)"
	case secret == "":
		secret = "(kept)"
	}
	return fmt.Sprintf("{token_url: %s, client_id: %s, client_secret: %s, scopes: [%s], audience: %q, resource: %q, auth_method: %s}",
		o.TokenURL, o.ClientID, secret, strings.Join(o.Scopes, " "), o.Audience, o.Resource, o.AuthMethod)
}

// sameBut reports whether o and h are the same credentials apart from the
// secret, which a plan compares apart (a sealed one cannot be read).
func (o *MCPOAuthSpec) sameBut(h *MCPOAuthSpec) bool {
	if o == nil || h == nil {
		return o == h
	}
	a, b := *o, *h
	a.ClientSecret, a.ClientSecretRef, a.sealed = "", "", false
	b.ClientSecret, b.ClientSecretRef, b.sealed = "", "", false
	return reflect.DeepEqual(a, b)
}

func (s *MCPServerSpec) key() string { return s.Slug }
func (s *MCPServerSpec) normalize() {
	if len(s.ToolRateLimits) == 0 {
		s.ToolRateLimits = nil
	}
	if len(s.ToolPrices) == 0 {
		s.ToolPrices = nil
	}
	if o := s.OAuth; o != nil {
		if o.AuthMethod == "" {
			o.AuthMethod = "client_secret_basic"
		}
		if len(o.Scopes) == 0 {
			o.Scopes = nil
		}
	}
}

// refs names the rate limits without cascade: deleting a rate limit takes
// it off the server (ON DELETE SET NULL).
func (s *MCPServerSpec) refs() []ref {
	var r []ref
	if s.RateLimit != "" {
		r = append(r, ref{field: "rate_limit", kind: KindRateLimit, key: s.RateLimit})
	}
	tools := make([]string, 0, len(s.ToolRateLimits))
	for t := range s.ToolRateLimits {
		tools = append(tools, t)
	}
	slices.Sort(tools)
	for _, t := range tools {
		r = append(r, ref{field: "tool_rate_limits." + t, kind: KindRateLimit, key: s.ToolRateLimits[t]})
	}
	return r
}
func (s *MCPServerSpec) check() error {
	if s.Slug == "" || s.URL == "" {
		return required("slug", "url")
	}
	if s.AuthSecret != "" && s.AuthSecretRef != "" {
		return errors.New("give only one of auth_secret_ref, auth_secret")
	}
	if s.AuthHeader == "" && (s.AuthSecret != "" || s.AuthSecretRef != "") {
		return errors.New("auth_header: a credential needs the header it is sent in")
	}
	if o := s.OAuth; o != nil {
		switch {
		case s.AuthHeader != "":
			return errors.New("oauth: a server has one credential: oauth or auth_header, not both")
		case o.TokenURL == "" || o.ClientID == "":
			return required("oauth.token_url", "oauth.client_id")
		case o.ClientSecret != "" && o.ClientSecretRef != "":
			return errors.New("oauth: give only one of client_secret_ref, client_secret")
		case o.AuthMethod != "client_secret_basic" && o.AuthMethod != "client_secret_post":
			return fmt.Errorf("oauth.auth_method: %q is not client_secret_basic or client_secret_post", o.AuthMethod)
		}
	}
	for t, p := range s.ToolPrices {
		if p < 0 {
			return fmt.Errorf("tool_prices.%s: a price is never negative", t)
		}
	}
	for t, rl := range s.ToolRateLimits {
		if rl == "" {
			return fmt.Errorf("tool_rate_limits.%s: a rate limit's slug is required", t)
		}
	}
	return nil
}

// PolicySpec is a policy with its grants: the models it grants (by name),
// the host keys its requests may spend ("host/slug") and its per-model rate
// limits. Team is the owning team's slug ("" for a system policy); it is set
// when the policy is made and never changes.
type PolicySpec struct {
	Slug               string `yaml:"slug" cfg:"key"`
	Team               string `yaml:"team,omitempty"`
	Name               string `yaml:"name"`
	AllModels          bool   `yaml:"all_models"`
	AllHostKeys        bool   `yaml:"all_host_keys"`
	KeyStrategy        string `yaml:"key_strategy"`
	RateLimit          string `yaml:"rate_limit"`
	MaxWaitMs          int32  `yaml:"max_wait_ms"`
	Priority           int32  `yaml:"priority"`
	MaxAttempts        int32  `yaml:"max_attempts"`
	LimiterFailureMode string `yaml:"limiter_failure_mode"`
	CapturePayloads    bool   `yaml:"capture_payloads"`
	CaptureMaxBytes    int32  `yaml:"capture_max_bytes"`
	RouteStrategy      string `yaml:"route_strategy"`
	Affinity           string `yaml:"affinity"`
	BudgetFallback     bool   `yaml:"budget_fallback"`
	// DegradeAfterMs and DegradeBelowPriority serve a request that would
	// wait longer (or whose priority is lower) by its model's cheaper
	// fallback instead (docs/rate-limits.md#degrade-instead-of-wait);
	// absent: never.
	DegradeAfterMs       *int32           `yaml:"degrade_after_ms"`
	DegradeBelowPriority *int32           `yaml:"degrade_below_priority"`
	Models               []string         `yaml:"models" cfg:"set"`
	HostKeys             []string         `yaml:"host_keys" cfg:"set"`
	SharedWith           []string         `yaml:"shared_with,omitempty" cfg:"set"` // teams whose admins may attach a system policy
	ModelRateLimits      []ModelRateLimit `yaml:"model_rate_limits"`
	// ResponseCache is the policy's exact response cache
	// (docs/caching.md); absent: off.
	ResponseCache *ResponseCache `yaml:"response_cache"`
	// Guardrails are the policy's guardrails (docs/guardrails.md); absent:
	// none.
	Guardrails *Guardrails `yaml:"guardrails"`
	// MCP is the MCP tools the policy grants (docs/mcp.md#grants), compared
	// with the policy's mcp_grants and mcp_require_approval; absent (or no
	// grants without require_approval): none.
	MCP *PolicyMCP `yaml:"mcp"`
}

// PolicyMCP is a policy's MCP grants: patterns `<server>`,
// `<server>__<tool>`, or globs with `*`, in order, and whether a granted
// server's tools no operator has approved yet are withheld.
type PolicyMCP struct {
	Grants          []string `yaml:"grants"`
	RequireApproval bool     `yaml:"require_approval,omitempty"`
}

func (m *PolicyMCP) String() string {
	if m == nil {
		return "null"
	}
	s := "[" + strings.Join(m.Grants, ", ") + "]"
	if m.RequireApproval {
		s += " requiring approval"
	}
	return s
}

// mcpGrant is what the control API takes as one grant pattern.
var mcpGrant = regexp.MustCompile(`^[A-Za-z0-9_.*-]{1,200}$`)

// normalize makes a block that grants nothing and requires nothing the same
// as no block, and no grants an empty list (nil).
func (m *PolicyMCP) normalize() *PolicyMCP {
	if m == nil {
		return nil
	}
	if len(m.Grants) == 0 {
		if !m.RequireApproval {
			return nil
		}
		m.Grants = nil
	}
	return m
}

func (m *PolicyMCP) check() error {
	if m == nil {
		return nil
	}
	if len(m.Grants) > 256 {
		return errors.New("mcp.grants: at most 256")
	}
	for i, g := range m.Grants {
		if srv, _, _ := strings.Cut(g, "__"); !mcpGrant.MatchString(g) || srv == "" {
			return fmt.Errorf("mcp.grants.%d: %q is not <server>, <server>__<tool> or a glob of them", i, g)
		}
	}
	return nil
}

// ResponseCache is a policy's response cache settings. The block being
// there turns the cache on; `enabled: false` (the API's spelling) turns it
// off as leaving the block out does. Models are a set of model names (none:
// every model the policy grants); scope project is written as no scope.
// Semantic are the semantic cache's domains, in the order a request is
// matched against them (docs/caching.md#semantic-cache); none: exact only.
type ResponseCache struct {
	Enabled          *bool            `yaml:"enabled,omitempty"`
	Models           []string         `yaml:"models,omitempty"`
	Scope            string           `yaml:"scope,omitempty"`
	ScopeHeader      string           `yaml:"scope_header,omitempty"`
	TTLSeconds       int              `yaml:"ttl_seconds,omitempty"`
	MaxEntryBytes    int              `yaml:"max_entry_bytes,omitempty"`
	Nondeterministic bool             `yaml:"nondeterministic,omitempty"`
	Semantic         []SemanticDomain `yaml:"semantic,omitempty"`
}

// SemanticDomain is one domain of a policy's semantic cache, its models by
// name: the requests it takes (every rule that is set must match) and the
// embedding model that embeds their last user turn. Threshold 0 is the
// default (0.9); the API keeps it to four decimal places, and so does the
// spec.
type SemanticDomain struct {
	Name            string            `yaml:"name"`
	Models          []string          `yaml:"models,omitempty"`
	Metadata        map[string]string `yaml:"metadata,omitempty"`
	SystemSHA256    []string          `yaml:"system_sha256,omitempty"`
	EmbeddingsModel string            `yaml:"embeddings_model"`
	Threshold       float64           `yaml:"threshold,omitempty"`
}

// maxSemanticDomains is the most domains the control API keeps (the
// ResponseCache schema's semantic maxItems).
const maxSemanticDomains = 16

// semanticDomainName is what the control API takes as a domain's name.
var semanticDomainName = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// check refuses what the control API would: a domain without a name or an
// embedding model, a name used twice, a threshold outside 0 to 1, more
// domains than the API keeps, a system_sha256 that is no SHA-256 digest.
func (c *ResponseCache) check() error {
	if c == nil {
		return nil
	}
	if len(c.Semantic) > maxSemanticDomains {
		return fmt.Errorf("response_cache.semantic: at most %d domains", maxSemanticDomains)
	}
	for i, d := range c.Semantic {
		f := fmt.Sprintf("response_cache.semantic.%d", i)
		if !semanticDomainName.MatchString(d.Name) {
			return fmt.Errorf("%s.name: %q is not 1 to 64 of a-z, 0-9, _ and -", f, d.Name)
		}
		for j := range i {
			if c.Semantic[j].Name == d.Name {
				return fmt.Errorf("%s.name: the domain %q is named by semantic.%d too", f, d.Name, j)
			}
		}
		if d.EmbeddingsModel == "" {
			return fmt.Errorf("%s.embeddings_model is required", f)
		}
		if math.IsNaN(d.Threshold) || d.Threshold < 0 || d.Threshold > 1 {
			return fmt.Errorf("%s.threshold: %v is not 0 to 1 (0: 0.9)", f, d.Threshold)
		}
		for _, h := range d.SystemSHA256 {
			if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
				return fmt.Errorf("%s.system_sha256: %q is not a hex SHA-256 digest (64 characters)", f, h)
			}
		}
	}
	return nil
}

// Guardrails are a policy's guardrail rules, in order, and its prompt-size
// ceiling.
type Guardrails struct {
	MaxPromptBytes int             `yaml:"max_prompt_bytes,omitempty"`
	Rules          []GuardrailRule `yaml:"rules,omitempty"`
}

// GuardrailRule is one guardrail: built-in detectors, deny-lists, or a
// webhook (internal/guardhook). A webhook carries no credential: the API
// refuses a URL with user information, so there is no secret to keep out of
// a file.
type GuardrailRule struct {
	Name         string            `yaml:"name"`
	Stage        string            `yaml:"stage"`
	Action       string            `yaml:"action"`
	Detectors    []string          `yaml:"detectors,omitempty"`
	DenyWords    []string          `yaml:"deny_words,omitempty"`
	DenyPatterns []string          `yaml:"deny_patterns,omitempty"`
	Webhook      *GuardrailWebhook `yaml:"webhook,omitempty"`
}

// GuardrailWebhook is an external guardrail. Fail closed (the default) is
// written as no fail.
type GuardrailWebhook struct {
	URL           string `yaml:"url"`
	TimeoutMs     int    `yaml:"timeout_ms,omitempty"`
	Fail          string `yaml:"fail,omitempty"`
	MaxConcurrent int    `yaml:"max_concurrent,omitempty"`
}

// normalize puts the settings in the form the control API gives back: off
// is nil, defaults are zero values, empty lists are nil.
func (c *ResponseCache) normalize() *ResponseCache {
	if c == nil || c.Enabled != nil && !*c.Enabled {
		return nil
	}
	c.Enabled = nil
	c.Models = sortedSet(c.Models)
	if c.Scope == "project" {
		c.Scope = ""
	}
	for i := range c.Semantic {
		d := &c.Semantic[i]
		d.Models = sortedSet(d.Models)
		d.SystemSHA256 = sortedSet(d.SystemSHA256)
		if len(d.Metadata) == 0 {
			d.Metadata = nil
		}
		d.Threshold = math.Round(d.Threshold*1e4) / 1e4 // as the API keeps it
	}
	if len(c.Semantic) == 0 {
		c.Semantic = nil
	}
	return c
}

func (g *Guardrails) normalize() *Guardrails {
	if g == nil {
		return nil
	}
	for i := range g.Rules {
		r := &g.Rules[i]
		if len(r.Detectors) == 0 {
			r.Detectors = nil
		}
		if len(r.DenyWords) == 0 {
			r.DenyWords = nil
		}
		if len(r.DenyPatterns) == 0 {
			r.DenyPatterns = nil
		}
		if r.Webhook != nil && r.Webhook.Fail == "closed" {
			r.Webhook.Fail = ""
		}
	}
	if len(g.Rules) == 0 {
		g.Rules = nil
		if g.MaxPromptBytes == 0 {
			return nil // the API keeps no rules and no ceiling as none
		}
	}
	return g
}

func (g *Guardrails) check() error {
	if g == nil {
		return nil
	}
	for i, r := range g.Rules {
		if r.Name == "" || r.Stage == "" || r.Action == "" {
			return fmt.Errorf("guardrails.rules.%d: name, stage and action are required", i)
		}
		for j := range i {
			if g.Rules[j].Name == r.Name {
				return fmt.Errorf("guardrails.rules.%d: the name %q is used by rules.%d too", i, r.Name, j)
			}
		}
		if r.Webhook != nil && r.Webhook.URL == "" {
			return fmt.Errorf("guardrails.rules.%d.webhook.url is required", i)
		}
	}
	return nil
}

// ModelRateLimit is the rate limit a policy applies to one model.
type ModelRateLimit struct {
	Model     string `yaml:"model"`
	RateLimit string `yaml:"rate_limit"`
	Position  int32  `yaml:"position,omitempty"`
}

func (s *PolicySpec) key() string { return s.Slug }
func (s *PolicySpec) normalize() {
	s.Models = sortedSet(s.Models)
	s.HostKeys = sortedSet(s.HostKeys)
	s.SharedWith = sortedSet(s.SharedWith)
	slices.SortFunc(s.ModelRateLimits, func(a, b ModelRateLimit) int { return strings.Compare(a.Model, b.Model) })
	if len(s.ModelRateLimits) == 0 {
		s.ModelRateLimits = nil
	}
	s.ResponseCache = s.ResponseCache.normalize()
	s.Guardrails = s.Guardrails.normalize()
	s.MCP = s.MCP.normalize()
}
func (s *PolicySpec) refs() []ref {
	var r []ref
	if s.Team != "" {
		r = append(r, ref{field: "team", kind: KindTeam, key: s.Team, cascade: true})
	}
	for _, t := range s.SharedWith {
		r = append(r, ref{field: "shared_with", kind: KindTeam, key: t})
	}
	if s.RateLimit != "" {
		r = append(r, ref{field: "rate_limit", kind: KindRateLimit, key: s.RateLimit})
	}
	for _, m := range s.Models {
		r = append(r, ref{field: "models", kind: KindModel, key: m})
	}
	for _, k := range s.HostKeys {
		r = append(r, ref{field: "host_keys", kind: KindHostKey, key: k})
	}
	for _, m := range s.ModelRateLimits {
		r = append(r, ref{field: "model_rate_limits", kind: KindModel, key: m.Model},
			ref{field: "model_rate_limits", kind: KindRateLimit, key: m.RateLimit})
	}
	if s.ResponseCache != nil {
		for _, m := range s.ResponseCache.Models {
			r = append(r, ref{field: "response_cache.models", kind: KindModel, key: m})
		}
		for i, d := range s.ResponseCache.Semantic {
			f := fmt.Sprintf("response_cache.semantic.%d.", i)
			for _, m := range d.Models {
				r = append(r, ref{field: f + "models", kind: KindModel, key: m})
			}
			r = append(r, ref{field: f + "embeddings_model", kind: KindModel, key: d.EmbeddingsModel})
		}
	}
	return r
}
func (s *PolicySpec) check() error {
	if s.Slug == "" {
		return required("slug")
	}
	for _, k := range s.HostKeys {
		if h, slug, ok := strings.Cut(k, "/"); !ok || h == "" || slug == "" {
			return fmt.Errorf("host_keys: want host/slug, got %q", k)
		}
	}
	if err := s.ResponseCache.check(); err != nil {
		return err
	}
	for i, m := range s.ModelRateLimits {
		if m.Model == "" || m.RateLimit == "" {
			return fmt.Errorf("model_rate_limits.%d: model and rate_limit are required", i)
		}
		if i > 0 && s.ModelRateLimits[i-1].Model == m.Model {
			return fmt.Errorf("model_rate_limits: model %q is listed twice", m.Model)
		}
	}
	if err := s.MCP.check(); err != nil {
		return err
	}
	return s.Guardrails.check()
}
