package configfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/controlgen"
)

// Result counts what an apply did.
type Result struct {
	Created, Updated, Deleted int
}

// ids is every object's id by kind and natural key: the control plane's,
// then those apply creates.
type ids struct {
	mu sync.RWMutex
	m  [numKinds]map[string]uuid.UUID
}

func (x *ids) get(k Kind, key string) (uuid.UUID, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	id, ok := x.m[k][key]
	return id, ok
}

func (x *ids) set(k Kind, key string, id uuid.UUID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.m[k][key] = id
}

func (p *Plan) ids() *ids {
	x := &ids{}
	for k := range numKinds {
		x.m[k] = make(map[string]uuid.UUID, len(p.cur.objs[k]))
		for key, o := range p.cur.objs[k] {
			x.m[k][key] = o.id
		}
	}
	return x
}

// Apply carries the plan out: creates and updates kind by kind in dependency
// order (the objects of one kind in parallel), then deletes in reverse
// order. It stops at the first kind with an error and returns every error of
// that kind, each naming its document (or, for a delete, the object).
func (p *Plan) Apply(ctx context.Context) (Result, error) {
	var (
		res Result
		mu  sync.Mutex
	)
	known := p.ids()
	count := func(a Action) {
		mu.Lock()
		defer mu.Unlock()
		switch a {
		case ActionCreate:
			res.Created++
		case ActionUpdate:
			res.Updated++
		case ActionDelete:
			res.Deleted++
		}
	}
	// Steps are already in order; group consecutive steps of one kind and
	// action class (write or delete) into a batch that may run in parallel.
	for i := 0; i < len(p.Steps); {
		j := i + 1
		for j < len(p.Steps) && p.Steps[j].Kind == p.Steps[i].Kind && (p.Steps[j].Action == ActionDelete) == (p.Steps[i].Action == ActionDelete) {
			j++
		}
		batch := p.Steps[i:j]
		err := forEach(ctx, p.opts.Parallel, batch, func(ctx context.Context, st Step) error {
			if err := p.run(ctx, known, st); err != nil {
				return stepError(st, err)
			}
			count(st.Action)
			return nil
		})
		if err == nil && batch[0].Kind == KindModel && batch[0].Action != ActionDelete {
			err = forEach(ctx, p.opts.Parallel, batch, func(ctx context.Context, st Step) error {
				if err := p.setFallbacks(ctx, known, st); err != nil {
					return stepError(st, err)
				}
				return nil
			})
		}
		if err != nil {
			return res, summarize(err)
		}
		i = j
	}
	return res, nil
}

// setFallbacks writes a model's fallback list once every model the plan
// creates exists: a list may name a model created beside this one (or two
// models may name each other). It writes only a list that a create sets or
// an update changes.
func (p *Plan) setFallbacks(ctx context.Context, known *ids, st Step) error {
	s := st.want.spec.(*ModelSpec)
	if st.Action == ActionCreate && len(s.Fallbacks) == 0 || st.Action == ActionUpdate && !changed(st.Changes)["fallbacks"] {
		return nil
	}
	id, ok := known.get(KindModel, st.Name)
	if !ok {
		return fmt.Errorf("unresolved Model %s", st.Name)
	}
	list := make([]uuid.UUID, len(s.Fallbacks))
	for i, m := range s.Fallbacks {
		if list[i], ok = known.get(KindModel, m); !ok {
			return fmt.Errorf("unresolved Model %s", m)
		}
	}
	return p.update(ctx, id, models.ModelUpdate{Fallbacks: &list})
}

// summarize keeps an error on one line when several calls failed at once.
func summarize(err error) error {
	var multi interface{ Unwrap() []error }
	if errors.As(err, &multi) {
		errs := multi.Unwrap()
		if len(errs) > 1 {
			return fmt.Errorf("%w (and %d more errors)", errs[0], len(errs)-1)
		}
		if len(errs) == 1 {
			return errs[0]
		}
	}
	return err
}

func stepError(st Step, err error) error {
	if st.Action == ActionDelete {
		return fmt.Errorf("delete %s %s: %w", st.Kind, st.Name, err)
	}
	return &DocError{Source: st.Source, Kind: st.Kind.String(), Name: st.Name, Err: err}
}

