package controlapi

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/models"
)

// Tenancy: teams contain projects; projects contain service accounts, relay
// keys, policy bindings and budgets. Each row is checked on its scope chain
// (project → team → system): Read to see it, the manage verb of its level to
// change it.

// projectRow reads a row that lives in a project. It is 404 when missing or
// when the caller lacks Read on its project, 403 when need (if not zero) is
// missing there.
func projectRow[R any](ctx context.Context, s *Server, kind string, need rbac.Verb, get func() (R, error), projectOf func(R) uuid.UUID) (*caller, R, rbac.Scope, error) {
	var zero R
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, zero, rbac.Scope{}, err
	}
	r, err := get()
	if r, err = found(kind, r, err); err != nil {
		return nil, zero, rbac.Scope{}, err
	}
	sc, err := s.projectScope(ctx, projectOf(r))
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.Can(rbac.Read, sc)) {
		return nil, zero, rbac.Scope{}, notFound(kind)
	}
	if err != nil {
		return nil, zero, rbac.Scope{}, err
	}
	if need != 0 {
		if err := can403(c, need, sc); err != nil {
			return nil, zero, rbac.Scope{}, err
		}
	}
	return c, r, sc, nil
}

// Teams -------------------------------------------------------------------------

// ListTeams is the operation of the same name in openapi/control.yaml.
func (v *Service) ListTeams(ctx context.Context, params models.ListTeamsParams) (out models.TeamList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListTeams")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	rows, err := s.st.Teams().ListVisible(ctx, store.Page{After: after, Limit: fetch}, storeReach(c, rbac.Read))
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.Team) uuid.UUID { return r.ID }, teamOut)
	return out, err
}

// team reads a team the caller can see; need (if not zero) is checked on it.
func (s *Server) team(ctx context.Context, id uuid.UUID, need rbac.Verb) (*caller, store.Team, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, store.Team{}, err
	}
	if !c.CanSeeTeam(id) {
		return nil, store.Team{}, notFound("team")
	}
	t, err := got(s.st.Teams().Get(ctx, id)).orNotFound("team")
	if err != nil {
		return nil, t, err
	}
	if need != 0 {
		if err := can403(c, need, rbac.InTeam(id)); err != nil {
			return nil, t, err
		}
	}
	return c, t, nil
}

// CreateTeam is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateTeam(ctx context.Context, body *models.TeamCreate) (out models.Team, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateTeam")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := systemWrite(ctx)
	if err != nil {
		return out, err
	}
	row, err := s.st.Teams().Create(ctx, c.actor, store.Team{Slug: body.Slug, Name: deref(body.Name, "")})
	if err != nil {
		return out, err
	}
	return teamOut(row), nil
}

// GetTeam is the operation of the same name in openapi/control.yaml.
func (v *Service) GetTeam(ctx context.Context, id uuid.UUID) (out models.Team, err error) {
	s, ctx, done, err := v.enter(ctx, "GetTeam")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, t, err := s.team(ctx, id, 0)
	if err != nil {
		return out, err
	}
	return teamOut(t), nil
}

// UpdateTeam is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateTeam(ctx context.Context, id uuid.UUID, body *models.TeamUpdate) (out models.Team, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateTeam")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := s.team(ctx, id, rbac.ManageTeam)
	if err != nil {
		return out, err
	}
	row, err := s.st.Teams().Modify(ctx, c.actor, id, func(r *store.Team) error {
		set(&r.Slug, body.Slug)
		set(&r.Name, body.Name)
		return nil
	})
	if row, err = found("team", row, err); err != nil {
		return out, err
	}
	return teamOut(row), nil
}

// DeleteTeam implements StrictServerInterface: system admins only; a team
// with projects is 409.
func (v *Service) DeleteTeam(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteTeam")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := s.team(ctx, id, rbac.ManageSystem)
	if err != nil {
		return err
	}
	err = s.st.Teams().Delete(ctx, c.actor, id)
	if e := storeError("DELETE", err); e != nil && e.status == 409 {
		return conflict("the team still has projects; delete or move them first")
	}
	if _, err := found("team", struct{}{}, err); err != nil {
		return err
	}
	return nil
}

// Projects ----------------------------------------------------------------------

// ListProjects is the operation of the same name in openapi/control.yaml.
func (v *Service) ListProjects(ctx context.Context, params models.ListProjectsParams) (out models.ProjectList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListProjects")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	rows, err := s.st.Projects().ListVisible(ctx, store.ProjectsPage{After: after, TeamID: params.TeamID, Limit: fetch}, storeReach(c, rbac.Read))
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.Project) uuid.UUID { return r.ID }, projectOut)
	return out, err
}

