package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// Row types, shared with the generated package so callers need not import it.
type (
	Team                 = dbsqlc.Team
	Project              = dbsqlc.Project
	User                 = dbsqlc.User
	Group                = dbsqlc.Group
	GroupMembership      = dbsqlc.GroupMembership
	ServiceAccount       = dbsqlc.ServiceAccount
	RateLimit            = dbsqlc.RateLimit
	RateLimitRule        = dbsqlc.RateLimitRule
	Host                 = dbsqlc.Host
	Model                = dbsqlc.Model
	Binding              = dbsqlc.Binding
	HostKey              = dbsqlc.HostKey
	Policy               = dbsqlc.Policy
	PolicyModel          = dbsqlc.PolicyModel
	PolicyHostKey        = dbsqlc.PolicyHostKey
	PolicyModelRateLimit = dbsqlc.PolicyModelRateLimit
	PolicyBinding        = dbsqlc.PolicyBinding
	RelayKey             = dbsqlc.RelayKey
	InferenceToken       = dbsqlc.InferenceToken
	Budget               = dbsqlc.Budget
	RoleBinding          = dbsqlc.RoleBinding
	Session              = dbsqlc.Session
	AuditLog             = dbsqlc.AuditLog
	UsageEvent           = dbsqlc.UsageEvent
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
			func() error { c.Teams, err = q.ListTeams(ctx); return err },
			func() error { c.Projects, err = q.ListProjects(ctx); return err },
			func() error { c.Users, err = q.ListUsers(ctx); return err },
			func() error { c.Groups, err = q.ListGroups(ctx); return err },
			func() error { c.GroupMemberships, err = q.ListGroupMemberships(ctx); return err },
			func() error { c.ServiceAccounts, err = q.ListServiceAccounts(ctx); return err },
			func() error { c.RateLimits, err = q.ListRateLimits(ctx); return err },
			func() error { c.RateLimitRules, err = q.ListRateLimitRules(ctx); return err },
			func() error { c.Hosts, err = q.ListHosts(ctx); return err },
			func() error { c.Models, err = q.ListModels(ctx); return err },
			func() error { c.Bindings, err = q.ListBindings(ctx); return err },
			func() error { c.HostKeys, err = q.ListHostKeys(ctx); return err },
			func() error { c.Policies, err = q.ListPolicies(ctx); return err },
			func() error { c.PolicyModels, err = q.ListPolicyModels(ctx); return err },
			func() error { c.PolicyHostKeys, err = q.ListPolicyHostKeys(ctx); return err },
			func() error { c.PolicyModelRateLimits, err = q.ListPolicyModelRateLimits(ctx); return err },
			func() error { c.PolicyBindings, err = q.ListPolicyBindings(ctx); return err },
			func() error { c.RelayKeys, err = q.ListRelayKeys(ctx); return err },
			func() error { c.InferenceTokens, err = q.ListInferenceTokens(ctx); return err },
			func() error { c.Budgets, err = q.ListBudgets(ctx); return err },
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
		r, err := q.GetTeamByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Teams = append(c.Teams, r)
	case KindProjects:
		r, err := q.GetProjectByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Projects = append(c.Projects, r)
	case KindUsers:
		r, err := q.GetUserByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Users = append(c.Users, r)
	case KindGroups:
		r, err := q.GetGroupByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		m, err := q.ListGroupMembershipsByGroup(ctx, id)
		if err != nil {
			return false, mapErr(err)
		}
		c.Groups = append(c.Groups, r)
		c.GroupMemberships = append(c.GroupMemberships, m...)
	case KindServiceAccounts:
		r, err := q.GetServiceAccountByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.ServiceAccounts = append(c.ServiceAccounts, r)
	case KindRateLimits:
		r, err := q.GetRateLimitByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		rules, err := q.ListRateLimitRulesByRateLimit(ctx, id)
		if err != nil {
			return false, mapErr(err)
		}
		c.RateLimits = append(c.RateLimits, r)
		c.RateLimitRules = append(c.RateLimitRules, rules...)
	case KindHosts:
		r, err := q.GetHostByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Hosts = append(c.Hosts, r)
	case KindModels:
		r, err := q.GetModelByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Models = append(c.Models, r)
	case KindBindings:
		r, err := q.GetBindingByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Bindings = append(c.Bindings, r)
	case KindHostKeys:
		r, err := q.GetHostKeyByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.HostKeys = append(c.HostKeys, r)
	case KindPolicies:
		r, err := q.GetPolicyByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		pm, err := q.ListPolicyModelsByPolicy(ctx, id)
		if err != nil {
			return false, mapErr(err)
		}
		pk, err := q.ListPolicyHostKeysByPolicy(ctx, id)
		if err != nil {
			return false, mapErr(err)
		}
		pr, err := q.ListPolicyModelRateLimitsByPolicy(ctx, id)
		if err != nil {
			return false, mapErr(err)
		}
		c.Policies = append(c.Policies, r)
		c.PolicyModels = append(c.PolicyModels, pm...)
		c.PolicyHostKeys = append(c.PolicyHostKeys, pk...)
		c.PolicyModelRateLimits = append(c.PolicyModelRateLimits, pr...)
	case KindPolicyBindings:
		r, err := q.GetPolicyBindingByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.PolicyBindings = append(c.PolicyBindings, r)
	case KindRelayKeys:
		r, err := q.GetRelayKeyByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.RelayKeys = append(c.RelayKeys, r)
	case KindInferenceTokens:
		r, err := q.GetInferenceTokenByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.InferenceTokens = append(c.InferenceTokens, r)
	case KindBudgets:
		r, err := q.GetBudgetByID(ctx, id)
		if ok, err := keep(err); !ok {
			return false, err
		}
		c.Budgets = append(c.Budgets, r)
	default:
		return true, nil // not a snapshot kind: nothing to do, nothing deleted
	}
	return true, nil
}