func (p *Plan) run(ctx context.Context, known *ids, st Step) error {
	var missing []string
	id := func(k Kind, key string) uuid.UUID {
		v, ok := known.get(k, key)
		if !ok {
			missing = append(missing, k.String()+" "+key)
		}
		return v
	}
	switch st.Action {
	case ActionDelete:
		return p.delete(ctx, st.Kind, st.have.id)
	case ActionCreate:
		body, _ := createBody(st.want.spec, id)
		if len(missing) > 0 {
			return fmt.Errorf("unresolved %s", strings.Join(missing, ", "))
		}
		newID, err := p.create(ctx, body)
		if err != nil {
			return err
		}
		known.set(st.Kind, st.Name, newID)
		return p.children(ctx, st.want.spec, nil, newID, id)
	default:
		f := changed(st.Changes)
		body := updateBody(st.want.spec, f, id)
		if len(missing) > 0 {
			return fmt.Errorf("unresolved %s", strings.Join(missing, ", "))
		}
		if body != nil {
			if err := p.update(ctx, st.have.id, body); err != nil {
				return err
			}
		}
		return p.children(ctx, st.want.spec, st.have, st.have.id, id)
	}
}

func (p *Plan) create(ctx context.Context, body any) (uuid.UUID, error) {
	c := p.c
	switch b := body.(type) {
	case models.TeamCreate:
		r, err := c.CreateTeamWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.ProjectCreate:
		r, err := c.CreateProjectWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.RateLimitCreate:
		r, err := c.CreateRateLimitWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.HostCreate:
		r, err := c.CreateHostWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.ModelCreate:
		r, err := c.CreateModelWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.BindingCreate:
		r, err := c.CreateBindingWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.HostKeyCreate:
		r, err := c.CreateHostKeyWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.McpServerCreate:
		r, err := c.CreateMcpServerWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.PolicyCreate:
		r, err := c.CreatePolicyWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.ServiceAccountCreate:
		r, err := c.CreateServiceAccountWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.GroupCreate:
		r, err := c.CreateGroupWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.UserCreate:
		r, err := c.CreateUserWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.PolicyBindingCreate:
		r, err := c.CreatePolicyBindingWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.RoleBindingCreate:
		r, err := c.CreateRoleBindingWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	case models.BudgetCreate:
		r, err := c.CreateBudgetWithResponse(ctx, b)
		if err != nil {
			return uuid.Nil, err
		}
		v, err := result(r.JSON201, r.StatusCode(), r.Body)
		return v.ID, err
	}
	return uuid.Nil, fmt.Errorf("configfile: no create call for %T", body)
}