func projectID(p store.Project) uuid.UUID { return p.ID }

// CreateProject implements StrictServerInterface: team admins of the team.
func (v *Service) CreateProject(ctx context.Context, body *models.ProjectCreate) (out models.Project, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateProject")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	b := body
	if err := s.readableTeam(ctx, c, "team_id", b.TeamID); err != nil {
		return out, err
	}
	if err := can403(c, rbac.ManageTeam, rbac.InTeam(b.TeamID)); err != nil {
		return out, err
	}
	row, err := s.st.Projects().Create(ctx, c.actor, store.Project{TeamID: b.TeamID, Slug: b.Slug, Name: deref(b.Name, "")})
	if err != nil {
		return out, err
	}
	return projectOut(row), nil
}

// GetProject is the operation of the same name in openapi/control.yaml.
func (v *Service) GetProject(ctx context.Context, id uuid.UUID) (out models.Project, err error) {
	s, ctx, done, err := v.enter(ctx, "GetProject")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, _, err := projectRow(ctx, s, "project", 0, func() (store.Project, error) { return s.st.Projects().Get(ctx, id) }, projectID)
	if err != nil {
		return out, err
	}
	return projectOut(row), nil
}

// UpdateProject implements StrictServerInterface: project admins rename it;
// moving it to another team needs ManageTeam on both teams.
func (v *Service) UpdateProject(ctx context.Context, id uuid.UUID, body *models.ProjectUpdate) (out models.Project, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateProject")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, cur, _, err := projectRow(ctx, s, "project", rbac.ManageProject, func() (store.Project, error) { return s.st.Projects().Get(ctx, id) }, projectID)
	if err != nil {
		return out, err
	}
	b := body
	if b.TeamID != nil && *b.TeamID != cur.TeamID {
		if err := s.readableTeam(ctx, c, "team_id", *b.TeamID); err != nil {
			return out, err
		}
		if !c.Can(rbac.ManageTeam, rbac.InTeam(cur.TeamID)) || !c.Can(rbac.ManageTeam, rbac.InTeam(*b.TeamID)) {
			return out, forbidden("moving a project needs manage_team on both teams")
		}
	}
	row, err := s.st.Projects().Modify(ctx, c.actor, id, func(r *store.Project) error {
		set(&r.TeamID, b.TeamID)
		set(&r.Slug, b.Slug)
		set(&r.Name, b.Name)
		return nil
	})
	if row, err = found("project", row, err); err != nil {
		return out, err
	}
	return projectOut(row), nil
}

// DeleteProject implements StrictServerInterface: team admins of its team.
func (v *Service) DeleteProject(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteProject")
	if err != nil {
		return err
	}
	defer done(&err)
	c, cur, _, err := projectRow(ctx, s, "project", 0, func() (store.Project, error) { return s.st.Projects().Get(ctx, id) }, projectID)
	if err != nil {
		return err
	}
	if err := can403(c, rbac.ManageTeam, rbac.InTeam(cur.TeamID)); err != nil {
		return err
	}
	if _, err := found("project", struct{}{}, s.st.Projects().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// Service accounts ------------------------------------------------------------------

func serviceAccountProject(r store.ServiceAccount) uuid.UUID { return r.ProjectID }

// ListServiceAccounts is the operation of the same name in openapi/control.yaml.
func (v *Service) ListServiceAccounts(ctx context.Context, params models.ListServiceAccountsParams) (out models.ServiceAccountList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListServiceAccounts")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	rows, err := s.st.ServiceAccounts().ListVisible(ctx, store.ServiceAccountsPage{After: after, ProjectID: params.ProjectID, Limit: fetch}, storeReach(c, rbac.Read))
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.ServiceAccount) uuid.UUID { return r.ID }, serviceAccountOut)
	return out, err
}

// CreateServiceAccount is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateServiceAccount(ctx context.Context, body *models.ServiceAccountCreate) (out models.ServiceAccount, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateServiceAccount")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	b := body
	sc, err := s.readableProject(ctx, c, "project_id", b.ProjectID)
	if err != nil {
		return out, err
	}
	if err := can403(c, rbac.ManageProject, sc); err != nil {
		return out, err
	}
	if b.PolicyID != nil {
		if err := s.attachablePolicy(ctx, c, "policy_id", *b.PolicyID, sc); err != nil {
			return out, err
		}
	}
	row, err := s.st.ServiceAccounts().Create(ctx, c.actor, store.ServiceAccount{
		ProjectID: b.ProjectID, Slug: b.Slug, Name: deref(b.Name, ""), PolicyID: b.PolicyID,
	})
	if err != nil {
		return out, err
	}
	return serviceAccountOut(row), nil
}

