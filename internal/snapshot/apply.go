package snapshot

import (
	"maps"
	"slices"
	"time"
)

// Delta is the changed rows of one kind: new or updated rows, and the IDs of
// rows that are gone.
type Delta[T any] struct {
	Upserts []*T
	Deletes []ID
}

// Empty reports whether nothing changed.
func (d Delta[T]) Empty() bool { return len(d.Upserts) == 0 && len(d.Deletes) == 0 }

// Changes is what changed since a snapshot was built, kind by kind.
type Changes struct {
	Teams           Delta[Team]
	Projects        Delta[Project]
	Users           Delta[User]
	Groups          Delta[Group]
	ServiceAccounts Delta[ServiceAccount]
	RateLimits      Delta[RateLimit]
	Hosts           Delta[Host]
	Models          Delta[Model]
	Bindings        Delta[Binding]
	HostKeys        Delta[HostKey]
	Policies        Delta[Policy]
	PolicyBindings  Delta[PolicyBinding]
	RelayKeys       Delta[RelayKey]
	InferenceTokens Delta[InferenceToken]
	Budgets         Delta[Budget]
	MCPServers      Delta[MCPServer]
}

// Apply returns a new snapshot with the changes applied. Kinds that did not
// change share their maps with s; within a changed kind, unchanged rows are
// the same pointers and only the touched index entries are recomputed.
func (s *Snapshot) Apply(c *Changes, version uint64, now time.Time) *Snapshot {
	n := *s
	n.version = version
	n.builtAt = now

	if !c.Teams.Empty() {
		n.teams = patch(s.teams, c.Teams, func(r *Team) ID { return r.ID })
	}
	if !c.Projects.Empty() {
		n.projects = patch(s.projects, c.Projects, func(r *Project) ID { return r.ID })
	}
	if !c.Users.Empty() {
		n.users = patch(s.users, c.Users, func(r *User) ID { return r.ID })
	}
	if !c.Groups.Empty() {
		n.groups = patch(s.groups, c.Groups, func(r *Group) ID { return r.ID })
		n.userGroups = deriveUserGroups(n.groups)
	}
	if !c.ServiceAccounts.Empty() {
		n.serviceAccounts = patch(s.serviceAccounts, c.ServiceAccounts, func(r *ServiceAccount) ID { return r.ID })
	}
	if !c.RateLimits.Empty() {
		n.rateLimits = patch(s.rateLimits, c.RateLimits, func(r *RateLimit) ID { return r.ID })
	}
	if !c.Hosts.Empty() {
		n.hosts = patch(s.hosts, c.Hosts, func(r *Host) ID { return r.ID })
		n.hostsBySlug = repatchKeyed(s.hostsBySlug, s.hosts, c.Hosts, func(r *Host) ID { return r.ID }, func(r *Host) string { return r.Slug })
	}
	if !c.Models.Empty() {
		n.models = patch(s.models, c.Models, func(r *Model) ID { return r.ID })
		n.modelsByName = repatchKeyed(s.modelsByName, s.models, c.Models, func(r *Model) ID { return r.ID }, func(r *Model) string { return r.Name })
		n.modelList = sortedModels(n.models)
	}
	if !c.Bindings.Empty() {
		n.bindings = patch(s.bindings, c.Bindings, func(r *Binding) ID { return r.ID })
		n.bindingsByModel = regroup(s.bindingsByModel, s.bindings, c.Bindings,
			func(r *Binding) ID { return r.ID }, func(r *Binding) ID { return r.ModelID }, compareBindings)
	}
	if !c.HostKeys.Empty() {
		n.hostKeys = patch(s.hostKeys, c.HostKeys, func(r *HostKey) ID { return r.ID })
		n.hostKeysByHost = regroup(s.hostKeysByHost, s.hostKeys, c.HostKeys,
			func(r *HostKey) ID { return r.ID }, func(r *HostKey) ID { return r.HostID }, compareHostKeys)
	}
	if !c.Policies.Empty() {
		n.policies = patch(s.policies, c.Policies, func(r *Policy) ID { return r.ID })
	}
	if !c.PolicyBindings.Empty() {
		n.policyBindings = patch(s.policyBindings, c.PolicyBindings, func(r *PolicyBinding) ID { return r.ID })
		n.bindingsByProj = regroup(s.bindingsByProj, s.policyBindings, c.PolicyBindings,
			func(r *PolicyBinding) ID { return r.ID }, func(r *PolicyBinding) ID { return r.ProjectID }, comparePolicyBindings)
	}
	if !c.RelayKeys.Empty() {
		n.relayKeys = patch(s.relayKeys, c.RelayKeys, func(r *RelayKey) ID { return r.ID })
		n.relayKeyByHash = repatchKeyed(s.relayKeyByHash, s.relayKeys, c.RelayKeys, func(r *RelayKey) ID { return r.ID }, func(r *RelayKey) [32]byte { return r.Hash })
	}
	if !c.InferenceTokens.Empty() {
		n.tokens = patch(s.tokens, c.InferenceTokens, func(r *InferenceToken) ID { return r.ID })
		n.tokenByHash = repatchKeyed(s.tokenByHash, s.tokens, c.InferenceTokens, func(r *InferenceToken) ID { return r.ID }, func(r *InferenceToken) [32]byte { return r.Hash })
	}
	if !c.Budgets.Empty() {
		n.budgets = patch(s.budgets, c.Budgets, func(r *Budget) ID { return r.ID })
	}
	if !c.MCPServers.Empty() {
		n.mcpServers = patch(s.mcpServers, c.MCPServers, func(r *MCPServer) ID { return r.ID })
		n.mcpServersBySlug = repatchKeyed(s.mcpServersBySlug, s.mcpServers, c.MCPServers, func(r *MCPServer) ID { return r.ID }, func(r *MCPServer) string { return r.Slug })
		n.mcpServerList = sortedMCPServers(n.mcpServers)
	}
	return &n
}