func (p *Plan) update(ctx context.Context, id uuid.UUID, body any) error {
	c := p.c
	switch b := body.(type) {
	case models.TeamUpdate:
		r, err := c.UpdateTeamWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.ProjectUpdate:
		r, err := c.UpdateProjectWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.RateLimitUpdate:
		r, err := c.UpdateRateLimitWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.HostUpdate:
		r, err := c.UpdateHostWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.ModelUpdate:
		r, err := c.UpdateModelWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.BindingUpdate:
		r, err := c.UpdateBindingWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.HostKeyUpdate:
		r, err := c.UpdateHostKeyWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.McpServerUpdate:
		r, err := c.UpdateMcpServerWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.PolicyUpdate:
		r, err := c.UpdatePolicyWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.ServiceAccountUpdate:
		r, err := c.UpdateServiceAccountWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.GroupUpdate:
		r, err := c.UpdateGroupWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.UserUpdate:
		r, err := c.UpdateUserWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.PolicyBindingUpdate:
		r, err := c.UpdatePolicyBindingWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	case models.BudgetUpdate:
		r, err := c.UpdateBudgetWithResponse(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = result(r.JSON200, r.StatusCode(), r.Body)
		return err
	}
	return fmt.Errorf("configfile: no update call for %T", body)
}

func (p *Plan) delete(ctx context.Context, k Kind, id uuid.UUID) error {
	var (
		status int
		body   []byte
	)
	c := p.c
	switch k {
	case KindTeam:
		r, err := c.DeleteTeamWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindProject:
		r, err := c.DeleteProjectWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindRateLimit:
		r, err := c.DeleteRateLimitWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindHost:
		r, err := c.DeleteHostWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindModel:
		r, err := c.DeleteModelWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindBinding:
		r, err := c.DeleteBindingWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindHostKey:
		r, err := c.DeleteHostKeyWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindMCPServer:
		r, err := c.DeleteMcpServerWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindPolicy:
		r, err := c.DeletePolicyWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindServiceAccount:
		r, err := c.DeleteServiceAccountWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindGroup:
		r, err := c.DeleteGroupWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindUser:
		r, err := c.DeleteUserWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindPolicyBinding:
		r, err := c.DeletePolicyBindingWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindRoleBinding:
		r, err := c.DeleteRoleBindingWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	case KindBudget:
		r, err := c.DeleteBudgetWithResponse(ctx, id)
		if err != nil {
			return err
		}
		status, body = r.StatusCode(), r.Body
	}
	return noContent(status, body)
}

// children brings an object's sub-collections to what its spec says: a rate
// limit's rules, a policy's grants and per-model rate limits, a user's group
// memberships. have is nil for an object just created.
func (p *Plan) children(ctx context.Context, s spec, have *object, id uuid.UUID, ref resolver) error {
	switch s := s.(type) {
	case *RateLimitSpec:
		if have != nil {
			return p.syncRules(ctx, id, s.Rules, have.rules)
		}
	case *HostKeySpec:
		var old []string
		if have != nil {
			old = have.spec.(*HostKeySpec).SharedWith
		}
		return p.syncShares(ctx, "host key", s.SharedWith, old, ref,
			func(team uuid.UUID) (int, []byte, error) {
				r, err := p.c.ShareHostKeyWithResponse(ctx, id, models.TeamShareCreate{TeamID: team})
				if err != nil {
					return 0, nil, err
				}
				return r.StatusCode(), r.Body, nil
			},
			func(team uuid.UUID) (int, []byte, error) {
				r, err := p.c.UnshareHostKeyWithResponse(ctx, id, team)
				if err != nil {
					return 0, nil, err
				}
				return r.StatusCode(), r.Body, nil
			})
	case *PolicySpec:
		var old *PolicySpec
		if have != nil {
			old = have.spec.(*PolicySpec)
		} else {
			old = &PolicySpec{}
		}
		if err := p.syncShares(ctx, "policy", s.SharedWith, old.SharedWith, ref,
			func(team uuid.UUID) (int, []byte, error) {
				r, err := p.c.SharePolicyWithResponse(ctx, id, models.TeamShareCreate{TeamID: team})
				if err != nil {
					return 0, nil, err
				}
				return r.StatusCode(), r.Body, nil
			},
			func(team uuid.UUID) (int, []byte, error) {
				r, err := p.c.UnsharePolicyWithResponse(ctx, id, team)
				if err != nil {
					return 0, nil, err
				}
				return r.StatusCode(), r.Body, nil
			}); err != nil {
			return err
		}
		if err := p.syncGrants(ctx, id, s, old, ref); err != nil {
			return err
		}
		return p.setMCP(ctx, id, s.MCP, old.MCP)
	case *UserSpec:
		var old []string
		if have != nil {
			old = have.spec.(*UserSpec).Groups
		}
		for _, g := range s.Groups {
			if slices.Contains(old, g) {
				continue
			}
			r, err := p.c.CreateGroupMemberWithResponse(ctx, ref(KindGroup, g), models.GroupMemberCreate{UserID: id})
			if err != nil {
				return err
			}
			if _, err := result(r.JSON201, r.StatusCode(), r.Body); err != nil {
				return fmt.Errorf("add to group %s: %w", g, err)
			}
		}
		for _, g := range old {
			if slices.Contains(s.Groups, g) {
				continue
			}
			r, err := p.c.DeleteGroupMemberWithResponse(ctx, ref(KindGroup, g), id)
			if err != nil {
				return err
			}
			if err := noContent(r.StatusCode(), r.Body); err != nil {
				return fmt.Errorf("remove from group %s: %w", g, err)
			}
		}
	}
	return nil
}

// setMCP brings a policy's MCP grants to want when they differ from have
// (the API replaces them whole); no block withdraws them all.
func (p *Plan) setMCP(ctx context.Context, policyID uuid.UUID, want, have *PolicyMCP) error {
	if reflect.DeepEqual(want, have) {
		return nil
	}
	if want == nil {
		want = &PolicyMCP{}
	}
	grants := want.Grants
	if grants == nil {
		grants = []string{}
	}
	r, err := p.c.SetPolicyMcpGrantsWithResponse(ctx, policyID, models.PolicyMcpGrants{Grants: grants, RequireApproval: &want.RequireApproval})
	if err != nil {
		return err
	}
	if _, err := result(r.JSON200, r.StatusCode(), r.Body); err != nil {
		return fmt.Errorf("set the MCP grants: %w", err)
	}
	return nil
}

// syncShares brings the teams a host key or system policy is shared with to
// want: share answers 200, unshare 204.
func (p *Plan) syncShares(_ context.Context, what string, want, have []string, ref resolver, share, unshare func(uuid.UUID) (int, []byte, error)) error {
	for _, t := range want {
		if slices.Contains(have, t) {
			continue
		}
		status, body, err := share(ref(KindTeam, t))
		if err != nil {
			return err
		}
		if status != http.StatusCreated {
			return fmt.Errorf("share the %s with team %s: %w", what, t, apiError(status, body))
		}
	}
	for _, t := range have {
		if slices.Contains(want, t) {
			continue
		}
		status, body, err := unshare(ref(KindTeam, t))
		if err != nil {
			return err
		}
		if err := noContent(status, body); err != nil {
			return fmt.Errorf("take back the %s's share with team %s: %w", what, t, err)
		}
	}
	return nil
}

// syncRules reconciles a rate limit's rules: rules already right stay, the
// others are updated in place pairwise, and the surplus is deleted or
// created.
func (p *Plan) syncRules(ctx context.Context, rlID uuid.UUID, want []Rule, have []models.RateLimitRule) error {
	var left []models.RateLimitRule
	todo := slices.Clone(want)
	for _, h := range have {
		hr := Rule{Meter: string(h.Meter), Amount: h.Amount, WindowSeconds: h.WindowSeconds, PerPrincipal: h.PerPrincipal}
		if i := slices.Index(todo, hr); i >= 0 {
			todo = slices.Delete(todo, i, i+1)
			continue
		}
		left = append(left, h)
	}
	for len(todo) > 0 && len(left) > 0 {
		w, h := todo[0], left[0]
		todo, left = todo[1:], left[1:]
		r, err := p.c.UpdateRateLimitRuleWithResponse(ctx, rlID, h.ID, models.RateLimitRuleUpdate{
			Meter: ptr(models.Meter(w.Meter)), Amount: &w.Amount, WindowSeconds: &w.WindowSeconds, PerPrincipal: &w.PerPrincipal,
		})
		if err != nil {
			return err
		}
		if _, err := result(r.JSON200, r.StatusCode(), r.Body); err != nil {
			return fmt.Errorf("update rule %s: %w", w, err)
		}
	}
	for _, w := range todo {
		r, err := p.c.CreateRateLimitRuleWithResponse(ctx, rlID, ruleCreate(w))
		if err != nil {
			return err
		}
		if _, err := result(r.JSON201, r.StatusCode(), r.Body); err != nil {
			return fmt.Errorf("add rule %s: %w", w, err)
		}
	}
	for _, h := range left {
		r, err := p.c.DeleteRateLimitRuleWithResponse(ctx, rlID, h.ID)
		if err != nil {
			return err
		}
		if err := noContent(r.StatusCode(), r.Body); err != nil {
			return fmt.Errorf("delete rule %s %d/%ds: %w", h.Meter, h.Amount, h.WindowSeconds, err)
		}
	}
	return nil
}

// syncGrants reconciles a policy's model grants, host-key grants and
// per-model rate limits with the spec.
func (p *Plan) syncGrants(ctx context.Context, policyID uuid.UUID, want, have *PolicySpec, ref resolver) error {
	c := p.c
	for _, m := range want.Models {
		if slices.Contains(have.Models, m) {
			continue
		}
		r, err := c.CreatePolicyModelGrantWithResponse(ctx, policyID, models.PolicyModelGrantCreate{ModelID: ref(KindModel, m)})
		if err != nil {
			return err
		}
		if _, err := result(r.JSON201, r.StatusCode(), r.Body); err != nil {
			return fmt.Errorf("grant model %s: %w", m, err)
		}
	}
	for _, m := range have.Models {
		if slices.Contains(want.Models, m) {
			continue
		}
		r, err := c.DeletePolicyModelGrantWithResponse(ctx, policyID, ref(KindModel, m))
		if err != nil {
			return err
		}
		if err := noContent(r.StatusCode(), r.Body); err != nil {
			return fmt.Errorf("withdraw model %s: %w", m, err)
		}
	}
	for _, k := range want.HostKeys {
		if slices.Contains(have.HostKeys, k) {
			continue
		}
		r, err := c.CreatePolicyHostKeyGrantWithResponse(ctx, policyID, models.PolicyHostKeyGrantCreate{HostKeyID: ref(KindHostKey, k)})
		if err != nil {
			return err
		}
		if _, err := result(r.JSON201, r.StatusCode(), r.Body); err != nil {
			return fmt.Errorf("grant host key %s: %w", k, err)
		}
	}
	for _, k := range have.HostKeys {
		if slices.Contains(want.HostKeys, k) {
			continue
		}
		r, err := c.DeletePolicyHostKeyGrantWithResponse(ctx, policyID, ref(KindHostKey, k))
		if err != nil {
			return err
		}
		if r.StatusCode() == http.StatusNotFound {
			continue // gone already: unsharing the host key from the team (earlier in this apply) took it out
		}
		if err := noContent(r.StatusCode(), r.Body); err != nil {
			return fmt.Errorf("withdraw host key %s: %w", k, err)
		}
	}
	byModel := func(l []ModelRateLimit, model string) (ModelRateLimit, bool) {
		i := slices.IndexFunc(l, func(m ModelRateLimit) bool { return m.Model == model })
		if i < 0 {
			return ModelRateLimit{}, false
		}
		return l[i], true
	}
	for _, w := range want.ModelRateLimits {
		h, ok := byModel(have.ModelRateLimits, w.Model)
		switch {
		case !ok:
			r, err := c.CreatePolicyModelRateLimitWithResponse(ctx, policyID, models.PolicyModelRateLimitCreate{
				ModelID: ref(KindModel, w.Model), RateLimitID: ref(KindRateLimit, w.RateLimit), Position: &w.Position,
			})
			if err != nil {
				return err
			}
			if _, err := result(r.JSON201, r.StatusCode(), r.Body); err != nil {
				return fmt.Errorf("set rate limit of model %s: %w", w.Model, err)
			}
		case h != w:
			r, err := c.UpdatePolicyModelRateLimitWithResponse(ctx, policyID, ref(KindModel, w.Model), models.PolicyModelRateLimitUpdate{
				RateLimitID: ptr(ref(KindRateLimit, w.RateLimit)), Position: &w.Position,
			})
			if err != nil {
				return err
			}
			if _, err := result(r.JSON200, r.StatusCode(), r.Body); err != nil {
				return fmt.Errorf("update rate limit of model %s: %w", w.Model, err)
			}
		}
	}
	for _, h := range have.ModelRateLimits {
		if _, ok := byModel(want.ModelRateLimits, h.Model); ok {
			continue
		}
		r, err := c.DeletePolicyModelRateLimitWithResponse(ctx, policyID, ref(KindModel, h.Model))
		if err != nil {
			return err
		}
		if err := noContent(r.StatusCode(), r.Body); err != nil {
			return fmt.Errorf("remove rate limit of model %s: %w", h.Model, err)
		}
	}
	return nil
}

// Preflight ------------------------------------------------------------------------

var (
	schemasOnce sync.Once
	schemas     openapi3.Schemas
	schemasErr  error
)

// placeholder stands for the id of an object the plan creates.
var placeholder = uuid.MustParse("00000000-0000-4000-8000-000000000000")

// preflight checks the request body of every create and update against the
// API's own schema (patterns, enums, bounds), so that a bad document fails
// the plan instead of the middle of an apply. It checks the full create
// body even for an update: the document must be valid as a whole.
func (p *Plan) preflight() error {
	schemasOnce.Do(func() {
		sw, err := controlgen.GetSpec()
		if err != nil {
			schemasErr = fmt.Errorf("load the API spec: %w", err)
			return
		}
		schemas = sw.Components.Schemas
	})
	if schemasErr != nil {
		return schemasErr
	}
	known := p.ids()
	id := func(k Kind, key string) uuid.UUID {
		if v, ok := known.get(k, key); ok {
			return v
		}
		return placeholder
	}
	for _, st := range p.Steps {
		if st.Action == ActionDelete {
			continue
		}
		body, name := createBody(st.want.spec, id)
		ref := schemas[name]
		if ref == nil || ref.Value == nil {
			return fmt.Errorf("the API spec has no schema %s", name)
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		if err := ref.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
			return stepError(st, schemaError(err))
		}
	}
	return nil
}

// schemaError turns the validator's errors into "field: reason" lines,
// naming fields as documents do (host_id is host …).
func schemaError(err error) error {
	var out []string
	var walk func(error)
	walk = func(err error) {
		if multi, ok := err.(openapi3.MultiError); ok {
			for _, e := range multi {
				walk(e)
			}
			return
		}
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			field := strings.Join(se.JSONPointer(), ".")
			field = strings.TrimSuffix(field, "_id")
			if field == "" {
				field = "spec"
			}
			out = append(out, field+": "+se.Reason)
			return
		}
		out = append(out, err.Error())
	}
	walk(err)
	slices.Sort(out)
	out = slices.Compact(out)
	return errors.New(strings.Join(out, "; "))
}