// GetServiceAccount is the operation of the same name in openapi/control.yaml.
func (v *Service) GetServiceAccount(ctx context.Context, id uuid.UUID) (out models.ServiceAccount, err error) {
	s, ctx, done, err := v.enter(ctx, "GetServiceAccount")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, _, err := projectRow(ctx, s, "service account", 0, func() (store.ServiceAccount, error) { return s.st.ServiceAccounts().Get(ctx, id) }, serviceAccountProject)
	if err != nil {
		return out, err
	}
	return serviceAccountOut(row), nil
}

// UpdateServiceAccount is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateServiceAccount(ctx context.Context, id uuid.UUID, body *models.ServiceAccountUpdate) (out models.ServiceAccount, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateServiceAccount")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, sc, err := projectRow(ctx, s, "service account", rbac.ManageProject, func() (store.ServiceAccount, error) { return s.st.ServiceAccounts().Get(ctx, id) }, serviceAccountProject)
	if err != nil {
		return out, err
	}
	b := body
	if id, ok := b.PolicyID.Get(); ok {
		if err := s.attachablePolicy(ctx, c, "policy_id", id, sc); err != nil {
			return out, err
		}
	}
	row, err := s.st.ServiceAccounts().Modify(ctx, c.actor, id, func(r *store.ServiceAccount) error {
		set(&r.Slug, b.Slug)
		set(&r.Name, b.Name)
		if b.PolicyID.IsSpecified() {
			r.PolicyID = b.PolicyID.Pointer()
		}
		return nil
	})
	if row, err = found("service account", row, err); err != nil {
		return out, err
	}
	return serviceAccountOut(row), nil
}

// DeleteServiceAccount is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteServiceAccount(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteServiceAccount")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, _, err := projectRow(ctx, s, "service account", rbac.ManageProject, func() (store.ServiceAccount, error) { return s.st.ServiceAccounts().Get(ctx, id) }, serviceAccountProject)
	if err != nil {
		return err
	}
	if _, err := found("service account", struct{}{}, s.st.ServiceAccounts().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// Policy bindings -------------------------------------------------------------------

func policyBindingProject(r store.PolicyBinding) uuid.UUID { return r.ProjectID }

// ListPolicyBindings is the operation of the same name in openapi/control.yaml.
func (v *Service) ListPolicyBindings(ctx context.Context, params models.ListPolicyBindingsParams) (out models.PolicyBindingList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListPolicyBindings")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	rows, err := s.st.PolicyBindings().ListVisible(ctx, store.PolicyBindingsPage{
		After: after, ProjectID: params.ProjectID, PolicyID: params.PolicyID, Limit: fetch,
	}, storeReach(c, rbac.Read))
	if err != nil {
		return out, err
	}
	rows, next := cut(rows, fetch, func(r store.PolicyBinding) uuid.UUID { return r.ID })
	return models.PolicyBindingList{Items: convertAll(rows, policyBindingOut), NextCursor: next}, nil
}

// subject checks the subject of a policy binding: the service account must be
// in the project; the user or group must exist and be readable by the caller.
func (s *Server) checkSubject(ctx context.Context, c *caller, projectID uuid.UUID, sa, user, group *uuid.UUID) error {
	switch {
	case sa != nil:
		r, err := s.st.ServiceAccounts().Get(ctx, *sa)
		if errors.Is(err, store.ErrNotFound) || (err == nil && r.ProjectID != projectID) {
			return invalid("service_account_id: no such service account in the project", "service_account_id")
		}
		return err
	case user != nil:
		if !canReadDirectory(c) && *user != c.User() {
			return noSuch("user_id", "user")
		}
		return got(s.st.Users().Get(ctx, *user)).exists("user_id", "user")
	case group != nil:
		if !canReadDirectory(c) {
			return noSuch("group_id", "group")
		}
		return got(s.st.Groups().Get(ctx, *group)).exists("group_id", "group")
	}
	return nil
}

// count counts the set pointers.
func count(ps ...*uuid.UUID) int {
	n := 0
	for _, p := range ps {
		if p != nil {
			n++
		}
	}
	return n
}

