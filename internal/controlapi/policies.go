package controlapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
)

// Rate limits (with their rules) and policies (with their model grants,
// host-key grants and per-model rate limits). Rate limits are catalog kinds,
// read by every role binding, written by system admins. A policy belongs to
// a team or to the system: a system policy reads like the catalog and is
// written by system admins; a team's policy is read by whoever may see the
// team (404 to everyone else), written by its team admins, lists only host
// keys shared with the team, and is usable only in the team's projects.

// Rate limits -------------------------------------------------------------------

// withRules attaches each rate limit's rules.
func (s *Server) withRules(ctx context.Context, rls []store.RateLimit) ([]models.RateLimit, error) {
	ids := make([]uuid.UUID, len(rls))
	for i, r := range rls {
		ids[i] = r.ID
	}
	rules, err := s.st.RateLimitRules().ListByRateLimits(ctx, ids)
	if err != nil {
		return nil, err
	}
	by := make(map[uuid.UUID][]store.RateLimitRule, len(rls))
	for _, r := range rules {
		by[r.RateLimitID] = append(by[r.RateLimitID], r)
	}
	out := make([]models.RateLimit, len(rls))
	for i, r := range rls {
		out[i] = rateLimitOut(r, by[r.ID])
	}
	return out, nil
}

func (s *Server) rateLimitWithRules(ctx context.Context, r store.RateLimit) (models.RateLimit, error) {
	out, err := s.withRules(ctx, []store.RateLimit{r})
	if err != nil {
		return models.RateLimit{}, err
	}
	return out[0], nil
}

// ListRateLimits is the operation of the same name in openapi/control.yaml.
func (v *Service) ListRateLimits(ctx context.Context, params models.ListRateLimitsParams) (out models.RateLimitList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListRateLimits")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	_, ok, err := systemList(ctx, rbac.ReadCatalog)
	if err != nil || !ok {
		return models.RateLimitList{Items: []models.RateLimit{}}, err
	}
	rows, err := s.st.RateLimits().List(ctx, store.Page{After: after, Limit: fetch})
	if err != nil {
		return out, err
	}
	rows, next := cut(rows, fetch, func(r store.RateLimit) uuid.UUID { return r.ID })
	items, err := s.withRules(ctx, rows)
	if err != nil {
		return out, err
	}
	return models.RateLimitList{Items: items, NextCursor: next}, nil
}

func ruleRow(rateLimitID uuid.UUID, r models.RateLimitRuleCreate) store.RateLimitRule {
	return store.RateLimitRule{
		RateLimitID: rateLimitID, Meter: string(r.Meter), Amount: r.Amount,
		WindowSeconds: deref(r.WindowSeconds, 60), PerPrincipal: deref(r.PerPrincipal, false),
	}
}

// CreateRateLimit implements StrictServerInterface: the rate limit and its
// rules in one transaction.
func (v *Service) CreateRateLimit(ctx context.Context, body *models.RateLimitCreate) (out models.RateLimit, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateRateLimit")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := systemWrite(ctx)
	if err != nil {
		return out, err
	}
	b := body
	var rl store.RateLimit
	var rules []store.RateLimitRule
	err = s.st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if rl, err = tx.RateLimits().Create(ctx, c.actor, store.RateLimit{Slug: b.Slug, Name: deref(b.Name, "")}); err != nil {
			return err
		}
		for i, r := range deref(b.Rules, nil) {
			row, err := tx.RateLimitRules().Create(ctx, c.actor, ruleRow(rl.ID, r))
			if err != nil {
				if e := storeError("POST", err); e != nil && e.code == codeValidation {
					f := fmt.Sprintf("rules.%d", i)
					return invalid(f+": "+e.message, f)
				}
				return err
			}
			rules = append(rules, row)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	return rateLimitOut(rl, rules), nil
}

// GetRateLimit is the operation of the same name in openapi/control.yaml.
func (v *Service) GetRateLimit(ctx context.Context, id uuid.UUID) (out models.RateLimit, err error) {
	s, ctx, done, err := v.enter(ctx, "GetRateLimit")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, false, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	return s.rateLimitWithRules(ctx, row)
}

// UpdateRateLimit is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateRateLimit(ctx context.Context, id uuid.UUID, body *models.RateLimitUpdate) (out models.RateLimit, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateRateLimit")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, true, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	row, err := s.st.RateLimits().Modify(ctx, c.actor, id, func(r *store.RateLimit) error {
		set(&r.Slug, body.Slug)
		set(&r.Name, body.Name)
		return nil
	})
	if row, err = found("rate limit", row, err); err != nil {
		return out, err
	}
	return s.rateLimitWithRules(ctx, row)
}

