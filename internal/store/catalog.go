package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// Catalog is every row the snapshot is built from. In a partial read (see
// ReadChanged) it holds only the rows asked for; aggregates (a group with its
// members, a rate limit with its rules, a policy with its grants) come whole.
type Catalog struct {
	Teams                 []Team
	Projects              []Project
	Users                 []User
	Groups                []Group
	GroupMemberships      []GroupMembership
	ServiceAccounts       []ServiceAccount
	RateLimits            []RateLimit
	RateLimitRules        []RateLimitRule
	Hosts                 []Host
	Models                []Model
	Bindings              []Binding
	HostKeys              []HostKey
	Policies              []Policy
	PolicyModels          []PolicyModel
	PolicyHostKeys        []PolicyHostKey
	PolicyModelRateLimits []PolicyModelRateLimit
	PolicyBindings        []PolicyBinding
	RelayKeys             []RelayKey
	InferenceTokens       []InferenceToken
	Budgets               []Budget
}

// readOnly is a consistent read: every query sees the same committed state.
var readOnly = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// ReadCatalog reads every catalog row in one repeatable-read transaction.
func (s *Store) ReadCatalog(ctx context.Context) (*Catalog, error) {
	c := &Catalog{}
	err := s.inTx(ctx, readOnly, func(tx *Tx) error {
		q := tx.q
		var err error
		steps := []func() error{
			func() error { c.Teams, err = teamsTable.many(q.ListTeams(ctx)); return err },
			func() error { c.Projects, err = projectsTable.many(q.ListProjects(ctx)); return err },
			func() error { c.Users, err = usersTable.many(q.ListUsers(ctx)); return err },
			func() error { c.Groups, err = groupsTable.many(q.ListGroups(ctx)); return err },
			func() error {
				c.GroupMemberships, err = groupMembershipsTable.many(q.ListGroupMemberships(ctx))
				return err
			},
			func() error {
				c.ServiceAccounts, err = serviceAccountsTable.many(q.ListServiceAccounts(ctx))
				return err
			},
			func() error { c.RateLimits, err = rateLimitsTable.many(q.ListRateLimits(ctx)); return err },
			func() error { c.RateLimitRules, err = rateLimitRulesTable.many(q.ListRateLimitRules(ctx)); return err },
			func() error { c.Hosts, err = hostsTable.many(q.ListHosts(ctx)); return err },
			func() error { c.Models, err = modelsTable.many(q.ListModels(ctx)); return err },
			func() error { c.Bindings, err = bindingsTable.many(q.ListBindings(ctx)); return err },
			func() error { c.HostKeys, err = hostKeysTable.many(q.ListHostKeys(ctx)); return err },
			func() error { c.Policies, err = policiesTable.many(q.ListPolicies(ctx)); return err },
			func() error { c.PolicyModels, err = policyModelsTable.many(q.ListPolicyModels(ctx)); return err },
			func() error { c.PolicyHostKeys, err = policyHostKeysTable.many(q.ListPolicyHostKeys(ctx)); return err },
			func() error {
				c.PolicyModelRateLimits, err = policyModelRateLimitsTable.many(q.ListPolicyModelRateLimits(ctx))
				return err
			},
			func() error { c.PolicyBindings, err = policyBindingsTable.many(q.ListPolicyBindings(ctx)); return err },
			func() error { c.RelayKeys, err = relayKeysTable.many(q.ListRelayKeys(ctx)); return err },
			func() error {
				c.InferenceTokens, err = inferenceTokensTable.many(q.ListInferenceTokens(ctx))
				return err
			},
			func() error { c.Budgets, err = budgetsTable.many(q.ListBudgets(ctx)); return err },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("read catalog: %w", mapErr(err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ReadChanged reads the current rows for the given IDs per kind (see Kind.Owner)
// in one repeatable-read transaction. Rows that no longer exist are returned
// in deleted. Unknown kinds are ignored.
func (s *Store) ReadChanged(ctx context.Context, changed map[Kind][]uuid.UUID) (c *Catalog, deleted map[Kind][]uuid.UUID, err error) {
	c = &Catalog{}
	deleted = make(map[Kind][]uuid.UUID)
	err = s.inTx(ctx, readOnly, func(tx *Tx) error {
		q := tx.q
		for kind, ids := range changed {
			for _, id := range ids {
				found, err := readOne(ctx, q, c, kind, id)
				if err != nil {
					return fmt.Errorf("read %s %s: %w", kind, id, err)
				}
				if !found {
					deleted[kind] = append(deleted[kind], id)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c, deleted, nil
}

// readOne appends the row (and its aggregate parts) to c; found is false when it is gone.
func readOne(ctx context.Context, q *dbsqlc.Queries, c *Catalog, kind Kind, id uuid.UUID) (found bool, err error) {
	keep := func(err error) (bool, error) {
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return err == nil, mapErr(err)
	}
	switch kind {
	case KindTeams:
		r, err := teamsTable.one(q.GetTeamByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Teams = append(c.Teams, r)
	case KindProjects:
		r, err := projectsTable.one(q.GetProjectByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Projects = append(c.Projects, r)
	case KindUsers:
		r, err := usersTable.one(q.GetUserByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Users = append(c.Users, r)
	case KindGroups:
		r, err := groupsTable.one(q.GetGroupByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		m, err := groupMembershipsTable.many(q.ListGroupMembershipsByGroup(ctx, id))
		if err != nil {
			return false, mapErr(err)
		}
		c.Groups = append(c.Groups, r)
		c.GroupMemberships = append(c.GroupMemberships, m...)
	case KindServiceAccounts:
		r, err := serviceAccountsTable.one(q.GetServiceAccountByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.ServiceAccounts = append(c.ServiceAccounts, r)
	case KindRateLimits:
		r, err := rateLimitsTable.one(q.GetRateLimitByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		rules, err := rateLimitRulesTable.many(q.ListRateLimitRulesByRateLimit(ctx, id))
		if err != nil {
			return false, mapErr(err)
		}
		c.RateLimits = append(c.RateLimits, r)
		c.RateLimitRules = append(c.RateLimitRules, rules...)
	case KindHosts:
		r, err := hostsTable.one(q.GetHostByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Hosts = append(c.Hosts, r)
	case KindModels:
		r, err := modelsTable.one(q.GetModelByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Models = append(c.Models, r)
	case KindBindings:
		r, err := bindingsTable.one(q.GetBindingByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Bindings = append(c.Bindings, r)
	case KindHostKeys:
		r, err := hostKeysTable.one(q.GetHostKeyByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.HostKeys = append(c.HostKeys, r)
	case KindPolicies:
		r, err := policiesTable.one(q.GetPolicyByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		pm, err := policyModelsTable.many(q.ListPolicyModelsByPolicy(ctx, id))
		if err != nil {
			return false, mapErr(err)
		}
		pk, err := policyHostKeysTable.many(q.ListPolicyHostKeysByPolicy(ctx, id))
		if err != nil {
			return false, mapErr(err)
		}
		pr, err := policyModelRateLimitsTable.many(q.ListPolicyModelRateLimitsByPolicy(ctx, id))
		if err != nil {
			return false, mapErr(err)
		}
		c.Policies = append(c.Policies, r)
		c.PolicyModels = append(c.PolicyModels, pm...)
		c.PolicyHostKeys = append(c.PolicyHostKeys, pk...)
		c.PolicyModelRateLimits = append(c.PolicyModelRateLimits, pr...)
	case KindPolicyBindings:
		r, err := policyBindingsTable.one(q.GetPolicyBindingByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.PolicyBindings = append(c.PolicyBindings, r)
	case KindRelayKeys:
		r, err := relayKeysTable.one(q.GetRelayKeyByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.RelayKeys = append(c.RelayKeys, r)
	case KindInferenceTokens:
		r, err := inferenceTokensTable.one(q.GetInferenceTokenByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.InferenceTokens = append(c.InferenceTokens, r)
	case KindBudgets:
		r, err := budgetsTable.one(q.GetBudgetByID(ctx, id))
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Budgets = append(c.Budgets, r)
	default:
		return true, nil // not a snapshot kind: nothing to do, nothing deleted
	}
	return true, nil
}
