// Package snapshot is the immutable, indexed, read-optimised copy of the
// catalog that the inference plane reads on every request: credentials,
// tenancy, policies, rate limits, hosts, models, bindings and host keys.
//
// A Snapshot is never modified after it is built; Apply returns a new one that
// shares every unchanged row and index with its parent (copy-on-write). The
// package holds no I/O: it does not import the store or pgx, so the hot path
// that reads it cannot reach Postgres. The loader package fills it.
package snapshot

import (
	"cmp"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Data is every row of a full build.
type Data struct {
	Teams           []*Team
	Projects        []*Project
	Users           []*User
	Groups          []*Group
	ServiceAccounts []*ServiceAccount
	RateLimits      []*RateLimit
	Hosts           []*Host
	Models          []*Model
	Bindings        []*Binding
	HostKeys        []*HostKey
	Policies        []*Policy
	PolicyBindings  []*PolicyBinding
	RelayKeys       []*RelayKey
	InferenceTokens []*InferenceToken
	Budgets         []*Budget
	MCPServers      []*MCPServer
}

// Snapshot is one consistent view of the catalog. All methods are safe for
// concurrent use; none allocate on the request path.
type Snapshot struct {
	version uint64
	builtAt time.Time

	teams           map[ID]*Team
	projects        map[ID]*Project
	users           map[ID]*User
	groups          map[ID]*Group
	userGroups      map[ID][]ID // derived from groups
	serviceAccounts map[ID]*ServiceAccount
	rateLimits      map[ID]*RateLimit
	hosts           map[ID]*Host
	hostsBySlug     map[string]*Host
	models          map[ID]*Model
	modelsByName    map[string]*Model
	modelList       []*Model // by name, for GET /v1/models
	bindings        map[ID]*Binding
	bindingsByModel map[ID][]*Binding // by position, then id
	hostKeys        map[ID]*HostKey
	hostKeysByHost  map[ID][]*HostKey // by position, then slug
	policies        map[ID]*Policy
	policyBindings  map[ID]*PolicyBinding
	bindingsByProj  map[ID][]*PolicyBinding // policy bindings by position, then id
	relayKeys       map[ID]*RelayKey
	relayKeyByHash  map[[32]byte]*RelayKey
	tokens          map[ID]*InferenceToken
	tokenByHash     map[[32]byte]*InferenceToken
	budgets         map[ID]*Budget

	mcpServers       map[ID]*MCPServer
	mcpServersBySlug map[string]*MCPServer
	mcpServerList    []*MCPServer // by slug
}

// Empty returns a snapshot with nothing in it, version 0.
func Empty() *Snapshot { return Build(&Data{}, 0, time.Time{}) }

// Build indexes a full set of rows.
func Build(d *Data, version uint64, now time.Time) *Snapshot {
	s := &Snapshot{
		version:         version,
		builtAt:         now,
		teams:           index(d.Teams, func(r *Team) ID { return r.ID }),
		projects:        index(d.Projects, func(r *Project) ID { return r.ID }),
		users:           index(d.Users, func(r *User) ID { return r.ID }),
		groups:          index(d.Groups, func(r *Group) ID { return r.ID }),
		serviceAccounts: index(d.ServiceAccounts, func(r *ServiceAccount) ID { return r.ID }),
		rateLimits:      index(d.RateLimits, func(r *RateLimit) ID { return r.ID }),
		hosts:           index(d.Hosts, func(r *Host) ID { return r.ID }),
		models:          index(d.Models, func(r *Model) ID { return r.ID }),
		bindings:        index(d.Bindings, func(r *Binding) ID { return r.ID }),
		hostKeys:        index(d.HostKeys, func(r *HostKey) ID { return r.ID }),
		policies:        index(d.Policies, func(r *Policy) ID { return r.ID }),
		policyBindings:  index(d.PolicyBindings, func(r *PolicyBinding) ID { return r.ID }),
		relayKeys:       index(d.RelayKeys, func(r *RelayKey) ID { return r.ID }),
		tokens:          index(d.InferenceTokens, func(r *InferenceToken) ID { return r.ID }),
		budgets:         index(d.Budgets, func(r *Budget) ID { return r.ID }),
		mcpServers:      index(d.MCPServers, func(r *MCPServer) ID { return r.ID }),
	}
	s.mcpServersBySlug = rekey(s.mcpServers, func(r *MCPServer) string { return r.Slug })
	s.mcpServerList = sortedMCPServers(s.mcpServers)
	s.userGroups = deriveUserGroups(s.groups)
	s.hostsBySlug = rekey(s.hosts, func(r *Host) string { return r.Slug })
	s.modelsByName = rekey(s.models, func(r *Model) string { return r.Name })
	s.modelList = sortedModels(s.models)
	s.bindingsByModel = group(s.bindings, func(r *Binding) ID { return r.ModelID }, compareBindings)
	s.hostKeysByHost = group(s.hostKeys, func(r *HostKey) ID { return r.HostID }, compareHostKeys)
	s.bindingsByProj = group(s.policyBindings, func(r *PolicyBinding) ID { return r.ProjectID }, comparePolicyBindings)
	s.relayKeyByHash = rekey(s.relayKeys, func(r *RelayKey) [32]byte { return r.Hash })
	s.tokenByHash = rekey(s.tokens, func(r *InferenceToken) [32]byte { return r.Hash })
	return s
}

// Version increases with every build in a process.
func (s *Snapshot) Version() uint64 { return s.version }

// BuiltAt is when this snapshot was built.
func (s *Snapshot) BuiltAt() time.Time { return s.builtAt }

// Counts reports how many rows of each kind the snapshot holds.
func (s *Snapshot) Counts() map[string]int {
	return map[string]int{
		"teams": len(s.teams), "projects": len(s.projects), "users": len(s.users),
		"groups": len(s.groups), "service_accounts": len(s.serviceAccounts),
		"rate_limits": len(s.rateLimits), "hosts": len(s.hosts), "models": len(s.models),
		"bindings": len(s.bindings), "host_keys": len(s.hostKeys), "policies": len(s.policies),
		"policy_bindings": len(s.policyBindings), "relay_keys": len(s.relayKeys),
		"inference_tokens": len(s.tokens), "budgets": len(s.budgets), "mcp_servers": len(s.mcpServers),
	}
}

// Team returns a team by ID, or nil.
func (s *Snapshot) Team(id ID) *Team { return s.teams[id] }

// Project returns a project by ID, or nil.
func (s *Snapshot) Project(id ID) *Project { return s.projects[id] }

// User returns a user by ID, or nil.
func (s *Snapshot) User(id ID) *User { return s.users[id] }

// ServiceAccount returns a service account by ID, or nil.
func (s *Snapshot) ServiceAccount(id ID) *ServiceAccount { return s.serviceAccounts[id] }

// RateLimit returns a rate limit by ID, or nil.
func (s *Snapshot) RateLimit(id ID) *RateLimit { return s.rateLimits[id] }

// Host returns a host by ID, or nil.
func (s *Snapshot) Host(id ID) *Host { return s.hosts[id] }

// HostBySlug returns a host by slug, or nil.
func (s *Snapshot) HostBySlug(slug string) *Host { return s.hostsBySlug[slug] }

// Model returns a model by ID, or nil.
func (s *Snapshot) Model(id ID) *Model { return s.models[id] }

// ModelByName returns the model a request's model field names, or nil.
func (s *Snapshot) ModelByName(name string) *Model { return s.modelsByName[name] }

// Models returns every model ordered by name. Callers must not modify it.
func (s *Snapshot) Models() []*Model { return s.modelList }

// Binding returns a binding by ID, or nil.
func (s *Snapshot) Binding(id ID) *Binding { return s.bindings[id] }

// Bindings returns a model's bindings (enabled or not) in routing order.
// Callers must not modify the slice.
func (s *Snapshot) Bindings(model ID) []*Binding { return s.bindingsByModel[model] }

// HostKey returns a host key by ID, or nil.
func (s *Snapshot) HostKey(id ID) *HostKey { return s.hostKeys[id] }

// HostKeys returns a host's keys (enabled or not) in priority order.
// Callers must not modify the slice.
func (s *Snapshot) HostKeys(host ID) []*HostKey { return s.hostKeysByHost[host] }

// AllHostKeys returns every host key, in no particular order.
func (s *Snapshot) AllHostKeys() []*HostKey {
	out := make([]*HostKey, 0, len(s.hostKeys))
	for _, k := range s.hostKeys {
		out = append(out, k)
	}
	return out
}

// Policy returns a policy by ID, or nil.
func (s *Snapshot) Policy(id ID) *Policy { return s.policies[id] }

// RelayKey returns a relay key by ID, or nil.
func (s *Snapshot) RelayKey(id ID) *RelayKey { return s.relayKeys[id] }

// Budgets returns every budget, in no particular order.
func (s *Snapshot) Budgets() []*Budget {
	out := make([]*Budget, 0, len(s.budgets))
	for _, b := range s.budgets {
		out = append(out, b)
	}
	return out
}

func index[T any](rows []*T, id func(*T) ID) map[ID]*T {
	m := make(map[ID]*T, len(rows))
	for _, r := range rows {
		m[id(r)] = r
	}
	return m
}

func rekey[T any, K comparable](m map[ID]*T, key func(*T) K) map[K]*T {
	out := make(map[K]*T, len(m))
	for _, r := range m {
		out[key(r)] = r
	}
	return out
}

func group[T any](m map[ID]*T, by func(*T) ID, cmp func(a, b *T) int) map[ID][]*T {
	out := make(map[ID][]*T)
	for _, r := range m {
		k := by(r)
		out[k] = append(out[k], r)
	}
	for _, list := range out {
		slices.SortFunc(list, cmp)
	}
	return out
}

func deriveUserGroups(groups map[ID]*Group) map[ID][]ID {
	out := make(map[ID][]ID)
	for _, g := range groups {
		for u := range g.Members {
			out[u] = append(out[u], g.ID)
		}
	}
	return out
}

func sortedModels(m map[ID]*Model) []*Model {
	out := make([]*Model, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Model) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func compareIDs(a, b ID) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func compareBindings(a, b *Binding) int {
	if c := cmp.Compare(a.Position, b.Position); c != 0 {
		return c
	}
	return compareIDs(a.ID, b.ID)
}

func compareHostKeys(a, b *HostKey) int {
	if c := cmp.Compare(a.Position, b.Position); c != 0 {
		return c
	}
	return cmp.Compare(a.Slug, b.Slug)
}

func comparePolicyBindings(a, b *PolicyBinding) int {
	if c := cmp.Compare(a.Position, b.Position); c != 0 {
		return c
	}
	return compareIDs(a.ID, b.ID)
}

// isSet reports whether an optional reference is present.
func isSet(id ID) bool { return id != uuid.Nil }
