package controlapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/nullable"
)

func (b *bundle) team(slug string) models.Team {
	b.t.Helper()
	return *call(b.admin.CreateTeamWithResponse(b.ctx, models.TeamCreate{Slug: slug})).want(b.t, http.StatusCreated).JSON201
}

func (b *bundle) project(team uuid.UUID, slug string) models.Project {
	b.t.Helper()
	return *call(b.admin.CreateProjectWithResponse(b.ctx, models.ProjectCreate{TeamID: team, Slug: slug})).want(b.t, http.StatusCreated).JSON201
}

func (b *bundle) serviceAccount(project uuid.UUID, slug string) models.ServiceAccount {
	b.t.Helper()
	return *call(b.admin.CreateServiceAccountWithResponse(b.ctx, models.ServiceAccountCreate{ProjectID: project, Slug: slug})).
		want(b.t, http.StatusCreated).JSON201
}

func TestTeamsAndProjects_CRUDAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	var teams []uuid.UUID
	for i := range 5 {
		teams = append(teams, b.team(fmt.Sprintf("team-%d", i)).ID)
	}
	wantPages(t, "teams", teams, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListTeamsWithResponse(ctx, &models.ListTeamsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(t models.Team) uuid.UUID { return t.ID }), r.NextCursor
	})
	tu := call(c.UpdateTeamWithResponse(ctx, teams[0], models.TeamUpdate{Name: ptr("Platform")})).want(t, http.StatusOK).JSON200
	if tu.Name != "Platform" || tu.Slug != "team-0" {
		t.Errorf("team update = %+v", tu)
	}
	if g := call(c.GetTeamWithResponse(ctx, teams[0])).want(t, http.StatusOK).JSON200; g.Name != "Platform" {
		t.Errorf("team get = %+v", g)
	}
	call(c.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "team-1"})).wantErr(t, http.StatusConflict, "conflict", "slug")

	var projects []uuid.UUID
	for i := range 5 {
		projects = append(projects, b.project(teams[0], fmt.Sprintf("proj-%d", i)).ID)
	}
	other := b.project(teams[1], "proj-0") // the same slug in another team is fine
	wantPages(t, "projects of team-0", projects, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListProjectsWithResponse(ctx, &models.ListProjectsParams{Limit: limit2, Cursor: cur, TeamID: &teams[0]})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(p models.Project) uuid.UUID { return p.ID }), r.NextCursor
	})
	call(c.CreateProjectWithResponse(ctx, models.ProjectCreate{TeamID: teams[0], Slug: "proj-1"})).wantErr(t, http.StatusConflict, "conflict", "slug")
	call(c.CreateProjectWithResponse(ctx, models.ProjectCreate{TeamID: uuid.New(), Slug: "x"})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "team_id")
	moved := call(c.UpdateProjectWithResponse(ctx, other.ID, models.ProjectUpdate{TeamID: &teams[2], Name: ptr("Moved")})).want(t, http.StatusOK).JSON200
	if moved.TeamID != teams[2] || moved.Name != "Moved" {
		t.Errorf("project move = %+v", moved)
	}
	if g := call(c.GetProjectWithResponse(ctx, other.ID)).want(t, http.StatusOK).JSON200; g.TeamID != teams[2] {
		t.Errorf("project get = %+v", g)
	}

	// A team with projects cannot go; an empty one can.
	e := call(c.DeleteTeamWithResponse(ctx, teams[0])).wantErr(t, http.StatusConflict, "conflict", "")
	if e.Message == "" {
		t.Error("409 without a message")
	}
	call(c.DeleteProjectWithResponse(ctx, other.ID)).want(t, http.StatusNoContent)
	call(c.GetProjectWithResponse(ctx, other.ID)).wantErr(t, http.StatusNotFound, "not_found", "")
	call(c.DeleteTeamWithResponse(ctx, teams[2])).want(t, http.StatusNoContent)
	call(c.GetTeamWithResponse(ctx, teams[2])).wantErr(t, http.StatusNotFound, "not_found", "")
}

