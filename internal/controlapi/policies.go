package controlapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	gen "github.com/relay-llm/relay/openapi/controlgen"
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

// ListRateLimits implements StrictServerInterface.
func (s *Server) ListRateLimits(ctx context.Context, req gen.ListRateLimitsRequestObject) (gen.ListRateLimitsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	_, ok, err := systemList(ctx, rbac.ReadCatalog)
	if err != nil || !ok {
		return gen.ListRateLimits200JSONResponse{Items: []models.RateLimit{}}, err
	}
	rows, err := s.st.RateLimits().List(ctx, store.Page{After: after, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.RateLimit) uuid.UUID { return r.ID })
	items, err := s.withRules(ctx, rows)
	if err != nil {
		return nil, err
	}
	return gen.ListRateLimits200JSONResponse{Items: items, NextCursor: next}, nil
}

func ruleRow(rateLimitID uuid.UUID, r models.RateLimitRuleCreate) store.RateLimitRule {
	return store.RateLimitRule{
		RateLimitID: rateLimitID, Meter: string(r.Meter), Amount: r.Amount,
		WindowSeconds: deref(r.WindowSeconds, 60), PerPrincipal: deref(r.PerPrincipal, false),
	}
}

// CreateRateLimit implements StrictServerInterface: the rate limit and its
// rules in one transaction.
func (s *Server) CreateRateLimit(ctx context.Context, req gen.CreateRateLimitRequestObject) (gen.CreateRateLimitResponseObject, error) {
	c, err := systemWrite(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
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
		return nil, err
	}
	return gen.CreateRateLimit201JSONResponse(rateLimitOut(rl, rules)), nil
}

// GetRateLimit implements StrictServerInterface.
func (s *Server) GetRateLimit(ctx context.Context, req gen.GetRateLimitRequestObject) (gen.GetRateLimitResponseObject, error) {
	_, row, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, false, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	out, err := s.rateLimitWithRules(ctx, row)
	if err != nil {
		return nil, err
	}
	return gen.GetRateLimit200JSONResponse(out), nil
}

// UpdateRateLimit implements StrictServerInterface.
func (s *Server) UpdateRateLimit(ctx context.Context, req gen.UpdateRateLimitRequestObject) (gen.UpdateRateLimitResponseObject, error) {
	c, _, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, true, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	row, err := s.st.RateLimits().Modify(ctx, c.actor, req.ID, func(r *store.RateLimit) error {
		set(&r.Slug, req.Body.Slug)
		set(&r.Name, req.Body.Name)
		return nil
	})
	if row, err = found("rate limit", row, err); err != nil {
		return nil, err
	}
	out, err := s.rateLimitWithRules(ctx, row)
	if err != nil {
		return nil, err
	}
	return gen.UpdateRateLimit200JSONResponse(out), nil
}

// DeleteRateLimit implements StrictServerInterface.
func (s *Server) DeleteRateLimit(ctx context.Context, req gen.DeleteRateLimitRequestObject) (gen.DeleteRateLimitResponseObject, error) {
	c, _, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, true, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	if _, err := found("rate limit", struct{}{}, s.st.RateLimits().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeleteRateLimit204Response{}, nil
}

// ruleOf reads a rule of a rate limit; a rule of another rate limit is 404.
func (s *Server) ruleOf(ctx context.Context, rateLimitID, ruleID uuid.UUID) (store.RateLimitRule, error) {
	r, err := got(s.st.RateLimitRules().Get(ctx, ruleID)).orNotFound("rate limit rule")
	if err == nil && r.RateLimitID != rateLimitID {
		err = notFound("rate limit rule")
	}
	return r, err
}

// ListRateLimitRules implements StrictServerInterface.
func (s *Server) ListRateLimitRules(ctx context.Context, req gen.ListRateLimitRulesRequestObject) (gen.ListRateLimitRulesResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	if _, _, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, false, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, req.ID) }); err != nil {
		return nil, err
	}
	rows, err := s.st.RateLimitRules().List(ctx, store.RateLimitRulesPage{After: after, RateLimitID: &req.ID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.RateLimitRule) uuid.UUID { return r.ID })
	return gen.ListRateLimitRules200JSONResponse{Items: convertAll(rows, ruleOut), NextCursor: next}, nil
}