// patch copies m and applies d to the copy.
func patch[T any](m map[ID]*T, d Delta[T], id func(*T) ID) map[ID]*T {
	out := maps.Clone(m)
	if out == nil {
		out = make(map[ID]*T)
	}
	for _, del := range d.Deletes {
		delete(out, del)
	}
	for _, r := range d.Upserts {
		out[id(r)] = r
	}
	return out
}

// repatchKeyed updates a secondary unique index (slug, name, hash) for the
// rows in d: old entries of changed rows go, new ones come.
func repatchKeyed[T any, K comparable](idx map[K]*T, old map[ID]*T, d Delta[T], id func(*T) ID, key func(*T) K) map[K]*T {
	out := maps.Clone(idx)
	if out == nil {
		out = make(map[K]*T)
	}
	drop := func(rid ID) {
		if prev, ok := old[rid]; ok {
			if cur, ok := out[key(prev)]; ok && id(cur) == rid {
				delete(out, key(prev))
			}
		}
	}
	for _, del := range d.Deletes {
		drop(del)
	}
	for _, r := range d.Upserts {
		drop(id(r))
	}
	for _, r := range d.Upserts {
		out[key(r)] = r
	}
	return out
}

// regroup updates a grouped index for the rows in d: only the groups that a
// changed row left or joined are rebuilt, from their previous members.
func regroup[T any](idx map[ID][]*T, old map[ID]*T, d Delta[T], id func(*T) ID, by func(*T) ID, cmp func(a, b *T) int) map[ID][]*T {
	out := maps.Clone(idx)
	if out == nil {
		out = make(map[ID][]*T)
	}
	changed := make(map[ID]struct{}, len(d.Upserts)+len(d.Deletes))
	touched := make(map[ID]struct{})
	for _, del := range d.Deletes {
		changed[del] = struct{}{}
		if prev, ok := old[del]; ok {
			touched[by(prev)] = struct{}{}
		}
	}
	for _, r := range d.Upserts {
		changed[id(r)] = struct{}{}
		touched[by(r)] = struct{}{}
		if prev, ok := old[id(r)]; ok {
			touched[by(prev)] = struct{}{}
		}
	}
	for g := range touched {
		var list []*T
		for _, r := range idx[g] {
			if _, ok := changed[id(r)]; !ok {
				list = append(list, r)
			}
		}
		for _, r := range d.Upserts {
			if by(r) == g {
				list = append(list, r)
			}
		}
		slices.SortFunc(list, cmp)
		if len(list) == 0 {
			delete(out, g)
		} else {
			out[g] = list
		}
	}
	return out
}