// DeleteRateLimit is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteRateLimit(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteRateLimit")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, true, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, id) })
	if err != nil {
		return err
	}
	if _, err := found("rate limit", struct{}{}, s.st.RateLimits().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// ruleOf reads a rule of a rate limit; a rule of another rate limit is 404.
func (s *Server) ruleOf(ctx context.Context, rateLimitID, ruleID uuid.UUID) (store.RateLimitRule, error) {
	r, err := got(s.st.RateLimitRules().Get(ctx, ruleID)).orNotFound("rate limit rule")
	if err == nil && r.RateLimitID != rateLimitID {
		err = notFound("rate limit rule")
	}
	return r, err
}

// ListRateLimitRules is the operation of the same name in openapi/control.yaml.
func (v *Service) ListRateLimitRules(ctx context.Context, id uuid.UUID, params models.ListRateLimitRulesParams) (out models.RateLimitRuleList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListRateLimitRules")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	if _, _, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, false, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, id) }); err != nil {
		return out, err
	}
	rows, err := s.st.RateLimitRules().List(ctx, store.RateLimitRulesPage{After: after, RateLimitID: &id, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.RateLimitRule) uuid.UUID { return r.ID }, ruleOut)
	return out, err
}

// CreateRateLimitRule is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateRateLimitRule(ctx context.Context, id uuid.UUID, body *models.RateLimitRuleCreate) (out models.RateLimitRule, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateRateLimitRule")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, true, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	row, err := s.st.RateLimitRules().Create(ctx, c.actor, ruleRow(id, *body))
	if err != nil {
		return out, err
	}
	return ruleOut(row), nil
}

// GetRateLimitRule is the operation of the same name in openapi/control.yaml.
func (v *Service) GetRateLimitRule(ctx context.Context, id uuid.UUID, ruleID uuid.UUID) (out models.RateLimitRule, err error) {
	s, ctx, done, err := v.enter(ctx, "GetRateLimitRule")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := systemRow(ctx, "rate limit rule", rbac.ReadCatalog, false, func() (store.RateLimitRule, error) { return s.ruleOf(ctx, id, ruleID) })
	if err != nil {
		return out, err
	}
	return ruleOut(row), nil
}

// UpdateRateLimitRule is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateRateLimitRule(ctx context.Context, id uuid.UUID, ruleID uuid.UUID, body *models.RateLimitRuleUpdate) (out models.RateLimitRule, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateRateLimitRule")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "rate limit rule", rbac.ReadCatalog, true, func() (store.RateLimitRule, error) { return s.ruleOf(ctx, id, ruleID) })
	if err != nil {
		return out, err
	}
	b := body
	row, err := s.st.RateLimitRules().Modify(ctx, c.actor, ruleID, func(r *store.RateLimitRule) error {
		if b.Meter != nil {
			r.Meter = string(*b.Meter)
		}
		set(&r.Amount, b.Amount)
		set(&r.WindowSeconds, b.WindowSeconds)
		set(&r.PerPrincipal, b.PerPrincipal)
		return nil
	})
	if row, err = found("rate limit rule", row, err); err != nil {
		return out, err
	}
	return ruleOut(row), nil
}