// CreateRateLimitRule implements StrictServerInterface.
func (s *Server) CreateRateLimitRule(ctx context.Context, req gen.CreateRateLimitRuleRequestObject) (gen.CreateRateLimitRuleResponseObject, error) {
	c, _, err := systemRow(ctx, "rate limit", rbac.ReadCatalog, true, func() (store.RateLimit, error) { return s.st.RateLimits().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	row, err := s.st.RateLimitRules().Create(ctx, c.actor, ruleRow(req.ID, *req.Body))
	if err != nil {
		return nil, err
	}
	return gen.CreateRateLimitRule201JSONResponse(ruleOut(row)), nil
}

// GetRateLimitRule implements StrictServerInterface.
func (s *Server) GetRateLimitRule(ctx context.Context, req gen.GetRateLimitRuleRequestObject) (gen.GetRateLimitRuleResponseObject, error) {
	_, row, err := systemRow(ctx, "rate limit rule", rbac.ReadCatalog, false, func() (store.RateLimitRule, error) { return s.ruleOf(ctx, req.ID, req.RuleID) })
	if err != nil {
		return nil, err
	}
	return gen.GetRateLimitRule200JSONResponse(ruleOut(row)), nil
}

// UpdateRateLimitRule implements StrictServerInterface.
func (s *Server) UpdateRateLimitRule(ctx context.Context, req gen.UpdateRateLimitRuleRequestObject) (gen.UpdateRateLimitRuleResponseObject, error) {
	c, _, err := systemRow(ctx, "rate limit rule", rbac.ReadCatalog, true, func() (store.RateLimitRule, error) { return s.ruleOf(ctx, req.ID, req.RuleID) })
	if err != nil {
		return nil, err
	}
	b := req.Body
	row, err := s.st.RateLimitRules().Modify(ctx, c.actor, req.RuleID, func(r *store.RateLimitRule) error {
		if b.Meter != nil {
			r.Meter = string(*b.Meter)
		}
		set(&r.Amount, b.Amount)
		set(&r.WindowSeconds, b.WindowSeconds)
		set(&r.PerPrincipal, b.PerPrincipal)
		return nil
	})
	if row, err = found("rate limit rule", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateRateLimitRule200JSONResponse(ruleOut(row)), nil
}

// DeleteRateLimitRule implements StrictServerInterface.
func (s *Server) DeleteRateLimitRule(ctx context.Context, req gen.DeleteRateLimitRuleRequestObject) (gen.DeleteRateLimitRuleResponseObject, error) {
	c, _, err := systemRow(ctx, "rate limit rule", rbac.ReadCatalog, true, func() (store.RateLimitRule, error) { return s.ruleOf(ctx, req.ID, req.RuleID) })
	if err != nil {
		return nil, err
	}
	if _, err := found("rate limit rule", struct{}{}, s.st.RateLimitRules().Delete(ctx, c.actor, req.RuleID)); err != nil {
		return nil, err
	}
	return gen.DeleteRateLimitRule204Response{}, nil
}

// Policies ----------------------------------------------------------------------

// ListPolicies implements StrictServerInterface: the system policies and
// those of the teams the caller may see.
func (s *Server) ListPolicies(ctx context.Context, req gen.ListPoliciesRequestObject) (gen.ListPoliciesResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, ok, err := systemList(ctx, rbac.ReadCatalog)
	if err != nil || !ok {
		return gen.ListPolicies200JSONResponse{Items: []models.Policy{}}, err
	}
	all, teams := c.Teams()
	rows, err := s.st.Policies().ListVisible(ctx, store.PoliciesPage{After: after, AllTeams: all, TeamIDs: teams, TeamID: req.Params.TeamID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.Policy) uuid.UUID { return r.ID })
	return gen.ListPolicies200JSONResponse{Items: convertAll(rows, policyOut), NextCursor: next}, nil
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

// CreatePolicy implements StrictServerInterface.
func (s *Server) CreatePolicy(ctx context.Context, req gen.CreatePolicyRequestObject) (gen.CreatePolicyResponseObject, error) {
	b := req.Body
	c, err := s.policyWrite(ctx, b.TeamID)
	if err != nil {
		return nil, err
	}
	if b.TeamID != nil && deref(b.AllHostKeys, false) {
		return nil, teamAllHostKeys()
	}
	if b.RateLimitID != nil {
		if err := got(s.st.RateLimits().Get(ctx, *b.RateLimitID)).exists("rate_limit_id", "rate limit"); err != nil {
			return nil, err
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
		return nil, err
	}
	gr, err := s.guardrailsIn(ctx, b.Guardrails)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	return gen.CreatePolicy201JSONResponse(policyOut(row)), nil
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

// GetPolicy implements StrictServerInterface.
func (s *Server) GetPolicy(ctx context.Context, req gen.GetPolicyRequestObject) (gen.GetPolicyResponseObject, error) {
	_, row, err := s.policyRow(ctx, req.ID, false)
	if err != nil {
		return nil, err
	}
	return gen.GetPolicy200JSONResponse(policyOut(row)), nil
}

// UpdatePolicy implements StrictServerInterface.
func (s *Server) UpdatePolicy(ctx context.Context, req gen.UpdatePolicyRequestObject) (gen.UpdatePolicyResponseObject, error) {
	c, cur, err := s.policyRow(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if cur.TeamID != nil && deref(b.AllHostKeys, false) {
		return nil, teamAllHostKeys()
	}
	if id, ok := b.RateLimitID.Get(); ok {
		if err := got(s.st.RateLimits().Get(ctx, id)).exists("rate_limit_id", "rate limit"); err != nil {
			return nil, err
		}
	}
	rc, err := responseCacheIn(b.ResponseCache)
	if err != nil {
		return nil, err
	}
	gr, err := s.guardrailsIn(ctx, b.Guardrails)
	if err != nil {
		return nil, err
	}
	row, err := s.st.Policies().Modify(ctx, c.actor, req.ID, func(r *store.Policy) error {
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
		return nil, err
	}
	return gen.UpdatePolicy200JSONResponse(policyOut(row)), nil
}

// DeletePolicy implements StrictServerInterface. A policy still named by a
// service account or a relay key is 409 (the schema restricts it, so that no
// caller silently falls through to another policy).
func (s *Server) DeletePolicy(ctx context.Context, req gen.DeletePolicyRequestObject) (gen.DeletePolicyResponseObject, error) {
	c, _, err := s.policyRow(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	err = s.st.Policies().Delete(ctx, c.actor, req.ID)
	if e := storeError("DELETE", err); e != nil && e.status == 409 {
		return nil, conflict("service accounts or relay keys still name this policy; point them elsewhere first")
	}
	if _, err := found("policy", struct{}{}, err); err != nil {
		return nil, err
	}
	return gen.DeletePolicy204Response{}, nil
}

// policyFor reads the policy of a grant path; write asks for the owner's manage verb.
func (s *Server) policyFor(ctx context.Context, id uuid.UUID, write bool) (*caller, error) {
	c, _, err := s.policyRow(ctx, id, write)
	return c, err
}

// ListPolicyModelGrants implements StrictServerInterface.
func (s *Server) ListPolicyModelGrants(ctx context.Context, req gen.ListPolicyModelGrantsRequestObject) (gen.ListPolicyModelGrantsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	if _, err := s.policyFor(ctx, req.ID, false); err != nil {
		return nil, err
	}
	rows, err := s.st.PolicyModels().List(ctx, store.PolicyModelsPage{AfterPolicyID: req.ID, AfterModelID: after, PolicyID: &req.ID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.PolicyModel) uuid.UUID { return r.ModelID })
	return gen.ListPolicyModelGrants200JSONResponse{Items: convertAll(rows, policyModelOut), NextCursor: next}, nil
}

// CreatePolicyModelGrant implements StrictServerInterface.
func (s *Server) CreatePolicyModelGrant(ctx context.Context, req gen.CreatePolicyModelGrantRequestObject) (gen.CreatePolicyModelGrantResponseObject, error) {
	c, err := s.policyFor(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	if err := got(s.st.Models().Get(ctx, req.Body.ModelID)).exists("model_id", "model"); err != nil {
		return nil, err
	}
	row, err := s.st.PolicyModels().Create(ctx, c.actor, store.PolicyModel{PolicyID: req.ID, ModelID: req.Body.ModelID})
	if err != nil {
		return nil, err
	}
	return gen.CreatePolicyModelGrant201JSONResponse(policyModelOut(row)), nil
}

// DeletePolicyModelGrant implements StrictServerInterface.
func (s *Server) DeletePolicyModelGrant(ctx context.Context, req gen.DeletePolicyModelGrantRequestObject) (gen.DeletePolicyModelGrantResponseObject, error) {
	c, err := s.policyFor(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	err = s.st.PolicyModels().Delete(ctx, c.actor, store.PolicyModelKey{PolicyID: req.ID, ModelID: req.ModelID})
	if _, err := found("model grant", struct{}{}, err); err != nil {
		return nil, err
	}
	return gen.DeletePolicyModelGrant204Response{}, nil
}

// ListPolicyHostKeyGrants implements StrictServerInterface.
func (s *Server) ListPolicyHostKeyGrants(ctx context.Context, req gen.ListPolicyHostKeyGrantsRequestObject) (gen.ListPolicyHostKeyGrantsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	if _, err := s.policyFor(ctx, req.ID, false); err != nil {
		return nil, err
	}
	rows, err := s.st.PolicyHostKeys().List(ctx, store.PolicyHostKeysPage{AfterPolicyID: req.ID, AfterHostKeyID: after, PolicyID: &req.ID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.PolicyHostKey) uuid.UUID { return r.HostKeyID })
	return gen.ListPolicyHostKeyGrants200JSONResponse{Items: convertAll(rows, policyHostKeyOut), NextCursor: next}, nil
}

// CreatePolicyHostKeyGrant implements StrictServerInterface.
func (s *Server) CreatePolicyHostKeyGrant(ctx context.Context, req gen.CreatePolicyHostKeyGrantRequestObject) (gen.CreatePolicyHostKeyGrantResponseObject, error) {
	c, p, err := s.policyRow(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	if err := s.grantableHostKey(ctx, p, req.Body.HostKeyID); err != nil {
		return nil, err
	}
	row, err := s.st.PolicyHostKeys().Create(ctx, c.actor, store.PolicyHostKey{PolicyID: req.ID, HostKeyID: req.Body.HostKeyID})
	if err != nil {
		return nil, err
	}
	return gen.CreatePolicyHostKeyGrant201JSONResponse(policyHostKeyOut(row)), nil
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

// DeletePolicyHostKeyGrant implements StrictServerInterface.
func (s *Server) DeletePolicyHostKeyGrant(ctx context.Context, req gen.DeletePolicyHostKeyGrantRequestObject) (gen.DeletePolicyHostKeyGrantResponseObject, error) {
	c, err := s.policyFor(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	err = s.st.PolicyHostKeys().Delete(ctx, c.actor, store.PolicyHostKeyKey{PolicyID: req.ID, HostKeyID: req.HostKeyID})
	if _, err := found("host key grant", struct{}{}, err); err != nil {
		return nil, err
	}
	return gen.DeletePolicyHostKeyGrant204Response{}, nil
}

// ListPolicyModelRateLimits implements StrictServerInterface.
func (s *Server) ListPolicyModelRateLimits(ctx context.Context, req gen.ListPolicyModelRateLimitsRequestObject) (gen.ListPolicyModelRateLimitsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	if _, err := s.policyFor(ctx, req.ID, false); err != nil {
		return nil, err
	}
	rows, err := s.st.PolicyModelRateLimits().List(ctx, store.PolicyModelRateLimitsPage{AfterPolicyID: req.ID, AfterModelID: after, PolicyID: &req.ID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.PolicyModelRateLimit) uuid.UUID { return r.ModelID })
	return gen.ListPolicyModelRateLimits200JSONResponse{Items: convertAll(rows, policyModelRateLimitOut), NextCursor: next}, nil
}

// CreatePolicyModelRateLimit implements StrictServerInterface.
func (s *Server) CreatePolicyModelRateLimit(ctx context.Context, req gen.CreatePolicyModelRateLimitRequestObject) (gen.CreatePolicyModelRateLimitResponseObject, error) {
	c, err := s.policyFor(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if err := got(s.st.Models().Get(ctx, b.ModelID)).exists("model_id", "model"); err != nil {
		return nil, err
	}
	if err := got(s.st.RateLimits().Get(ctx, b.RateLimitID)).exists("rate_limit_id", "rate limit"); err != nil {
		return nil, err
	}
	row, err := s.st.PolicyModelRateLimits().Create(ctx, c.actor, store.PolicyModelRateLimit{
		PolicyID: req.ID, ModelID: b.ModelID, RateLimitID: b.RateLimitID, Position: deref(b.Position, 0),
	})
	if err != nil {
		return nil, err
	}
	return gen.CreatePolicyModelRateLimit201JSONResponse(policyModelRateLimitOut(row)), nil
}

// GetPolicyModelRateLimit implements StrictServerInterface.
func (s *Server) GetPolicyModelRateLimit(ctx context.Context, req gen.GetPolicyModelRateLimitRequestObject) (gen.GetPolicyModelRateLimitResponseObject, error) {
	if _, err := s.policyFor(ctx, req.ID, false); err != nil {
		return nil, err
	}
	row, err := got(s.st.PolicyModelRateLimits().Get(ctx, store.PolicyModelKey{PolicyID: req.ID, ModelID: req.ModelID})).orNotFound("per-model rate limit")
	if err != nil {
		return nil, err
	}
	return gen.GetPolicyModelRateLimit200JSONResponse(policyModelRateLimitOut(row)), nil
}

// UpdatePolicyModelRateLimit implements StrictServerInterface.
func (s *Server) UpdatePolicyModelRateLimit(ctx context.Context, req gen.UpdatePolicyModelRateLimitRequestObject) (gen.UpdatePolicyModelRateLimitResponseObject, error) {
	c, err := s.policyFor(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if b.RateLimitID != nil {
		if err := got(s.st.RateLimits().Get(ctx, *b.RateLimitID)).exists("rate_limit_id", "rate limit"); err != nil {
			return nil, err
		}
	}
	row, err := s.st.PolicyModelRateLimits().Modify(ctx, c.actor, store.PolicyModelKey{PolicyID: req.ID, ModelID: req.ModelID},
		func(r *store.PolicyModelRateLimit) error {
			set(&r.RateLimitID, b.RateLimitID)
			set(&r.Position, b.Position)
			return nil
		})
	if row, err = found("per-model rate limit", row, err); err != nil {
		return nil, err
	}
	return gen.UpdatePolicyModelRateLimit200JSONResponse(policyModelRateLimitOut(row)), nil
}

// DeletePolicyModelRateLimit implements StrictServerInterface.
func (s *Server) DeletePolicyModelRateLimit(ctx context.Context, req gen.DeletePolicyModelRateLimitRequestObject) (gen.DeletePolicyModelRateLimitResponseObject, error) {
	c, err := s.policyFor(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	err = s.st.PolicyModelRateLimits().Delete(ctx, c.actor, store.PolicyModelKey{PolicyID: req.ID, ModelID: req.ModelID})
	if _, err := found("per-model rate limit", struct{}{}, err); err != nil {
		return nil, err
	}
	return gen.DeletePolicyModelRateLimit204Response{}, nil
}