// CreatePolicyBinding is the operation of the same name in openapi/control.yaml.
func (v *Service) CreatePolicyBinding(ctx context.Context, body *models.PolicyBindingCreate) (out models.PolicyBinding, err error) {
	s, ctx, done, err := v.enter(ctx, "CreatePolicyBinding")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	b := body
	sc, err := s.readableProject(ctx, c, "project_id", b.ProjectID)
	if err != nil {
		return out, err
	}
	if err := can403(c, rbac.ManageProject, sc); err != nil {
		return out, err
	}
	if count(b.ServiceAccountID, b.UserID, b.GroupID) != 1 {
		return out, exactlyOne("service_account_id", "user_id", "group_id")
	}
	if err := s.attachablePolicy(ctx, c, "policy_id", b.PolicyID, sc); err != nil {
		return out, err
	}
	if err := s.checkSubject(ctx, c, b.ProjectID, b.ServiceAccountID, b.UserID, b.GroupID); err != nil {
		return out, err
	}
	row, err := s.st.PolicyBindings().Create(ctx, c.actor, store.PolicyBinding{
		ProjectID: b.ProjectID, PolicyID: b.PolicyID, ServiceAccountID: b.ServiceAccountID,
		UserID: b.UserID, GroupID: b.GroupID, Position: deref(b.Position, 0),
	})
	if err != nil {
		return out, err
	}
	return policyBindingOut(row), nil
}

// GetPolicyBinding is the operation of the same name in openapi/control.yaml.
func (v *Service) GetPolicyBinding(ctx context.Context, id uuid.UUID) (out models.PolicyBinding, err error) {
	s, ctx, done, err := v.enter(ctx, "GetPolicyBinding")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, _, err := projectRow(ctx, s, "policy binding", 0, func() (store.PolicyBinding, error) { return s.st.PolicyBindings().Get(ctx, id) }, policyBindingProject)
	if err != nil {
		return out, err
	}
	return policyBindingOut(row), nil
}

// UpdatePolicyBinding is the operation of the same name in openapi/control.yaml. A subject given
// replaces the current one.
func (v *Service) UpdatePolicyBinding(ctx context.Context, id uuid.UUID, body *models.PolicyBindingUpdate) (out models.PolicyBinding, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdatePolicyBinding")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, cur, sc, err := projectRow(ctx, s, "policy binding", rbac.ManageProject, func() (store.PolicyBinding, error) { return s.st.PolicyBindings().Get(ctx, id) }, policyBindingProject)
	if err != nil {
		return out, err
	}
	b := body
	n := count(b.ServiceAccountID, b.UserID, b.GroupID)
	if n > 1 {
		return out, invalid("give at most one of service_account_id, user_id, group_id", "service_account_id", "user_id", "group_id")
	}
	if b.PolicyID != nil {
		if err := s.attachablePolicy(ctx, c, "policy_id", *b.PolicyID, sc); err != nil {
			return out, err
		}
	}
	if err := s.checkSubject(ctx, c, cur.ProjectID, b.ServiceAccountID, b.UserID, b.GroupID); err != nil {
		return out, err
	}
	row, err := s.st.PolicyBindings().Modify(ctx, c.actor, id, func(r *store.PolicyBinding) error {
		set(&r.PolicyID, b.PolicyID)
		set(&r.Position, b.Position)
		if n == 1 {
			r.ServiceAccountID, r.UserID, r.GroupID = b.ServiceAccountID, b.UserID, b.GroupID
		}
		return nil
	})
	if row, err = found("policy binding", row, err); err != nil {
		return out, err
	}
	return policyBindingOut(row), nil
}

// DeletePolicyBinding is the operation of the same name in openapi/control.yaml.
func (v *Service) DeletePolicyBinding(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeletePolicyBinding")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, _, err := projectRow(ctx, s, "policy binding", rbac.ManageProject, func() (store.PolicyBinding, error) { return s.st.PolicyBindings().Get(ctx, id) }, policyBindingProject)
	if err != nil {
		return err
	}
	if _, err := found("policy binding", struct{}{}, s.st.PolicyBindings().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}

// Budgets -----------------------------------------------------------------------

// budgetScope is where a budget lives and the verb that changes it: a team
// budget is the team's (ManageTeam); a project or relay-key budget is the
// project's (ManageProject). A budget whose owner is gone is not found.
func (s *Server) budgetScope(ctx context.Context, teamID, projectID, relayKeyID *uuid.UUID) (rbac.Scope, rbac.Verb, error) {
	switch {
	case teamID != nil:
		return rbac.InTeam(*teamID), rbac.ManageTeam, nil
	case projectID != nil:
		sc, err := s.projectScope(ctx, *projectID)
		return sc, rbac.ManageProject, err
	case relayKeyID != nil:
		k, err := s.st.RelayKeys().Get(ctx, *relayKeyID)
		if err != nil {
			return rbac.Scope{}, 0, err
		}
		sc, err := s.projectScope(ctx, k.ProjectID)
		return sc, rbac.ManageProject, err
	}
	return rbac.Scope{}, 0, store.ErrNotFound
}

// budget reads a budget the caller can see; write checks its manage verb.
func (s *Server) budget(ctx context.Context, id uuid.UUID, write bool) (*caller, store.Budget, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, store.Budget{}, err
	}
	b, err := got(s.st.Budgets().Get(ctx, id)).orNotFound("budget")
	if err != nil {
		return nil, b, err
	}
	sc, need, err := s.budgetScope(ctx, b.TeamID, b.ProjectID, b.RelayKeyID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.Can(rbac.Read, sc)) {
		return nil, b, notFound("budget")
	}
	if err != nil {
		return nil, b, err
	}
	if write {
		if err := can403(c, need, sc); err != nil {
			return nil, b, err
		}
	}
	return c, b, nil
}