// DeleteRateLimitRule is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteRateLimitRule(ctx context.Context, id uuid.UUID, ruleID uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteRateLimitRule")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "rate limit rule", rbac.ReadCatalog, true, func() (store.RateLimitRule, error) { return s.ruleOf(ctx, id, ruleID) })
	if err != nil {
		return err
	}
	if _, err := found("rate limit rule", struct{}{}, s.st.RateLimitRules().Delete(ctx, c.actor, ruleID)); err != nil {
		return err
	}
	return nil
}

// Policies ----------------------------------------------------------------------

// ListPolicies implements StrictServerInterface: the system policies and
// those of the teams the caller may see.
func (v *Service) ListPolicies(ctx context.Context, params models.ListPoliciesParams) (out models.PolicyList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListPolicies")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, ok, err := systemList(ctx, rbac.ReadCatalog)
	if err != nil || !ok {
		return models.PolicyList{Items: []models.Policy{}}, err
	}
	all, teams := c.Teams()
	rows, err := s.st.Policies().ListVisible(ctx, store.PoliciesPage{After: after, AllTeams: all, TeamIDs: teams, TeamID: params.TeamID, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.Policy) uuid.UUID { return r.ID }, policyOut)
	return out, err
}

// policyRow reads a policy the caller may see (404 otherwise); write asks
// for the owner's manage verb: manage_team on its team, manage_system for a
// system policy (403 when visible but not writable).
func (s *Server) policyRow(ctx context.Context, id uuid.UUID, write bool) (*caller, store.Policy, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, store.Policy{}, err
	}
	p, err := got(s.st.Policies().Get(ctx, id)).orNotFound("policy")
	if err != nil {
		return nil, p, err
	}
	if !canSeePolicy(c, p) {
		return nil, store.Policy{}, notFound("policy")
	}
	if write {
		if err := can403(c, policyManage(p), policyScope(p)); err != nil {
			return nil, p, err
		}
	}
	return c, p, nil
}

// policyScope is where a policy lives: its team, or the system.
func policyScope(p store.Policy) rbac.Scope {
	if p.TeamID != nil {
		return rbac.InTeam(*p.TeamID)
	}
	return rbac.System()
}

// policyManage is the verb that writes a policy.
func policyManage(p store.Policy) rbac.Verb {
	if p.TeamID != nil {
		return rbac.ManageTeam
	}
	return rbac.ManageSystem
}

func canSeePolicy(c *caller, p store.Policy) bool {
	if p.TeamID == nil {
		return c.Can(rbac.ReadCatalog, rbac.System())
	}
	return c.CanSeeTeam(*p.TeamID) || c.Can(rbac.Read, rbac.System())
}

// attachablePolicy checks a policy named in a body field of a row in project
// scope sc (a relay key, service account or policy binding): a policy the
// caller may not attach there answers exactly as one that does not exist,
// so another team's policies cannot even be probed for.
func (s *Server) attachablePolicy(ctx context.Context, c *caller, field string, id uuid.UUID, sc rbac.Scope) error {
	p, err := s.st.Policies().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return noSuch(field, "policy")
	}
	if err != nil {
		return err
	}
	shared := false
	if p.TeamID == nil {
		_, err := s.st.PolicyTeamShares().Get(ctx, store.PolicyTeamShareKey{PolicyID: p.ID, TeamID: sc.Team})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		shared = err == nil
	}
	if !c.CanAttach(deref(p.TeamID, uuid.Nil), sc, shared) {
		return noSuch(field, "policy")
	}
	return nil
}