func TestServiceAccountsAndPolicyBindings_CRUDAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	tm := b.team("t")
	p, q := b.project(tm.ID, "p"), b.project(tm.ID, "q")
	pol := b.policy("pol")
	var sas []uuid.UUID
	for i := range 5 {
		sas = append(sas, b.serviceAccount(p.ID, fmt.Sprintf("sa-%d", i)).ID)
	}
	b.serviceAccount(q.ID, "sa-0")
	wantPages(t, "service accounts of p", sas, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListServiceAccountsWithResponse(ctx, &models.ListServiceAccountsParams{Limit: limit2, Cursor: cur, ProjectID: &p.ID})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(s models.ServiceAccount) uuid.UUID { return s.ID }), r.NextCursor
	})
	su := call(c.UpdateServiceAccountWithResponse(ctx, sas[0], models.ServiceAccountUpdate{PolicyID: nullable.Value(pol.ID)})).want(t, http.StatusOK).JSON200
	if su.PolicyID == nil || *su.PolicyID != pol.ID {
		t.Errorf("service account update = %+v", su)
	}
	if g := call(c.GetServiceAccountWithResponse(ctx, sas[0])).want(t, http.StatusOK).JSON200; g.Slug != "sa-0" || g.PolicyID == nil || g.ProjectID != p.ID {
		t.Errorf("service account get = %+v", g)
	}
	call(c.CreateServiceAccountWithResponse(ctx, models.ServiceAccountCreate{ProjectID: p.ID, Slug: "sa-1"})).wantErr(t, http.StatusConflict, "conflict", "slug")
	call(c.CreateServiceAccountWithResponse(ctx, models.ServiceAccountCreate{ProjectID: uuid.New(), Slug: "x"})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "project_id")
	// A policy still named by a service account cannot be deleted.
	call(c.DeletePolicyWithResponse(ctx, pol.ID)).wantErr(t, http.StatusConflict, "conflict", "")

	// Policy bindings: exactly one subject; a service account of the project.
	var pbs []uuid.UUID
	for i := range 5 {
		r := call(c.CreatePolicyBindingWithResponse(ctx, models.PolicyBindingCreate{ProjectID: p.ID, PolicyID: pol.ID, ServiceAccountID: &sas[i], Position: ptr(int32(i))})).
			want(t, http.StatusCreated).JSON201
		pbs = append(pbs, r.ID)
	}
	wantPages(t, "policy bindings", pbs, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListPolicyBindingsWithResponse(ctx, &models.ListPolicyBindingsParams{Limit: limit2, Cursor: cur, ProjectID: &p.ID})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(x models.PolicyBinding) uuid.UUID { return x.ID }), r.NextCursor
	})
	u := call(c.CreateUserWithResponse(ctx, models.UserCreate{Email: "pb@example.com"})).want(t, http.StatusCreated).JSON201
	call(c.CreatePolicyBindingWithResponse(ctx, models.PolicyBindingCreate{ProjectID: p.ID, PolicyID: pol.ID, ServiceAccountID: &sas[0], UserID: &u.ID})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "user_id")
	call(c.CreatePolicyBindingWithResponse(ctx, models.PolicyBindingCreate{ProjectID: p.ID, PolicyID: pol.ID})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "service_account_id")
	qsa := call(c.ListServiceAccountsWithResponse(ctx, &models.ListServiceAccountsParams{ProjectID: &q.ID})).want(t, http.StatusOK).JSON200.Items[0]
	call(c.CreatePolicyBindingWithResponse(ctx, models.PolicyBindingCreate{ProjectID: p.ID, PolicyID: pol.ID, ServiceAccountID: &qsa.ID})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "service_account_id")
	pu := call(c.UpdatePolicyBindingWithResponse(ctx, pbs[0], models.PolicyBindingUpdate{UserID: &u.ID, Position: ptr[int32](9)})).want(t, http.StatusOK).JSON200
	if pu.UserID == nil || *pu.UserID != u.ID || pu.ServiceAccountID != nil || pu.Position != 9 {
		t.Errorf("policy binding update = %+v", pu)
	}
	if g := call(c.GetPolicyBindingWithResponse(ctx, pbs[0])).want(t, http.StatusOK).JSON200; g.UserID == nil {
		t.Errorf("policy binding get = %+v", g)
	}
	call(c.DeletePolicyBindingWithResponse(ctx, pbs[0])).want(t, http.StatusNoContent)
	call(c.GetPolicyBindingWithResponse(ctx, pbs[0])).wantErr(t, http.StatusNotFound, "not_found", "")

	call(c.DeleteServiceAccountWithResponse(ctx, sas[1])).want(t, http.StatusNoContent)
	call(c.GetServiceAccountWithResponse(ctx, sas[1])).wantErr(t, http.StatusNotFound, "not_found", "")
	// Its policy binding went with it.
	call(c.GetPolicyBindingWithResponse(ctx, pbs[1])).wantErr(t, http.StatusNotFound, "not_found", "")
}

