package configfile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/client"
)

// object is one object of a kind: from a file (src set) or from the control
// plane (id set, and what apply needs besides the spec).
type object struct {
	kind Kind
	spec spec
	src  Source
	id   uuid.UUID

	rules  []models.RateLimitRule // a rate limit's rules, with their ids
	sealed bool                   // a host key's secret, an MCP server's credential, is sealed (no env reference)
}

func (o *object) name() string { return o.spec.key() }

// state is every object of every kind, by natural key.
type state struct {
	objs [numKinds]map[string]*object
	// extra holds objects whose key another object of the kind already has
	// (the schema allows it for policy bindings and budgets): prune deletes
	// them, export leaves them out.
	extra [numKinds][]*object
	// notes are what the state leaves out (for export's warnings).
	notes []string
}

func newState() *state {
	s := &state{}
	for i := range s.objs {
		s.objs[i] = map[string]*object{}
	}
	return s
}

func (s *state) add(o *object) {
	k := o.name()
	if _, dup := s.objs[o.kind][k]; dup {
		s.extra[o.kind] = append(s.extra[o.kind], o)
		return
	}
	s.objs[o.kind][k] = o
}

// sorted returns the objects of kind k by key.
func (s *state) sorted(k Kind) []*object {
	out := make([]*object, 0, len(s.objs[k]))
	for _, o := range s.objs[k] {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *object) int { return strings.Compare(a.name(), b.name()) })
	return out
}

// snapshot is the raw answer of every list endpoint the state is built from.
type snapshot struct {
	teams           []models.Team
	projects        []models.Project
	rateLimits      []models.RateLimit
	hosts           []models.Host
	models          []models.Model
	bindings        []models.Binding
	hostKeys        []models.HostKey
	policies        []models.Policy
	mcpServers      []models.McpServer
	serviceAccounts []models.ServiceAccount
	groups          []models.Group
	users           []models.User
	policyBindings  []models.PolicyBinding
	roleBindings    []models.RoleBinding
	budgets         []models.Budget

	modelGrants     map[uuid.UUID][]models.PolicyModelGrant
	hostKeyGrants   map[uuid.UUID][]models.PolicyHostKeyGrant
	modelRateLimits map[uuid.UUID][]models.PolicyModelRateLimit
	members         map[uuid.UUID][]models.GroupMember
	policyShares    map[uuid.UUID][]uuid.UUID // team ids, by policy
	hostKeyShares   map[uuid.UUID][]uuid.UUID // team ids, by host key
}