// CreatePolicy is the operation of the same name in openapi/control.yaml.
func (v *Service) CreatePolicy(ctx context.Context, body *models.PolicyCreate) (out models.Policy, err error) {
	s, ctx, done, err := v.enter(ctx, "CreatePolicy")
	if err != nil {
		return out, err
	}
	defer done(&err)
	b := body
	c, err := s.policyWrite(ctx, b.TeamID)
	if err != nil {
		return out, err
	}
	if b.TeamID != nil && deref(b.AllHostKeys, false) {
		return out, teamAllHostKeys()
	}
	if b.RateLimitID != nil {
		if err := got(s.st.RateLimits().Get(ctx, *b.RateLimitID)).exists("rate_limit_id", "rate limit"); err != nil {
			return out, err
		}
	}
	strategy, mode := models.KeyStrategyPrioritized, models.LimiterFailureModeOpen
	set(&strategy, b.KeyStrategy)
	set(&mode, b.LimiterFailureMode)
	route, affinity := models.PolicyRouteStrategyEmpty, models.RouteAffinityKey
	set(&route, b.RouteStrategy)
	set(&affinity, b.Affinity)
	rc, err := responseCacheIn(b.ResponseCache)
	if err != nil {
		return out, err
	}
	gr, err := s.guardrailsIn(ctx, b.Guardrails)
	if err != nil {
		return out, err
	}
	row, err := s.st.Policies().Create(ctx, c.actor, store.Policy{
		Slug: b.Slug, Name: deref(b.Name, ""), AllModels: deref(b.AllModels, false), AllHostKeys: deref(b.AllHostKeys, false),
		KeyStrategy: string(strategy), RateLimitID: b.RateLimitID, MaxWaitMs: deref(b.MaxWaitMs, 0),
		Priority: deref(b.Priority, 0), MaxAttempts: deref(b.MaxAttempts, 3), LimiterFailureMode: string(mode),
		CapturePayloads: deref(b.CapturePayloads, false), CaptureMaxBytes: deref(b.CaptureMaxBytes, 0),
		RouteStrategy: string(route), Affinity: string(affinity), BudgetFallback: deref(b.BudgetFallback, false),
		TeamID: b.TeamID, DegradeAfterMs: b.DegradeAfterMs, DegradeBelowPriority: b.DegradeBelowPriority, ResponseCache: rc,
		Guardrails: gr,
	})
	if err != nil {
		return out, err
	}
	return policyOut(row), nil
}

// policyWrite checks that the caller may create a policy owned by team (nil:
// the system): manage_team on a team it can see, else manage_system.
func (s *Server) policyWrite(ctx context.Context, team *uuid.UUID) (*caller, error) {
	if team == nil {
		return systemWrite(ctx)
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.readableTeam(ctx, c, "team_id", *team); err != nil {
		return nil, err
	}
	return c, can403(c, rbac.ManageTeam, rbac.InTeam(*team))
}

// teamAllHostKeys is the 422 of a team's policy granting every host key.
func teamAllHostKeys() error {
	return invalid("all_host_keys: a team's policy lists the host keys shared with its team; only a system policy grants every host key", "all_host_keys")
}

// GetPolicy is the operation of the same name in openapi/control.yaml.
func (v *Service) GetPolicy(ctx context.Context, id uuid.UUID) (out models.Policy, err error) {
	s, ctx, done, err := v.enter(ctx, "GetPolicy")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := s.policyRow(ctx, id, false)
	if err != nil {
		return out, err
	}
	return policyOut(row), nil
}

// UpdatePolicy is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdatePolicy(ctx context.Context, id uuid.UUID, body *models.PolicyUpdate) (out models.Policy, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdatePolicy")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, cur, err := s.policyRow(ctx, id, true)
	if err != nil {
		return out, err
	}
	b := body
	if cur.TeamID != nil && deref(b.AllHostKeys, false) {
		return out, teamAllHostKeys()
	}
	if id, ok := b.RateLimitID.Get(); ok {
		if err := got(s.st.RateLimits().Get(ctx, id)).exists("rate_limit_id", "rate limit"); err != nil {
			return out, err
		}
	}
	rc, err := responseCacheIn(b.ResponseCache)
	if err != nil {
		return out, err
	}
	gr, err := s.guardrailsIn(ctx, b.Guardrails)
	if err != nil {
		return out, err
	}
	row, err := s.st.Policies().Modify(ctx, c.actor, id, func(r *store.Policy) error {
		if b.ResponseCache != nil {
			r.ResponseCache = rc
		}
		if b.Guardrails != nil {
			r.Guardrails = gr
		}
		set(&r.Slug, b.Slug)
		set(&r.Name, b.Name)
		set(&r.AllModels, b.AllModels)
		set(&r.AllHostKeys, b.AllHostKeys)
		if b.KeyStrategy != nil {
			r.KeyStrategy = string(*b.KeyStrategy)
		}
		if b.RateLimitID.IsSpecified() {
			r.RateLimitID = b.RateLimitID.Pointer()
		}
		set(&r.MaxWaitMs, b.MaxWaitMs)
		set(&r.Priority, b.Priority)
		set(&r.MaxAttempts, b.MaxAttempts)
		if b.LimiterFailureMode != nil {
			r.LimiterFailureMode = string(*b.LimiterFailureMode)
		}
		set(&r.CapturePayloads, b.CapturePayloads)
		set(&r.CaptureMaxBytes, b.CaptureMaxBytes)
		if b.RouteStrategy != nil {
			r.RouteStrategy = string(*b.RouteStrategy)
		}
		if b.Affinity != nil {
			r.Affinity = string(*b.Affinity)
		}
		set(&r.BudgetFallback, b.BudgetFallback)
		if b.DegradeAfterMs.IsSpecified() {
			r.DegradeAfterMs = b.DegradeAfterMs.Pointer()
		}
		if b.DegradeBelowPriority.IsSpecified() {
			r.DegradeBelowPriority = b.DegradeBelowPriority.Pointer()
		}
		return nil
	})
	if row, err = found("policy", row, err); err != nil {
		return out, err
	}
	return policyOut(row), nil
}