func TestUsersGroupsAndRoleBindings_CRUDAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	var users []uuid.UUID
	for i := range 5 {
		u := call(c.CreateUserWithResponse(ctx, models.UserCreate{Email: models.Email(fmt.Sprintf("u%d@example.com", i)), Name: ptr(fmt.Sprint("U", i))})).
			want(t, http.StatusCreated).JSON201
		if u.HasPassword || u.Disabled {
			t.Errorf("new user = %+v", u)
		}
		users = append(users, u.ID)
	}
	wantPages(t, "users", users, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListUsersWithResponse(ctx, &models.ListUsersParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(u models.User) uuid.UUID { return u.ID }), r.NextCursor
	})
	if r := call(c.ListUsersWithResponse(ctx, &models.ListUsersParams{Email: ptr("u3@example.com")})).want(t, http.StatusOK).JSON200; len(r.Items) != 1 || r.Items[0].ID != users[3] {
		t.Errorf("users by email = %+v", r.Items)
	}
	uu := call(c.UpdateUserWithResponse(ctx, users[0], models.UserUpdate{Password: ptr("a-new-password"), Name: ptr("Ada")})).want(t, http.StatusOK).JSON200
	if !uu.HasPassword || uu.Name != "Ada" {
		t.Errorf("user update = %+v", uu)
	}
	if g := call(c.GetUserWithResponse(ctx, users[0])).want(t, http.StatusOK).JSON200; g.Email != "u0@example.com" || !g.HasPassword {
		t.Errorf("user get = %+v", g)
	}
	call(c.CreateUserWithResponse(ctx, models.UserCreate{Email: "U1@Example.com"})).wantErr(t, http.StatusConflict, "conflict", "email")
	call(c.CreateUserWithResponse(ctx, models.UserCreate{Email: "short@example.com", Password: ptr("short")})).wantErr(t, http.StatusBadRequest, "invalid_request", "password")

	var groups []uuid.UUID
	for i := range 5 {
		g := call(c.CreateGroupWithResponse(ctx, models.GroupCreate{Slug: fmt.Sprintf("g-%d", i)})).want(t, http.StatusCreated).JSON201
		groups = append(groups, g.ID)
	}
	wantPages(t, "groups", groups, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListGroupsWithResponse(ctx, &models.ListGroupsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(g models.Group) uuid.UUID { return g.ID }), r.NextCursor
	})
	gu := call(c.UpdateGroupWithResponse(ctx, groups[0], models.GroupUpdate{Name: ptr("Ops")})).want(t, http.StatusOK).JSON200
	if gu.Name != "Ops" {
		t.Errorf("group update = %+v", gu)
	}
	if g := call(c.GetGroupWithResponse(ctx, groups[0])).want(t, http.StatusOK).JSON200; g.Slug != "g-0" || g.Name != "Ops" {
		t.Errorf("group get = %+v", g)
	}
	call(c.CreateGroupWithResponse(ctx, models.GroupCreate{Slug: "g-1"})).wantErr(t, http.StatusConflict, "conflict", "slug")
	for _, u := range users {
		call(c.CreateGroupMemberWithResponse(ctx, groups[0], models.GroupMemberCreate{UserID: u})).want(t, http.StatusCreated)
	}
	wantPages(t, "members", users, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListGroupMembersWithResponse(ctx, groups[0], &models.ListGroupMembersParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(m models.GroupMember) uuid.UUID { return m.UserID }), r.NextCursor
	})
	call(c.CreateGroupMemberWithResponse(ctx, groups[0], models.GroupMemberCreate{UserID: users[0]})).wantErr(t, http.StatusConflict, "conflict", "user_id")
	call(c.CreateGroupMemberWithResponse(ctx, groups[0], models.GroupMemberCreate{UserID: uuid.New()})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "user_id")
	call(c.DeleteGroupMemberWithResponse(ctx, groups[0], users[0])).want(t, http.StatusNoContent)
	call(c.DeleteGroupMemberWithResponse(ctx, groups[0], users[0])).wantErr(t, http.StatusNotFound, "not_found", "")

	tm := b.team("t")
	p := b.project(tm.ID, "p")
	var rbs []uuid.UUID
	for i, u := range users {
		scope := models.RoleBindingCreate{Role: models.RoleViewer, UserID: &u}
		switch i % 3 {
		case 1:
			scope.TeamID = &tm.ID
		case 2:
			scope.ProjectID = &p.ID
		}
		rbs = append(rbs, call(c.CreateRoleBindingWithResponse(ctx, scope)).want(t, http.StatusCreated).JSON201.ID)
	}
	wantPages(t, "role bindings", rbs, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListRoleBindingsWithResponse(ctx, &models.ListRoleBindingsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(x models.RoleBinding) uuid.UUID { return x.ID }), r.NextCursor
	})
	if r := call(c.ListRoleBindingsWithResponse(ctx, &models.ListRoleBindingsParams{TeamID: &tm.ID})).want(t, http.StatusOK).JSON200; len(r.Items) != 2 {
		t.Errorf("role bindings of the team = %d, want 2", len(r.Items))
	}
	call(c.CreateRoleBindingWithResponse(ctx, models.RoleBindingCreate{Role: models.RoleViewer, UserID: &users[0]})).wantErr(t, http.StatusConflict, "conflict", "")
	call(c.CreateRoleBindingWithResponse(ctx, models.RoleBindingCreate{Role: models.RoleViewer, UserID: &users[0], GroupID: &groups[0]})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "group_id")
	call(c.CreateRoleBindingWithResponse(ctx, models.RoleBindingCreate{Role: models.RoleViewer, UserID: &users[0], TeamID: &tm.ID, ProjectID: &p.ID})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "project_id")
	call(c.CreateRoleBindingWithResponse(ctx, models.RoleBindingCreate{Role: models.RoleViewer, GroupID: &groups[1], ProjectID: ptr(uuid.New())})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "project_id")
	ru := call(c.UpdateRoleBindingWithResponse(ctx, rbs[0], models.RoleBindingUpdate{Role: ptr(models.RoleDeveloper)})).want(t, http.StatusOK).JSON200
	if ru.Role != models.RoleDeveloper {
		t.Errorf("role binding update = %+v", ru)
	}
	if g := call(c.GetRoleBindingWithResponse(ctx, rbs[0])).want(t, http.StatusOK).JSON200; g.Role != models.RoleDeveloper {
		t.Errorf("role binding get = %+v", g)
	}
	call(c.DeleteRoleBindingWithResponse(ctx, rbs[0])).want(t, http.StatusNoContent)
	call(c.GetRoleBindingWithResponse(ctx, rbs[0])).wantErr(t, http.StatusNotFound, "not_found", "")

	call(c.DeleteGroupWithResponse(ctx, groups[0])).want(t, http.StatusNoContent)
	call(c.GetGroupWithResponse(ctx, groups[0])).wantErr(t, http.StatusNotFound, "not_found", "")
	call(c.DeleteUserWithResponse(ctx, users[1])).want(t, http.StatusNoContent)
	call(c.GetUserWithResponse(ctx, users[1])).wantErr(t, http.StatusNotFound, "not_found", "")
	// Its role binding went with it.
	call(c.GetRoleBindingWithResponse(ctx, rbs[1])).wantErr(t, http.StatusNotFound, "not_found", "")
}

