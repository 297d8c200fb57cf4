package controlapi

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	gen "github.com/relay-llm/relay/openapi/controlgen"
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

// ListTeams implements StrictServerInterface.
func (s *Server) ListTeams(ctx context.Context, req gen.ListTeamsRequestObject) (gen.ListTeamsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.Teams().ListVisible(ctx, store.Page{After: after, Limit: fetch}, storeReach(c, rbac.Read))
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.Team) uuid.UUID { return r.ID })
	return gen.ListTeams200JSONResponse{Items: convertAll(rows, teamOut), NextCursor: next}, nil
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

// CreateTeam implements StrictServerInterface.
func (s *Server) CreateTeam(ctx context.Context, req gen.CreateTeamRequestObject) (gen.CreateTeamResponseObject, error) {
	c, err := systemWrite(ctx)
	if err != nil {
		return nil, err
	}
	row, err := s.st.Teams().Create(ctx, c.actor, store.Team{Slug: req.Body.Slug, Name: deref(req.Body.Name, "")})
	if err != nil {
		return nil, err
	}
	return gen.CreateTeam201JSONResponse(teamOut(row)), nil
}

// GetTeam implements StrictServerInterface.
func (s *Server) GetTeam(ctx context.Context, req gen.GetTeamRequestObject) (gen.GetTeamResponseObject, error) {
	_, t, err := s.team(ctx, req.ID, 0)
	if err != nil {
		return nil, err
	}
	return gen.GetTeam200JSONResponse(teamOut(t)), nil
}

// UpdateTeam implements StrictServerInterface.
func (s *Server) UpdateTeam(ctx context.Context, req gen.UpdateTeamRequestObject) (gen.UpdateTeamResponseObject, error) {
	c, _, err := s.team(ctx, req.ID, rbac.ManageTeam)
	if err != nil {
		return nil, err
	}
	row, err := s.st.Teams().Modify(ctx, c.actor, req.ID, func(r *store.Team) error {
		set(&r.Slug, req.Body.Slug)
		set(&r.Name, req.Body.Name)
		return nil
	})
	if row, err = found("team", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateTeam200JSONResponse(teamOut(row)), nil
}

// DeleteTeam implements StrictServerInterface: system admins only; a team
// with projects is 409.
func (s *Server) DeleteTeam(ctx context.Context, req gen.DeleteTeamRequestObject) (gen.DeleteTeamResponseObject, error) {
	c, _, err := s.team(ctx, req.ID, rbac.ManageSystem)
	if err != nil {
		return nil, err
	}
	err = s.st.Teams().Delete(ctx, c.actor, req.ID)
	if e := storeError("DELETE", err); e != nil && e.status == 409 {
		return nil, conflict("the team still has projects; delete or move them first")
	}
	if _, err := found("team", struct{}{}, err); err != nil {
		return nil, err
	}
	return gen.DeleteTeam204Response{}, nil
}

// Projects ----------------------------------------------------------------------

// ListProjects implements StrictServerInterface.
func (s *Server) ListProjects(ctx context.Context, req gen.ListProjectsRequestObject) (gen.ListProjectsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.Projects().ListVisible(ctx, store.ProjectsPage{After: after, TeamID: req.Params.TeamID, Limit: fetch}, storeReach(c, rbac.Read))
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.Project) uuid.UUID { return r.ID })
	return gen.ListProjects200JSONResponse{Items: convertAll(rows, projectOut), NextCursor: next}, nil
}

func projectID(p store.Project) uuid.UUID { return p.ID }

// CreateProject implements StrictServerInterface: team admins of the team.
func (s *Server) CreateProject(ctx context.Context, req gen.CreateProjectRequestObject) (gen.CreateProjectResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if err := s.readableTeam(ctx, c, "team_id", b.TeamID); err != nil {
		return nil, err
	}
	if err := can403(c, rbac.ManageTeam, rbac.InTeam(b.TeamID)); err != nil {
		return nil, err
	}
	row, err := s.st.Projects().Create(ctx, c.actor, store.Project{TeamID: b.TeamID, Slug: b.Slug, Name: deref(b.Name, "")})
	if err != nil {
		return nil, err
	}
	return gen.CreateProject201JSONResponse(projectOut(row)), nil
}

// GetProject implements StrictServerInterface.
func (s *Server) GetProject(ctx context.Context, req gen.GetProjectRequestObject) (gen.GetProjectResponseObject, error) {
	_, row, _, err := projectRow(ctx, s, "project", 0, func() (store.Project, error) { return s.st.Projects().Get(ctx, req.ID) }, projectID)
	if err != nil {
		return nil, err
	}
	return gen.GetProject200JSONResponse(projectOut(row)), nil
}