// DeletePolicy is the operation of the same name in openapi/control.yaml. A policy still named by a
// service account or a relay key is 409 (the schema restricts it, so that no
// caller silently falls through to another policy).
func (v *Service) DeletePolicy(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeletePolicy")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := s.policyRow(ctx, id, true)
	if err != nil {
		return err
	}
	err = s.st.Policies().Delete(ctx, c.actor, id)
	if e := storeError("DELETE", err); e != nil && e.status == 409 {
		return conflict("service accounts or relay keys still name this policy; point them elsewhere first")
	}
	if _, err := found("policy", struct{}{}, err); err != nil {
		return err
	}
	return nil
}

// policyFor reads the policy of a grant path; write asks for the owner's manage verb.
func (s *Server) policyFor(ctx context.Context, id uuid.UUID, write bool) (*caller, error) {
	c, _, err := s.policyRow(ctx, id, write)
	return c, err
}

// ListPolicyModelGrants is the operation of the same name in openapi/control.yaml.
func (v *Service) ListPolicyModelGrants(ctx context.Context, id uuid.UUID, params models.ListPolicyModelGrantsParams) (out models.PolicyModelGrantList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListPolicyModelGrants")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	if _, err := s.policyFor(ctx, id, false); err != nil {
		return out, err
	}
	rows, err := s.st.PolicyModels().List(ctx, store.PolicyModelsPage{AfterPolicyID: id, AfterModelID: after, PolicyID: &id, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.PolicyModel) uuid.UUID { return r.ModelID }, policyModelOut)
	return out, err
}

// CreatePolicyModelGrant is the operation of the same name in openapi/control.yaml.
func (v *Service) CreatePolicyModelGrant(ctx context.Context, id uuid.UUID, body *models.PolicyModelGrantCreate) (out models.PolicyModelGrant, err error) {
	s, ctx, done, err := v.enter(ctx, "CreatePolicyModelGrant")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := s.policyFor(ctx, id, true)
	if err != nil {
		return out, err
	}
	if err := got(s.st.Models().Get(ctx, body.ModelID)).exists("model_id", "model"); err != nil {
		return out, err
	}
	row, err := s.st.PolicyModels().Create(ctx, c.actor, store.PolicyModel{PolicyID: id, ModelID: body.ModelID})
	if err != nil {
		return out, err
	}
	return policyModelOut(row), nil
}