// ListBudgets is the operation of the same name in openapi/control.yaml.
func (v *Service) ListBudgets(ctx context.Context, params models.ListBudgetsParams) (out models.BudgetList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListBudgets")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	p := params
	rows, err := s.st.Budgets().ListVisible(ctx, store.BudgetsPage{
		After: after, TeamID: p.TeamID, ProjectID: p.ProjectID, RelayKeyID: p.RelayKeyID, Limit: fetch,
	}, storeReach(c, rbac.Read))
	if err != nil {
		return out, err
	}
	rows, next := cut(rows, fetch, func(r store.Budget) uuid.UUID { return r.ID })
	return models.BudgetList{Items: convertAll(rows, budgetOut), NextCursor: next}, nil
}

// CreateBudget is the operation of the same name in openapi/control.yaml.
func (v *Service) CreateBudget(ctx context.Context, body *models.BudgetCreate) (out models.Budget, err error) {
	s, ctx, done, err := v.enter(ctx, "CreateBudget")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	b := body
	if count(b.TeamID, b.ProjectID, b.RelayKeyID) != 1 {
		return out, exactlyOne("team_id", "project_id", "relay_key_id")
	}
	var field, kind string
	switch {
	case b.TeamID != nil:
		field, kind = "team_id", "team"
	case b.ProjectID != nil:
		field, kind = "project_id", "project"
	default:
		field, kind = "relay_key_id", "relay key"
	}
	sc, need, err := s.budgetScope(ctx, b.TeamID, b.ProjectID, b.RelayKeyID)
	if b.TeamID != nil && err == nil {
		// The team itself must exist and be visible; members of its projects see it.
		err = s.readableTeam(ctx, c, field, *b.TeamID)
	} else if errors.Is(err, store.ErrNotFound) || (err == nil && !c.Can(rbac.Read, sc)) {
		err = noSuch(field, kind)
	}
	if err != nil {
		return out, err
	}
	if err := can403(c, need, sc); err != nil {
		return out, err
	}
	row, err := s.st.Budgets().Create(ctx, c.actor, store.Budget{
		TeamID: b.TeamID, ProjectID: b.ProjectID, RelayKeyID: b.RelayKeyID, Period: string(b.Period), Amount: b.Amount,
	})
	if err != nil {
		return out, err
	}
	return budgetOut(row), nil
}

// GetBudget is the operation of the same name in openapi/control.yaml.
func (v *Service) GetBudget(ctx context.Context, id uuid.UUID) (out models.Budget, err error) {
	s, ctx, done, err := v.enter(ctx, "GetBudget")
	if err != nil {
		return out, err
	}
	defer done(&err)
	_, row, err := s.budget(ctx, id, false)
	if err != nil {
		return out, err
	}
	return budgetOut(row), nil
}

// UpdateBudget is the operation of the same name in openapi/control.yaml.
func (v *Service) UpdateBudget(ctx context.Context, id uuid.UUID, body *models.BudgetUpdate) (out models.Budget, err error) {
	s, ctx, done, err := v.enter(ctx, "UpdateBudget")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := s.budget(ctx, id, true)
	if err != nil {
		return out, err
	}
	row, err := s.st.Budgets().Modify(ctx, c.actor, id, func(r *store.Budget) error {
		if body.Period != nil {
			r.Period = string(*body.Period)
		}
		set(&r.Amount, body.Amount)
		return nil
	})
	if row, err = found("budget", row, err); err != nil {
		return out, err
	}
	return budgetOut(row), nil
}

// DeleteBudget is the operation of the same name in openapi/control.yaml.
func (v *Service) DeleteBudget(ctx context.Context, id uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "DeleteBudget")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := s.budget(ctx, id, true)
	if err != nil {
		return err
	}
	if _, err := found("budget", struct{}{}, s.st.Budgets().Delete(ctx, c.actor, id)); err != nil {
		return err
	}
	return nil
}