// UpdateProject implements StrictServerInterface: project admins rename it;
// moving it to another team needs ManageTeam on both teams.
func (s *Server) UpdateProject(ctx context.Context, req gen.UpdateProjectRequestObject) (gen.UpdateProjectResponseObject, error) {
	c, cur, _, err := projectRow(ctx, s, "project", rbac.ManageProject, func() (store.Project, error) { return s.st.Projects().Get(ctx, req.ID) }, projectID)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if b.TeamID != nil && *b.TeamID != cur.TeamID {
		if err := s.readableTeam(ctx, c, "team_id", *b.TeamID); err != nil {
			return nil, err
		}
		if !c.Can(rbac.ManageTeam, rbac.InTeam(cur.TeamID)) || !c.Can(rbac.ManageTeam, rbac.InTeam(*b.TeamID)) {
			return nil, forbidden("moving a project needs manage_team on both teams")
		}
	}
	row, err := s.st.Projects().Modify(ctx, c.actor, req.ID, func(r *store.Project) error {
		set(&r.TeamID, b.TeamID)
		set(&r.Slug, b.Slug)
		set(&r.Name, b.Name)
		return nil
	})
	if row, err = found("project", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateProject200JSONResponse(projectOut(row)), nil
}

// DeleteProject implements StrictServerInterface: team admins of its team.
func (s *Server) DeleteProject(ctx context.Context, req gen.DeleteProjectRequestObject) (gen.DeleteProjectResponseObject, error) {
	c, cur, _, err := projectRow(ctx, s, "project", 0, func() (store.Project, error) { return s.st.Projects().Get(ctx, req.ID) }, projectID)
	if err != nil {
		return nil, err
	}
	if err := can403(c, rbac.ManageTeam, rbac.InTeam(cur.TeamID)); err != nil {
		return nil, err
	}
	if _, err := found("project", struct{}{}, s.st.Projects().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeleteProject204Response{}, nil
}

// Service accounts ------------------------------------------------------------------

func serviceAccountProject(r store.ServiceAccount) uuid.UUID { return r.ProjectID }

// ListServiceAccounts implements StrictServerInterface.
func (s *Server) ListServiceAccounts(ctx context.Context, req gen.ListServiceAccountsRequestObject) (gen.ListServiceAccountsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.ServiceAccounts().ListVisible(ctx, store.ServiceAccountsPage{After: after, ProjectID: req.Params.ProjectID, Limit: fetch}, storeReach(c, rbac.Read))
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.ServiceAccount) uuid.UUID { return r.ID })
	return gen.ListServiceAccounts200JSONResponse{Items: convertAll(rows, serviceAccountOut), NextCursor: next}, nil
}

// CreateServiceAccount implements StrictServerInterface.
func (s *Server) CreateServiceAccount(ctx context.Context, req gen.CreateServiceAccountRequestObject) (gen.CreateServiceAccountResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	sc, err := s.readableProject(ctx, c, "project_id", b.ProjectID)
	if err != nil {
		return nil, err
	}
	if err := can403(c, rbac.ManageProject, sc); err != nil {
		return nil, err
	}
	if b.PolicyID != nil {
		if err := s.attachablePolicy(ctx, c, "policy_id", *b.PolicyID, sc); err != nil {
			return nil, err
		}
	}
	row, err := s.st.ServiceAccounts().Create(ctx, c.actor, store.ServiceAccount{
		ProjectID: b.ProjectID, Slug: b.Slug, Name: deref(b.Name, ""), PolicyID: b.PolicyID,
	})
	if err != nil {
		return nil, err
	}
	return gen.CreateServiceAccount201JSONResponse(serviceAccountOut(row)), nil
}

// GetServiceAccount implements StrictServerInterface.
func (s *Server) GetServiceAccount(ctx context.Context, req gen.GetServiceAccountRequestObject) (gen.GetServiceAccountResponseObject, error) {
	_, row, _, err := projectRow(ctx, s, "service account", 0, func() (store.ServiceAccount, error) { return s.st.ServiceAccounts().Get(ctx, req.ID) }, serviceAccountProject)
	if err != nil {
		return nil, err
	}
	return gen.GetServiceAccount200JSONResponse(serviceAccountOut(row)), nil
}