// readState reads the whole catalog through the API (parallel calls at most
// at once) and turns it into specs with natural keys.
func readState(ctx context.Context, c *client.ClientWithResponses, parallel int, asCaller bool) (*state, error) {
	if !asCaller {
		if err := probe(ctx, c); err != nil {
			return nil, err
		}
	}
	var snap snapshot
	lists := []func(context.Context) error{
		func(ctx context.Context) (err error) {
			snap.teams, err = listAll(func(cur *string) ([]models.Team, *string, error) {
				r, err := c.ListTeamsWithResponse(ctx, &models.ListTeamsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list teams", err)
		},
		func(ctx context.Context) (err error) {
			snap.projects, err = listAll(func(cur *string) ([]models.Project, *string, error) {
				r, err := c.ListProjectsWithResponse(ctx, &models.ListProjectsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list projects", err)
		},
		func(ctx context.Context) (err error) {
			snap.rateLimits, err = listAll(func(cur *string) ([]models.RateLimit, *string, error) {
				r, err := c.ListRateLimitsWithResponse(ctx, &models.ListRateLimitsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list rate limits", err)
		},
		func(ctx context.Context) (err error) {
			snap.hosts, err = listAll(func(cur *string) ([]models.Host, *string, error) {
				r, err := c.ListHostsWithResponse(ctx, &models.ListHostsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list hosts", err)
		},
		func(ctx context.Context) (err error) {
			snap.models, err = listAll(func(cur *string) ([]models.Model, *string, error) {
				r, err := c.ListModelsWithResponse(ctx, &models.ListModelsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list models", err)
		},
		func(ctx context.Context) (err error) {
			snap.bindings, err = listAll(func(cur *string) ([]models.Binding, *string, error) {
				r, err := c.ListBindingsWithResponse(ctx, &models.ListBindingsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list bindings", err)
		},
		func(ctx context.Context) (err error) {
			snap.hostKeys, err = listAll(func(cur *string) ([]models.HostKey, *string, error) {
				r, err := c.ListHostKeysWithResponse(ctx, &models.ListHostKeysParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list host keys", err)
		},
		func(ctx context.Context) (err error) {
			snap.policies, err = listAll(func(cur *string) ([]models.Policy, *string, error) {
				r, err := c.ListPoliciesWithResponse(ctx, &models.ListPoliciesParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list policies", err)
		},
		func(ctx context.Context) (err error) {
			snap.mcpServers, err = listAll(func(cur *string) ([]models.McpServer, *string, error) {
				r, err := c.ListMcpServersWithResponse(ctx, &models.ListMcpServersParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list MCP servers", err)
		},
		func(ctx context.Context) (err error) {
			snap.serviceAccounts, err = listAll(func(cur *string) ([]models.ServiceAccount, *string, error) {
				r, err := c.ListServiceAccountsWithResponse(ctx, &models.ListServiceAccountsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list service accounts", err)
		},
		func(ctx context.Context) (err error) {
			snap.groups, err = listAll(func(cur *string) ([]models.Group, *string, error) {
				r, err := c.ListGroupsWithResponse(ctx, &models.ListGroupsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list groups", err)
		},
		func(ctx context.Context) (err error) {
			snap.users, err = listAll(func(cur *string) ([]models.User, *string, error) {
				r, err := c.ListUsersWithResponse(ctx, &models.ListUsersParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list users", err)
		},
		func(ctx context.Context) (err error) {
			snap.policyBindings, err = listAll(func(cur *string) ([]models.PolicyBinding, *string, error) {
				r, err := c.ListPolicyBindingsWithResponse(ctx, &models.ListPolicyBindingsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list policy bindings", err)
		},
		func(ctx context.Context) (err error) {
			snap.roleBindings, err = listAll(func(cur *string) ([]models.RoleBinding, *string, error) {
				r, err := c.ListRoleBindingsWithResponse(ctx, &models.ListRoleBindingsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list role bindings", err)
		},
		func(ctx context.Context) (err error) {
			snap.budgets, err = listAll(func(cur *string) ([]models.Budget, *string, error) {
				r, err := c.ListBudgetsWithResponse(ctx, &models.ListBudgetsParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			return wrap("list budgets", err)
		},
	}
	if err := forEach(ctx, parallel, lists, func(ctx context.Context, f func(context.Context) error) error { return f(ctx) }); err != nil {
		return nil, summarize(err)
	}
	if err := readGrants(ctx, c, parallel, &snap); err != nil {
		return nil, summarize(err)
	}
	return buildState(&snap, asCaller)
}

// probe asks who the caller is, once, before the parallel reads: an
// unreachable control plane or a refused token is then one plain error
// instead of one per list. Only the admin token sees the whole catalog (a
// session sees what its role bindings show), so it is required.
func probe(ctx context.Context, c *client.ClientWithResponses) error {
	r, err := c.WhoamiWithResponse(ctx)
	if err != nil {
		return err
	}
	who, err := result(r.JSON200, r.StatusCode(), r.Body)
	if err != nil {
		return err
	}
	if who.Principal != models.PrincipalAdminToken {
		return errors.New("config as code needs the admin token (--token or RELAY_ADMIN_TOKEN), not a session")
	}
	return nil
}

// readGrants reads the sub-collections: each policy's grants and per-model
// rate limits, each group's members. The API has no bulk read of them, so
// this is one call (at least) per policy and per group.
func readGrants(ctx context.Context, c *client.ClientWithResponses, parallel int, snap *snapshot) error {
	snap.modelGrants = map[uuid.UUID][]models.PolicyModelGrant{}
	snap.hostKeyGrants = map[uuid.UUID][]models.PolicyHostKeyGrant{}
	snap.modelRateLimits = map[uuid.UUID][]models.PolicyModelRateLimit{}
	snap.members = map[uuid.UUID][]models.GroupMember{}
	snap.policyShares = map[uuid.UUID][]uuid.UUID{}
	snap.hostKeyShares = map[uuid.UUID][]uuid.UUID{}
	var mu sync.Mutex
	var calls []func(context.Context) error
	for _, k := range snap.hostKeys {
		calls = append(calls, func(ctx context.Context) error {
			g, err := listAll(func(cur *string) ([]models.HostKeyTeamShare, *string, error) {
				r, err := c.ListHostKeySharesWithResponse(ctx, k.ID, &models.ListHostKeySharesParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			mu.Lock()
			for _, s := range g {
				snap.hostKeyShares[k.ID] = append(snap.hostKeyShares[k.ID], s.TeamID)
			}
			mu.Unlock()
			return wrap("list the shares of host key "+k.Slug, err)
		})
	}
	for _, p := range snap.policies {
		if p.TeamID == nil { // a team's policy is never shared
			calls = append(calls, func(ctx context.Context) error {
				g, err := listAll(func(cur *string) ([]models.PolicyTeamShare, *string, error) {
					r, err := c.ListPolicySharesWithResponse(ctx, p.ID, &models.ListPolicySharesParams{Limit: limit(), Cursor: cur})
					if err != nil {
						return nil, nil, err
					}
					if r.StatusCode() == http.StatusNotFound { // shares are system business: a team admin sees none
						return nil, nil, nil
					}
					l, err := result(r.JSON200, r.StatusCode(), r.Body)
					return l.Items, l.NextCursor, err
				})
				mu.Lock()
				for _, s := range g {
					snap.policyShares[p.ID] = append(snap.policyShares[p.ID], s.TeamID)
				}
				mu.Unlock()
				return wrap("list the shares of policy "+p.Slug, err)
			})
		}
		calls = append(calls,
			func(ctx context.Context) error {
				g, err := listAll(func(cur *string) ([]models.PolicyModelGrant, *string, error) {
					r, err := c.ListPolicyModelGrantsWithResponse(ctx, p.ID, &models.ListPolicyModelGrantsParams{Limit: limit(), Cursor: cur})
					if err != nil {
						return nil, nil, err
					}
					l, err := result(r.JSON200, r.StatusCode(), r.Body)
					return l.Items, l.NextCursor, err
				})
				mu.Lock()
				snap.modelGrants[p.ID] = g
				mu.Unlock()
				return wrap("list model grants of policy "+p.Slug, err)
			},
			func(ctx context.Context) error {
				g, err := listAll(func(cur *string) ([]models.PolicyHostKeyGrant, *string, error) {
					r, err := c.ListPolicyHostKeyGrantsWithResponse(ctx, p.ID, &models.ListPolicyHostKeyGrantsParams{Limit: limit(), Cursor: cur})
					if err != nil {
						return nil, nil, err
					}
					l, err := result(r.JSON200, r.StatusCode(), r.Body)
					return l.Items, l.NextCursor, err
				})
				mu.Lock()
				snap.hostKeyGrants[p.ID] = g
				mu.Unlock()
				return wrap("list host key grants of policy "+p.Slug, err)
			},
			func(ctx context.Context) error {
				g, err := listAll(func(cur *string) ([]models.PolicyModelRateLimit, *string, error) {
					r, err := c.ListPolicyModelRateLimitsWithResponse(ctx, p.ID, &models.ListPolicyModelRateLimitsParams{Limit: limit(), Cursor: cur})
					if err != nil {
						return nil, nil, err
					}
					l, err := result(r.JSON200, r.StatusCode(), r.Body)
					return l.Items, l.NextCursor, err
				})
				mu.Lock()
				snap.modelRateLimits[p.ID] = g
				mu.Unlock()
				return wrap("list model rate limits of policy "+p.Slug, err)
			})
	}
	for _, g := range snap.groups {
		calls = append(calls, func(ctx context.Context) error {
			m, err := listAll(func(cur *string) ([]models.GroupMember, *string, error) {
				r, err := c.ListGroupMembersWithResponse(ctx, g.ID, &models.ListGroupMembersParams{Limit: limit(), Cursor: cur})
				if err != nil {
					return nil, nil, err
				}
				l, err := result(r.JSON200, r.StatusCode(), r.Body)
				return l.Items, l.NextCursor, err
			})
			mu.Lock()
			snap.members[g.ID] = m
			mu.Unlock()
			return wrap("list members of group "+g.Slug, err)
		})
	}
	return forEach(ctx, parallel, calls, func(ctx context.Context, f func(context.Context) error) error { return f(ctx) })
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// names maps ids to natural keys while the state is built; a missing id
// means a row changed between two list calls.
type names map[uuid.UUID]string

func (n names) of(kind string, id uuid.UUID) (string, error) {
	k, ok := n[id]
	if !ok {
		return "", fmt.Errorf("read state: %s %s is gone (the catalog changed while it was read; run again)", kind, id)
	}
	return k, nil
}

func (n names) ofPtr(kind string, id *uuid.UUID) (string, error) {
	if id == nil {
		return "", nil
	}
	return n.of(kind, *id)
}

// buildState turns the lists into objects. With partial (a caller's own
// view, Options.AsCaller) an object that names a row the caller cannot see
// (a role binding of a user outside its directory) is left out, as the rows
// the lists did not return are; otherwise such a name is an error.
func buildState(snap *snapshot, partial bool) (*state, error) {
	st := newState()
	var (
		errs   []error
		unseen bool // the object being built names a row that is not in the lists
	)
	must := func(s string, err error) string {
		if err != nil {
			errs = append(errs, err)
			unseen = true
		}
		return s
	}
	add := st.add
	if partial {
		add = func(o *object) {
			if !unseen {
				st.add(o)
			}
			unseen = false
		}
	}

	teams, projects, rateLimits, hosts, models := names{}, names{}, names{}, names{}, names{}
	hostKeys, policies, groups, users, serviceAccounts := names{}, names{}, names{}, names{}, names{}

	for _, t := range snap.teams {
		teams[t.ID] = t.Slug
		add(&object{kind: KindTeam, id: t.ID, spec: &TeamSpec{Slug: t.Slug, Name: t.Name}})
	}
	for _, p := range snap.projects {
		s := &ProjectSpec{Team: must(teams.of("team", p.TeamID)), Slug: p.Slug, Name: p.Name}
		projects[p.ID] = s.key()
		add(&object{kind: KindProject, id: p.ID, spec: s})
	}
	for _, r := range snap.rateLimits {
		rateLimits[r.ID] = r.Slug
		s := &RateLimitSpec{Slug: r.Slug, Name: r.Name}
		for _, rule := range r.Rules {
			s.Rules = append(s.Rules, Rule{Meter: string(rule.Meter), Amount: rule.Amount, WindowSeconds: rule.WindowSeconds, PerPrincipal: rule.PerPrincipal})
		}
		s.normalize()
		add(&object{kind: KindRateLimit, id: r.ID, spec: s, rules: r.Rules})
	}
	for _, h := range snap.hosts {
		hosts[h.ID] = h.Slug
		hs := &HostSpec{
			Slug: h.Slug, Name: h.Name, Provider: string(h.Provider), BaseURL: h.BaseURL, Enabled: h.Enabled,
			ConnectTimeoutMs: h.ConnectTimeoutMs, FirstByteTimeoutMs: h.FirstByteTimeoutMs,
			IdleTimeoutMs: h.IdleTimeoutMs, TotalTimeoutMs: h.TotalTimeoutMs, ForwardHeaders: h.ForwardHeaders,
			BreakerServerFailures: h.BreakerServerFailures, BreakerNetworkFailures: h.BreakerNetworkFailures,
			Profile: h.Profile, ProfileParams: h.ProfileParams,
		}
		hs.normalize()
		add(&object{kind: KindHost, id: h.ID, spec: hs})
	}
	for _, m := range snap.models {
		models[m.ID] = m.Name
	}
	for _, m := range snap.models {
		s := &ModelSpec{
			Name: m.Name, Provider: m.Provider, Kind: string(m.Kind), ContextWindow: m.ContextWindow,
			MaxOutputTokens: m.MaxOutputTokens, SupportsTools: m.SupportsTools, SupportsVision: m.SupportsVision,
			SupportsJSON: m.SupportsJSON, SupportsThinking: m.SupportsThinking, Strategy: string(m.Strategy),
		}
		for _, id := range m.Fallbacks {
			s.Fallbacks = append(s.Fallbacks, must(models.of("model", id)))
		}
		s.normalize()
		add(&object{kind: KindModel, id: m.ID, spec: s})
	}
	for _, b := range snap.bindings {
		s := &BindingSpec{
			Model: must(models.of("model", b.ModelID)), Host: must(hosts.of("host", b.HostID)),
			Shape: string(b.Shape), UpstreamModel: b.UpstreamModel, Position: b.Position, Weight: b.Weight, Enabled: b.Enabled,
			InputPrice: b.InputPrice, OutputPrice: b.OutputPrice, CachedInputPrice: b.CachedInputPrice,
			CacheWritePrice: b.CacheWritePrice, ReasoningPrice: b.ReasoningPrice,
		}
		for _, t := range b.PriceTiers {
			s.PriceTiers = append(s.PriceTiers, PriceTier{
				AboveInputTokens: t.AboveInputTokens, InputPrice: t.InputPrice, OutputPrice: t.OutputPrice,
				CachedInputPrice: t.CachedInputPrice, CacheWritePrice: t.CacheWritePrice, ReasoningPrice: t.ReasoningPrice,
			})
		}
		for _, u := range b.UnitPrices {
			s.UnitPrices = append(s.UnitPrices, UnitPrice{Unit: string(u.Unit), Size: orEmpty(u.Size), Quality: orEmpty(u.Quality), Price: u.Price})
		}
		s.normalize()
		add(&object{kind: KindBinding, id: b.ID, spec: s})
	}
	for _, k := range snap.hostKeys {
		s := &HostKeySpec{
			Host: must(hosts.of("host", k.HostID)), Slug: k.Slug, TierRateLimit: must(rateLimits.ofPtr("rate limit", k.TierRateLimitID)),
			Position: k.Position, Enabled: k.Enabled,
		}
		if k.SecretRef != nil {
			s.SecretRef = *k.SecretRef
		}
		for _, t := range snap.hostKeyShares[k.ID] {
			s.SharedWith = append(s.SharedWith, must(teams.of("team", t)))
		}
		s.normalize()
		hostKeys[k.ID] = s.key()
		add(&object{kind: KindHostKey, id: k.ID, spec: s, sealed: k.SecretRef == nil})
	}
	for _, m := range snap.mcpServers {
		s := &MCPServerSpec{
			Slug: m.Slug, Name: m.Name, URL: m.URL, Enabled: m.Enabled, TimeoutMs: m.TimeoutMs,
			RateLimit: must(rateLimits.ofPtr("rate limit", m.RateLimitID)), AuthHeader: m.AuthHeader,
			AuthSecretRef: orEmpty(m.AuthSecretRef),
		}
		if len(m.ToolPrices) > 0 {
			s.ToolPrices = map[string]int64(m.ToolPrices)
		}
		if o := m.Oauth; o != nil {
			s.OAuth = &MCPOAuthSpec{TokenURL: o.TokenURL, ClientID: o.ClientID, ClientSecretRef: orEmpty(o.ClientSecretRef),
				Scopes: o.Scopes, Audience: o.Audience, Resource: o.Resource, AuthMethod: string(o.AuthMethod),
				sealed: string(o.ClientSecretSource) == "sealed"}
		}
		stale := 0
		for tool, id := range m.ToolRateLimits {
			if rl, ok := rateLimits[id]; ok {
				if s.ToolRateLimits == nil {
					s.ToolRateLimits = map[string]string{}
				}
				s.ToolRateLimits[tool] = rl
			} else {
				stale++ // no foreign key: a deleted rate limit lingers, and limits nothing
			}
		}
		if stale > 0 {
			st.notes = append(st.notes, fmt.Sprintf("MCPServer %s: %d tool rate limit(s) name a rate limit that no longer exists; left out", m.Slug, stale))
		}
		s.normalize()
		add(&object{kind: KindMCPServer, id: m.ID, spec: s, sealed: string(m.AuthSecretSource) == "sealed"}) // models is the names map here
	}
	for _, p := range snap.policies {
		policies[p.ID] = p.Slug
		s := &PolicySpec{
			Slug: p.Slug, Team: must(teams.ofPtr("team", p.TeamID)), Name: p.Name, AllModels: p.AllModels, AllHostKeys: p.AllHostKeys,
			KeyStrategy: string(p.KeyStrategy), RateLimit: must(rateLimits.ofPtr("rate limit", p.RateLimitID)),
			MaxWaitMs: p.MaxWaitMs, Priority: p.Priority, MaxAttempts: p.MaxAttempts,
			LimiterFailureMode: string(p.LimiterFailureMode),
			CapturePayloads:    p.CapturePayloads, CaptureMaxBytes: p.CaptureMaxBytes,
			RouteStrategy: string(p.RouteStrategy), Affinity: string(p.Affinity), BudgetFallback: p.BudgetFallback,
			DegradeAfterMs: p.DegradeAfterMs, DegradeBelowPriority: p.DegradeBelowPriority,
		}
		for _, g := range snap.modelGrants[p.ID] {
			s.Models = append(s.Models, must(models.of("model", g.ModelID)))
		}
		for _, g := range snap.hostKeyGrants[p.ID] {
			s.HostKeys = append(s.HostKeys, must(hostKeys.of("host key", g.HostKeyID)))
		}
		for _, t := range snap.policyShares[p.ID] {
			s.SharedWith = append(s.SharedWith, must(teams.of("team", t)))
		}
		var stale int
		s.ResponseCache, stale = responseCacheSpec(p.ResponseCache, models)
		if stale > 0 {
			st.notes = append(st.notes, fmt.Sprintf("Policy %s: its response cache names %d model(s) that no longer exist; left out (a semantic domain whose embedding model or every model is gone is left out whole)", p.Slug, stale))
		}
		s.Guardrails = guardrailsSpec(p.Guardrails)
		s.MCP = &PolicyMCP{} // s.normalize() drops it when it grants and requires nothing
		if p.McpGrants != nil {
			s.MCP.Grants = slices.Clone(*p.McpGrants)
		}
		if p.McpRequireApproval != nil {
			s.MCP.RequireApproval = *p.McpRequireApproval
		}
		for _, m := range snap.modelRateLimits[p.ID] {
			s.ModelRateLimits = append(s.ModelRateLimits, ModelRateLimit{
				Model: must(models.of("model", m.ModelID)), RateLimit: must(rateLimits.of("rate limit", m.RateLimitID)), Position: m.Position,
			})
		}
		s.normalize()
		add(&object{kind: KindPolicy, id: p.ID, spec: s})
	}
	for _, a := range snap.serviceAccounts {
		s := &ServiceAccountSpec{
			Project: must(projects.of("project", a.ProjectID)), Slug: a.Slug, Name: a.Name,
			Policy: must(policies.ofPtr("policy", a.PolicyID)),
		}
		serviceAccounts[a.ID] = a.Slug // within its project, as policy bindings name it
		add(&object{kind: KindServiceAccount, id: a.ID, spec: s})
	}
	userGroups := map[uuid.UUID][]string{}
	for _, g := range snap.groups {
		groups[g.ID] = g.Slug
		add(&object{kind: KindGroup, id: g.ID, spec: &GroupSpec{Slug: g.Slug, Name: g.Name}})
		for _, m := range snap.members[g.ID] {
			userGroups[m.UserID] = append(userGroups[m.UserID], g.Slug)
		}
	}
	for _, u := range snap.users {
		users[u.ID] = string(u.Email)
		s := &UserSpec{Email: string(u.Email), Name: u.Name, Disabled: u.Disabled, Groups: userGroups[u.ID]}
		s.normalize()
		add(&object{kind: KindUser, id: u.ID, spec: s})
	}
	for _, b := range snap.policyBindings {
		s := &PolicyBindingSpec{
			Project: must(projects.of("project", b.ProjectID)), Policy: must(policies.of("policy", b.PolicyID)),
			ServiceAccount: must(serviceAccounts.ofPtr("service account", b.ServiceAccountID)),
			User:           must(users.ofPtr("user", b.UserID)), Group: must(groups.ofPtr("group", b.GroupID)),
			Position: b.Position,
		}
		add(&object{kind: KindPolicyBinding, id: b.ID, spec: s})
	}
	for _, b := range snap.roleBindings {
		s := &RoleBindingSpec{
			Role: string(b.Role), User: must(users.ofPtr("user", b.UserID)), Group: must(groups.ofPtr("group", b.GroupID)),
			Team: must(teams.ofPtr("team", b.TeamID)), Project: must(projects.ofPtr("project", b.ProjectID)),
		}
		add(&object{kind: KindRoleBinding, id: b.ID, spec: s})
	}
	relayKeyBudgets := 0
	for _, b := range snap.budgets {
		if b.RelayKeyID != nil {
			relayKeyBudgets++
			continue
		}
		s := &BudgetSpec{
			Team: must(teams.ofPtr("team", b.TeamID)), Project: must(projects.ofPtr("project", b.ProjectID)),
			Period: string(b.Period), Amount: b.Amount,
		}
		add(&object{kind: KindBudget, id: b.ID, spec: s})
	}
	if relayKeyBudgets > 0 {
		st.notes = append(st.notes, fmt.Sprintf("%d budget(s) on relay keys left out: relay keys are minted, not config", relayKeyBudgets))
	}
	if len(errs) > 0 && !partial {
		return nil, errs[0]
	}
	return st, nil
}

// responseCacheSpec is a policy's cache settings as a spec holds them,
// models by name. The API keeps the models as ids without a foreign key, so
// a deleted model can linger there: it is left out (and counted), not an
// error, since the cache ignores it too.
func responseCacheSpec(c *models.ResponseCache, modelNames names) (*ResponseCache, int) {
	if c == nil || !c.Enabled {
		return nil, 0
	}
	out := &ResponseCache{ScopeHeader: orEmpty(c.ScopeHeader)}
	if c.Scope != nil {
		out.Scope = string(*c.Scope)
	}
	if c.TTLSeconds != nil {
		out.TTLSeconds = *c.TTLSeconds
	}
	if c.MaxEntryBytes != nil {
		out.MaxEntryBytes = *c.MaxEntryBytes
	}
	if c.Nondeterministic != nil {
		out.Nondeterministic = *c.Nondeterministic
	}
	stale := 0
	if c.Models != nil {
		for _, id := range *c.Models {
			if n, ok := modelNames[id]; ok {
				out.Models = append(out.Models, n)
			} else {
				stale++
			}
		}
	}
	if c.Semantic != nil {
		for _, d := range *c.Semantic {
			sd, n := semanticDomainSpec(d, modelNames)
			stale += n
			if sd != nil {
				out.Semantic = append(out.Semantic, *sd)
			}
		}
	}
	return out.normalize(), stale
}

// semanticDomainSpec is one semantic cache domain as a spec holds it,
// models by name, and how many of its models no longer exist. A domain
// without its embedding model, or with none of its models left (which would
// widen it to every model), is nil: the cache cannot use it as written.
func semanticDomainSpec(d models.SemanticCacheDomain, modelNames names) (*SemanticDomain, int) {
	out := &SemanticDomain{Name: d.Name}
	if d.Metadata != nil {
		out.Metadata = maps.Clone(*d.Metadata)
	}
	if d.SystemSha256 != nil {
		out.SystemSHA256 = slices.Clone(*d.SystemSha256)
	}
	stale := 0
	if n, ok := modelNames[d.EmbeddingsModel]; ok {
		out.EmbeddingsModel = n
	} else {
		stale++
	}
	if d.Models != nil {
		for _, id := range *d.Models {
			if n, ok := modelNames[id]; ok {
				out.Models = append(out.Models, n)
			} else {
				stale++
			}
		}
		if len(*d.Models) > 0 && len(out.Models) == 0 {
			return nil, stale
		}
	}
	if out.EmbeddingsModel == "" {
		return nil, stale
	}
	if d.Threshold != nil {
		// The API's number is a float32: kept, as the API does, to four places.
		out.Threshold = math.Round(float64(*d.Threshold)*1e4) / 1e4
	}
	return out, stale
}

// guardrailsSpec is a policy's guardrails as a spec holds them.
func guardrailsSpec(g *models.Guardrails) *Guardrails {
	if g == nil {
		return nil
	}
	out := &Guardrails{}
	if g.MaxPromptBytes != nil {
		out.MaxPromptBytes = *g.MaxPromptBytes
	}
	for _, r := range g.Rules {
		o := GuardrailRule{Name: r.Name, Stage: string(r.Stage), Action: string(r.Action)}
		if r.Detectors != nil {
			for _, d := range *r.Detectors {
				o.Detectors = append(o.Detectors, string(d))
			}
		}
		if r.DenyWords != nil {
			o.DenyWords = slices.Clone(*r.DenyWords)
		}
		if r.DenyPatterns != nil {
			o.DenyPatterns = slices.Clone(*r.DenyPatterns)
		}
		if w := r.Webhook; w != nil {
			o.Webhook = &GuardrailWebhook{URL: w.URL, Fail: string(orEmpty((*string)(w.Fail)))}
			if w.TimeoutMs != nil {
				o.Webhook.TimeoutMs = *w.TimeoutMs
			}
			if w.MaxConcurrent != nil {
				o.Webhook.MaxConcurrent = *w.MaxConcurrent
			}
		}
		out.Rules = append(out.Rules, o)
	}
	return out.normalize()
}

// forEach runs fn on every item, at most n at once. After the first error
// it starts no more, but lets the calls under way finish (a write cut off
// mid-request leaves the caller not knowing whether it happened); it returns
// every error of the calls that ran.
func forEach[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	if n < 1 {
		n = 1
	}
	var (
		mu     sync.Mutex
		errs   []error
		wg     sync.WaitGroup
		failed atomic.Bool
	)
	sem := make(chan struct{}, n)
	for _, it := range items {
		if failed.Load() || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	if len(errs) == 0 {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// orEmpty is *s, or "" for nil.
func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