// DeletePolicyModelGrant is the operation of the same name in openapi/control.yaml.
func (v *Service) DeletePolicyModelGrant(ctx context.Context, id uuid.UUID, modelID uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeletePolicyModelGrant")
	if err != nil {
		return err
	}
	defer done(&err)
	c, err := s.policyFor(ctx, id, true)
	if err != nil {
		return err
	}
	return deleted("model grant", s.st.PolicyModels().Delete(ctx, c.actor, store.PolicyModelKey{PolicyID: id, ModelID: modelID}))
}

// ListPolicyHostKeyGrants is the operation of the same name in openapi/control.yaml.
func (v *Service) ListPolicyHostKeyGrants(ctx context.Context, id uuid.UUID, params models.ListPolicyHostKeyGrantsParams) (out models.PolicyHostKeyGrantList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListPolicyHostKeyGrants")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	if _, err := s.policyFor(ctx, id, false); err != nil {
		return out, err
	}
	rows, err := s.st.PolicyHostKeys().List(ctx, store.PolicyHostKeysPage{AfterPolicyID: id, AfterHostKeyID: after, PolicyID: &id, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.PolicyHostKey) uuid.UUID { return r.HostKeyID }, policyHostKeyOut)
	return out, err
}

// CreatePolicyHostKeyGrant is the operation of the same name in openapi/control.yaml.
func (v *Service) CreatePolicyHostKeyGrant(ctx context.Context, id uuid.UUID, body *models.PolicyHostKeyGrantCreate) (out models.PolicyHostKeyGrant, err error) {
	s, ctx, done, err := v.enter(ctx, "CreatePolicyHostKeyGrant")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, p, err := s.policyRow(ctx, id, true)
	if err != nil {
		return out, err
	}
	if err := s.grantableHostKey(ctx, p, body.HostKeyID); err != nil {
		return out, err
	}
	row, err := s.st.PolicyHostKeys().Create(ctx, c.actor, store.PolicyHostKey{PolicyID: id, HostKeyID: body.HostKeyID})
	if err != nil {
		return out, err
	}
	return policyHostKeyOut(row), nil
}

// grantableHostKey checks a host key named for a policy's grant: any host
// key for a system policy, one shared with the team for a team's policy
// (others answer as if absent; the schema holds the same rule).
func (s *Server) grantableHostKey(ctx context.Context, p store.Policy, id uuid.UUID) error {
	if p.TeamID == nil {
		return got(s.st.HostKeys().Get(ctx, id)).exists("host_key_id", "host key")
	}
	return got(s.st.HostKeyTeamShares().Get(ctx, store.HostKeyTeamShareKey{HostKeyID: id, TeamID: *p.TeamID})).exists("host_key_id", "host key")
}

// DeletePolicyHostKeyGrant is the operation of the same name in openapi/control.yaml.
func (v *Service) DeletePolicyHostKeyGrant(ctx context.Context, id uuid.UUID, hostKeyID uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeletePolicyHostKeyGrant")
	if err != nil {
		return err
	}
	defer done(&err)
	c, err := s.policyFor(ctx, id, true)
	if err != nil {
		return err
	}
	return deleted("host key grant", s.st.PolicyHostKeys().Delete(ctx, c.actor, store.PolicyHostKeyKey{PolicyID: id, HostKeyID: hostKeyID}))
}