// UpdateServiceAccount implements StrictServerInterface.
func (s *Server) UpdateServiceAccount(ctx context.Context, req gen.UpdateServiceAccountRequestObject) (gen.UpdateServiceAccountResponseObject, error) {
	c, _, sc, err := projectRow(ctx, s, "service account", rbac.ManageProject, func() (store.ServiceAccount, error) { return s.st.ServiceAccounts().Get(ctx, req.ID) }, serviceAccountProject)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if id, ok := b.PolicyID.Get(); ok {
		if err := s.attachablePolicy(ctx, c, "policy_id", id, sc); err != nil {
			return nil, err
		}
	}
	row, err := s.st.ServiceAccounts().Modify(ctx, c.actor, req.ID, func(r *store.ServiceAccount) error {
		set(&r.Slug, b.Slug)
		set(&r.Name, b.Name)
		if b.PolicyID.IsSpecified() {
			r.PolicyID = b.PolicyID.Pointer()
		}
		return nil
	})
	if row, err = found("service account", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateServiceAccount200JSONResponse(serviceAccountOut(row)), nil
}

// DeleteServiceAccount implements StrictServerInterface.
func (s *Server) DeleteServiceAccount(ctx context.Context, req gen.DeleteServiceAccountRequestObject) (gen.DeleteServiceAccountResponseObject, error) {
	c, _, _, err := projectRow(ctx, s, "service account", rbac.ManageProject, func() (store.ServiceAccount, error) { return s.st.ServiceAccounts().Get(ctx, req.ID) }, serviceAccountProject)
	if err != nil {
		return nil, err
	}
	if _, err := found("service account", struct{}{}, s.st.ServiceAccounts().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeleteServiceAccount204Response{}, nil
}

// Policy bindings -------------------------------------------------------------------

func policyBindingProject(r store.PolicyBinding) uuid.UUID { return r.ProjectID }

// ListPolicyBindings implements StrictServerInterface.
func (s *Server) ListPolicyBindings(ctx context.Context, req gen.ListPolicyBindingsRequestObject) (gen.ListPolicyBindingsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.PolicyBindings().ListVisible(ctx, store.PolicyBindingsPage{
		After: after, ProjectID: req.Params.ProjectID, PolicyID: req.Params.PolicyID, Limit: fetch,
	}, storeReach(c, rbac.Read))
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.PolicyBinding) uuid.UUID { return r.ID })
	return gen.ListPolicyBindings200JSONResponse{Items: convertAll(rows, policyBindingOut), NextCursor: next}, nil
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

// CreatePolicyBinding implements StrictServerInterface.
func (s *Server) CreatePolicyBinding(ctx context.Context, req gen.CreatePolicyBindingRequestObject) (gen.CreatePolicyBindingResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	sc, err := s.readableProject(ctx, c, "project_id", b.ProjectID)
	if err != nil {
		return nil, err
	}
	if err := can403(c, rbac.ManageProject, sc); err != nil {
		return nil, err
	}
	if count(b.ServiceAccountID, b.UserID, b.GroupID) != 1 {
		return nil, exactlyOne("service_account_id", "user_id", "group_id")
	}
	if err := s.attachablePolicy(ctx, c, "policy_id", b.PolicyID, sc); err != nil {
		return nil, err
	}
	if err := s.checkSubject(ctx, c, b.ProjectID, b.ServiceAccountID, b.UserID, b.GroupID); err != nil {
		return nil, err
	}
	row, err := s.st.PolicyBindings().Create(ctx, c.actor, store.PolicyBinding{
		ProjectID: b.ProjectID, PolicyID: b.PolicyID, ServiceAccountID: b.ServiceAccountID,
		UserID: b.UserID, GroupID: b.GroupID, Position: deref(b.Position, 0),
	})
	if err != nil {
		return nil, err
	}
	return gen.CreatePolicyBinding201JSONResponse(policyBindingOut(row)), nil
}

// GetPolicyBinding implements StrictServerInterface.
func (s *Server) GetPolicyBinding(ctx context.Context, req gen.GetPolicyBindingRequestObject) (gen.GetPolicyBindingResponseObject, error) {
	_, row, _, err := projectRow(ctx, s, "policy binding", 0, func() (store.PolicyBinding, error) { return s.st.PolicyBindings().Get(ctx, req.ID) }, policyBindingProject)
	if err != nil {
		return nil, err
	}
	return gen.GetPolicyBinding200JSONResponse(policyBindingOut(row)), nil
}

// UpdatePolicyBinding implements StrictServerInterface. A subject given
// replaces the current one.
func (s *Server) UpdatePolicyBinding(ctx context.Context, req gen.UpdatePolicyBindingRequestObject) (gen.UpdatePolicyBindingResponseObject, error) {
	c, cur, sc, err := projectRow(ctx, s, "policy binding", rbac.ManageProject, func() (store.PolicyBinding, error) { return s.st.PolicyBindings().Get(ctx, req.ID) }, policyBindingProject)
	if err != nil {
		return nil, err
	}
	b := req.Body
	n := count(b.ServiceAccountID, b.UserID, b.GroupID)
	if n > 1 {
		return nil, invalid("give at most one of service_account_id, user_id, group_id", "service_account_id", "user_id", "group_id")
	}
	if b.PolicyID != nil {
		if err := s.attachablePolicy(ctx, c, "policy_id", *b.PolicyID, sc); err != nil {
			return nil, err
		}
	}
	if err := s.checkSubject(ctx, c, cur.ProjectID, b.ServiceAccountID, b.UserID, b.GroupID); err != nil {
		return nil, err
	}
	row, err := s.st.PolicyBindings().Modify(ctx, c.actor, req.ID, func(r *store.PolicyBinding) error {
		set(&r.PolicyID, b.PolicyID)
		set(&r.Position, b.Position)
		if n == 1 {
			r.ServiceAccountID, r.UserID, r.GroupID = b.ServiceAccountID, b.UserID, b.GroupID
		}
		return nil
	})
	if row, err = found("policy binding", row, err); err != nil {
		return nil, err
	}
	return gen.UpdatePolicyBinding200JSONResponse(policyBindingOut(row)), nil
}

// DeletePolicyBinding implements StrictServerInterface.
func (s *Server) DeletePolicyBinding(ctx context.Context, req gen.DeletePolicyBindingRequestObject) (gen.DeletePolicyBindingResponseObject, error) {
	c, _, _, err := projectRow(ctx, s, "policy binding", rbac.ManageProject, func() (store.PolicyBinding, error) { return s.st.PolicyBindings().Get(ctx, req.ID) }, policyBindingProject)
	if err != nil {
		return nil, err
	}
	if _, err := found("policy binding", struct{}{}, s.st.PolicyBindings().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeletePolicyBinding204Response{}, nil
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

// ListBudgets implements StrictServerInterface.
func (s *Server) ListBudgets(ctx context.Context, req gen.ListBudgetsRequestObject) (gen.ListBudgetsResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	rows, err := s.st.Budgets().ListVisible(ctx, store.BudgetsPage{
		After: after, TeamID: p.TeamID, ProjectID: p.ProjectID, RelayKeyID: p.RelayKeyID, Limit: fetch,
	}, storeReach(c, rbac.Read))
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.Budget) uuid.UUID { return r.ID })
	return gen.ListBudgets200JSONResponse{Items: convertAll(rows, budgetOut), NextCursor: next}, nil
}

// CreateBudget implements StrictServerInterface.
func (s *Server) CreateBudget(ctx context.Context, req gen.CreateBudgetRequestObject) (gen.CreateBudgetResponseObject, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	if count(b.TeamID, b.ProjectID, b.RelayKeyID) != 1 {
		return nil, exactlyOne("team_id", "project_id", "relay_key_id")
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
		return nil, err
	}
	if err := can403(c, need, sc); err != nil {
		return nil, err
	}
	row, err := s.st.Budgets().Create(ctx, c.actor, store.Budget{
		TeamID: b.TeamID, ProjectID: b.ProjectID, RelayKeyID: b.RelayKeyID, Period: string(b.Period), Amount: b.Amount,
	})
	if err != nil {
		return nil, err
	}
	return gen.CreateBudget201JSONResponse(budgetOut(row)), nil
}

// GetBudget implements StrictServerInterface.
func (s *Server) GetBudget(ctx context.Context, req gen.GetBudgetRequestObject) (gen.GetBudgetResponseObject, error) {
	_, row, err := s.budget(ctx, req.ID, false)
	if err != nil {
		return nil, err
	}
	return gen.GetBudget200JSONResponse(budgetOut(row)), nil
}

// UpdateBudget implements StrictServerInterface.
func (s *Server) UpdateBudget(ctx context.Context, req gen.UpdateBudgetRequestObject) (gen.UpdateBudgetResponseObject, error) {
	c, _, err := s.budget(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	row, err := s.st.Budgets().Modify(ctx, c.actor, req.ID, func(r *store.Budget) error {
		if req.Body.Period != nil {
			r.Period = string(*req.Body.Period)
		}
		set(&r.Amount, req.Body.Amount)
		return nil
	})
	if row, err = found("budget", row, err); err != nil {
		return nil, err
	}
	return gen.UpdateBudget200JSONResponse(budgetOut(row)), nil
}

// DeleteBudget implements StrictServerInterface.
func (s *Server) DeleteBudget(ctx context.Context, req gen.DeleteBudgetRequestObject) (gen.DeleteBudgetResponseObject, error) {
	c, _, err := s.budget(ctx, req.ID, true)
	if err != nil {
		return nil, err
	}
	if _, err := found("budget", struct{}{}, s.st.Budgets().Delete(ctx, c.actor, req.ID)); err != nil {
		return nil, err
	}
	return gen.DeleteBudget204Response{}, nil
}