func TestBudgets_CRUDAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	tm := b.team("t")
	p := b.project(tm.ID, "p")
	sa := b.serviceAccount(p.ID, "sa")
	key := call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: p.ID, ServiceAccountID: &sa.ID})).want(t, http.StatusCreated).JSON201.RelayKey
	var budgets []uuid.UUID
	for i, in := range []models.BudgetCreate{
		{TeamID: &tm.ID, Period: models.PeriodMonth, Amount: 1},
		{ProjectID: &p.ID, Period: models.PeriodDay, Amount: 2},
		{RelayKeyID: &key.ID, Period: models.PeriodDay, Amount: 3},
		{ProjectID: &p.ID, Period: models.PeriodMonth, Amount: 4},
		{TeamID: &tm.ID, Period: models.PeriodDay, Amount: 5},
	} {
		r := call(c.CreateBudgetWithResponse(ctx, in)).want(t, http.StatusCreated).JSON201
		if r.Amount != int64(i+1) {
			t.Errorf("budget %d = %+v", i, r)
		}
		budgets = append(budgets, r.ID)
	}
	wantPages(t, "budgets", budgets, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListBudgetsWithResponse(ctx, &models.ListBudgetsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(x models.Budget) uuid.UUID { return x.ID }), r.NextCursor
	})
	if r := call(c.ListBudgetsWithResponse(ctx, &models.ListBudgetsParams{ProjectID: &p.ID})).want(t, http.StatusOK).JSON200; len(r.Items) != 2 {
		t.Errorf("budgets of the project = %d, want 2", len(r.Items))
	}
	bu := call(c.UpdateBudgetWithResponse(ctx, budgets[0], models.BudgetUpdate{Amount: ptr[int64](100), Period: ptr(models.PeriodDay)})).want(t, http.StatusOK).JSON200
	if bu.Amount != 100 || bu.Period != models.PeriodDay || bu.TeamID == nil {
		t.Errorf("budget update = %+v", bu)
	}
	if g := call(c.GetBudgetWithResponse(ctx, budgets[0])).want(t, http.StatusOK).JSON200; g.Amount != 100 {
		t.Errorf("budget get = %+v", g)
	}
	call(c.CreateBudgetWithResponse(ctx, models.BudgetCreate{TeamID: &tm.ID, ProjectID: &p.ID, Period: models.PeriodDay, Amount: 1})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "team_id")
	call(c.CreateBudgetWithResponse(ctx, models.BudgetCreate{RelayKeyID: ptr(uuid.New()), Period: models.PeriodDay, Amount: 1})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "relay_key_id")
	call(c.CreateBudgetWithResponse(ctx, models.BudgetCreate{TeamID: &tm.ID, Period: models.PeriodDay, Amount: 0})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "amount")
	call(c.DeleteBudgetWithResponse(ctx, budgets[0])).want(t, http.StatusNoContent)
	call(c.GetBudgetWithResponse(ctx, budgets[0])).wantErr(t, http.StatusNotFound, "not_found", "")
}