// ListPolicyModelRateLimits is the operation of the same name in openapi/control.yaml.
func (v *Service) ListPolicyModelRateLimits(ctx context.Context, id uuid.UUID, params models.ListPolicyModelRateLimitsParams) (out models.PolicyModelRateLimitList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListPolicyModelRateLimits")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	if _, err := s.policyFor(ctx, id, false); err != nil {
		return out, err
	}
	rows, err := s.st.PolicyModelRateLimits().List(ctx, store.PolicyModelRateLimitsPage{AfterPolicyID: id, AfterModelID: after, PolicyID: &id, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.PolicyModelRateLimit) uuid.UUID { return r.ModelID }, policyModelRateLimitOut)
	return out, err
}

// CreatePolicyModelRateLimit is the operation of the same name in openapi/control.yaml.
func (v *Service) CreatePolicyModelRateLimit(ctx context.Context, id uuid.UUID, body *models.PolicyModelRateLimitCreate) (out models.PolicyModelRateLimit, err error) {
	s, ctx, done, err := v.enter(ctx, "CreatePolicyModelRateLimit")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := s.policyFor(ctx, id, true)
	if err != nil {
		return out, err
	}
	b := body
	if err := got(s.st.Models().Get(ctx, b.ModelID)).exists("model_id", "model"); err != nil {
		return out, err
	}
	if err := got(s.st.RateLimits().Get(ctx, b.RateLimitID)).exists("rate_limit_id", "rate limit"); err != nil {
		return out, err
	}
	row, err := s.st.PolicyModelRateLimits().Create(ctx, c.actor, store.PolicyModelRateLimit{
		PolicyID: id, ModelID: b.ModelID, RateLimitID: b.RateLimitID, Position: deref(b.Position, 0),
	})
	if err != nil {
		return out, err
	}
	return policyModelRateLimitOut(row), nil
}

// GetPolicyModelRateLimit is the operation of the same name in openapi/control.yaml.
func (v *Service) GetPolicyModelRateLimit(ctx context.Context, id uuid.UUID, modelID uuid.UUID) (out models.PolicyModelRateLimit, err error) {
	s, ctx, done, err := v.enter(ctx, "GetPolicyModelRateLimit")
	if err != nil {
		return out, err
	}
	defer done(&err)
	if _, err := s.policyFor(ctx, id, false); err != nil {
		return out, err
	}
	row, err := got(s.st.PolicyModelRateLimits().Get(ctx, store.PolicyModelKey{PolicyID: id, ModelID: modelID})).orNotFound("per-model rate limit")
	if err != nil {
		return out, err
	}
	return policyModelRateLimitOut(row), nil
}

// UpdatePolicyModelRateLimit is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdatePolicyModelRateLimit(ctx context.Context, id uuid.UUID, modelID uuid.UUID, body *models.PolicyModelRateLimitUpdate) (out models.PolicyModelRateLimit, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdatePolicyModelRateLimit")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := s.policyFor(ctx, id, true)
	if err != nil {
		return out, err
	}
	b := body
	if b.RateLimitID != nil {
		if err := got(s.st.RateLimits().Get(ctx, *b.RateLimitID)).exists("rate_limit_id", "rate limit"); err != nil {
			return out, err
		}
	}
	row, err := s.st.PolicyModelRateLimits().Modify(ctx, c.actor, store.PolicyModelKey{PolicyID: id, ModelID: modelID},
		func(r *store.PolicyModelRateLimit) error {
			set(&r.RateLimitID, b.RateLimitID)
			set(&r.Position, b.Position)
			return nil
		})
	if row, err = found("per-model rate limit", row, err); err != nil {
		return out, err
	}
	return policyModelRateLimitOut(row), nil
}

// DeletePolicyModelRateLimit is the operation of the same name in openapi/control.yaml.
func (v *Service) DeletePolicyModelRateLimit(ctx context.Context, id uuid.UUID, modelID uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeletePolicyModelRateLimit")
	if err != nil {
		return err
	}
	defer done(&err)
	c, err := s.policyFor(ctx, id, true)
	if err != nil {
		return err
	}
	return deleted("per-model rate limit", s.st.PolicyModelRateLimits().Delete(ctx, c.actor, store.PolicyModelKey{PolicyID: id, ModelID: modelID}))
}
