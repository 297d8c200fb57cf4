package ui

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/rbac"
	gen "github.com/relay-llm/relay/openapi/controlgen"
	relaynull "github.com/relay-llm/relay/openapi/nullable"
)

// Tenancy: teams, projects, service accounts, relay keys, policy bindings,
// budgets; and the directory: users, groups, role bindings. Who may change
// them depends on where their role bindings are; a form is offered to those
// who hold the verb somewhere, and the API decides for the row at hand.

func (h *Handler) teamKind() *kind {
	k := &kind{slug: "teams", search: "slug or name", title: "Teams", one: "team", write: manageSystem,
		columns: []column{{Title: "Slug"}, {Title: "Name"}, {Title: "Created"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		var l gen.ListTeams200JSONResponse
		if term != "" {
			items, next, err := h.api.SearchTeams(p.ctx, term, limit, cursor)
			if err != nil {
				return nil, nil, err
			}
			l.Items, l.NextCursor = items, next
		} else {
			resp, err := h.api.ListTeams(p.ctx, gen.ListTeamsRequestObject{Params: gen.ListTeamsParams{Limit: &limit, Cursor: cursor}})
			if err != nil {
				return nil, nil, err
			}
			l = resp.(gen.ListTeams200JSONResponse)
		}
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: x.Name}, {Text: x.CreatedAt.UTC().Format("2006-01-02")}}}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, _ bool) ([]field, error) {
		return []field{{Name: "slug", Label: "Slug", Kind: "text", Value: v.str("slug"), Required: true}, text("name", "Name", v.str("name"))}, nil
	}
	k.create = func(p *page, v *vals) error {
		b := gen.TeamCreate{Slug: v.str("slug"), Name: v.optStr("name")}
		if err := p.check(h, http.MethodPost, "/api/teams", b); err != nil {
			return err
		}
		_, err := h.api.CreateTeam(p.ctx, gen.CreateTeamRequestObject{Body: &b})
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		resp, err := h.api.GetTeam(p.ctx, gen.GetTeamRequestObject{ID: id})
		if err != nil {
			return nil, err
		}
		x := resp.(gen.GetTeam200JSONResponse)
		return url.Values{"slug": {x.Slug}, "name": {x.Name}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name := v.str("slug"), v.str("name")
		b := gen.TeamUpdate{Slug: &slug, Name: &name}
		if err := p.check(h, http.MethodPatch, "/api/teams/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.api.UpdateTeam(p.ctx, gen.UpdateTeamRequestObject{ID: id, Body: &b})
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		_, err := h.api.DeleteTeam(p.ctx, gen.DeleteTeamRequestObject{ID: id})
		return err
	}
	return k
}

func (h *Handler) projectKind() *kind {
	k := &kind{slug: "projects", search: "slug or name", title: "Projects", one: "project",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.ManageTeam) },
		columns: []column{{Title: "Slug"}, {Title: "Name"}, {Title: "Team"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		var l gen.ListProjects200JSONResponse
		if term != "" {
			items, next, err := h.api.SearchProjects(p.ctx, term, limit, cursor)
			if err != nil {
				return nil, nil, err
			}
			l.Items, l.NextCursor = items, next
		} else {
			resp, err := h.api.ListProjects(p.ctx, gen.ListProjectsRequestObject{Params: gen.ListProjectsParams{Limit: &limit, Cursor: cursor}})
			if err != nil {
				return nil, nil, err
			}
			l = resp.(gen.ListProjects200JSONResponse)
		}
		teams := labels(h.teamOptions(p))
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: x.Name}, {Text: teams.of(x.TeamID), Mono: true}}}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, _ bool) ([]field, error) {
		return []field{
			selectOf("team_id", "Team", v.str("team_id"), withNone("Choose a team", h.teamOptions(p))),
			{Name: "slug", Label: "Slug", Kind: "text", Value: v.str("slug"), Required: true}, text("name", "Name", v.str("name")),
		}, nil
	}
	k.create = func(p *page, v *vals) error {
		b := gen.ProjectCreate{TeamID: v.id("team_id", "team"), Slug: v.str("slug"), Name: v.optStr("name")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/projects", b); err != nil {
			return err
		}
		_, err := h.api.CreateProject(p.ctx, gen.CreateProjectRequestObject{Body: &b})
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		resp, err := h.api.GetProject(p.ctx, gen.GetProjectRequestObject{ID: id})
		if err != nil {
			return nil, err
		}
		x := resp.(gen.GetProject200JSONResponse)
		return url.Values{"slug": {x.Slug}, "name": {x.Name}, "team_id": {x.TeamID.String()}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name := v.str("slug"), v.str("name")
		b := gen.ProjectUpdate{Slug: &slug, Name: &name, TeamID: v.optID("team_id")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/projects/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.api.UpdateProject(p.ctx, gen.UpdateProjectRequestObject{ID: id, Body: &b})
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		_, err := h.api.DeleteProject(p.ctx, gen.DeleteProjectRequestObject{ID: id})
		return err
	}
	return k
}

func (h *Handler) serviceAccountKind() *kind {
	k := &kind{slug: "service-accounts", search: "slug or name", title: "Service accounts", one: "service account",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.ManageProject) },
		columns: []column{{Title: "Slug"}, {Title: "Name"}, {Title: "Project"}, {Title: "Policy"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		var l gen.ListServiceAccounts200JSONResponse
		if term != "" {
			items, next, err := h.api.SearchServiceAccounts(p.ctx, term, limit, cursor)
			if err != nil {
				return nil, nil, err
			}
			l.Items, l.NextCursor = items, next
		} else {
			resp, err := h.api.ListServiceAccounts(p.ctx, gen.ListServiceAccountsRequestObject{Params: gen.ListServiceAccountsParams{Limit: &limit, Cursor: cursor}})
			if err != nil {
				return nil, nil, err
			}
			l = resp.(gen.ListServiceAccounts200JSONResponse)
		}
		projects, policies := labels(h.projectOptions(p)), labels(h.policyOptions(p))
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			pol := "—"
			if x.PolicyID != nil {
				pol = policies.of(*x.PolicyID)
			}
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: x.Name}, {Text: projects.of(x.ProjectID), Mono: true}, {Text: pol, Mono: true}}}
		}
		return rows, l.NextCursor, nil
	}
	k.fields = func(p *page, v *vals, editing bool) ([]field, error) {
		fs := []field{}
		if !editing {
			fs = append(fs, selectOf("project_id", "Project", v.str("project_id"), withNone("Choose a project", h.projectOptions(p))))
		}
		return append(fs, field{Name: "slug", Label: "Slug", Kind: "text", Value: v.str("slug"), Required: true}, text("name", "Name", v.str("name")),
			selectOf("policy_id", "Policy", v.str("policy_id"), withNone("None (the project's policy bindings decide)", h.policyOptions(p)))), nil
	}
	k.create = func(p *page, v *vals) error {
		b := gen.ServiceAccountCreate{ProjectID: v.id("project_id", "project"), Slug: v.str("slug"), Name: v.optStr("name"), PolicyID: v.optID("policy_id")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/service-accounts", b); err != nil {
			return err
		}
		_, err := h.api.CreateServiceAccount(p.ctx, gen.CreateServiceAccountRequestObject{Body: &b})
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		resp, err := h.api.GetServiceAccount(p.ctx, gen.GetServiceAccountRequestObject{ID: id})
		if err != nil {
			return nil, err
		}
		x := resp.(gen.GetServiceAccount200JSONResponse)
		return url.Values{"slug": {x.Slug}, "name": {x.Name}, "policy_id": {idStr(x.PolicyID)}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name := v.str("slug"), v.str("name")
		b := gen.ServiceAccountUpdate{Slug: &slug, Name: &name, PolicyID: relaynull.FromPointer(v.optID("policy_id"))}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/service-accounts/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.api.UpdateServiceAccount(p.ctx, gen.UpdateServiceAccountRequestObject{ID: id, Body: &b})
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		_, err := h.api.DeleteServiceAccount(p.ctx, gen.DeleteServiceAccountRequestObject{ID: id})
		return err
	}
	return k
}

func (h *Handler) policyBindingKind() *kind {
	k := &kind{slug: "policy-bindings", title: "Policy bindings", one: "policy binding",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.ManageProject) },
		columns: []column{{Title: "Project"}, {Title: "Subject"}, {Title: "Policy"}, {Title: "Order", Num: true}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		resp, err := h.api.ListPolicyBindings(p.ctx, gen.ListPolicyBindingsRequestObject{Params: gen.ListPolicyBindingsParams{Limit: &limit, Cursor: cursor}})
		if err != nil {
			return nil, nil, err
		}
		l := resp.(gen.ListPolicyBindings200JSONResponse)
		projects, policies := labels(h.projectOptions(p)), labels(h.policyOptions(p))
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: projects.of(x.ProjectID), Mono: true}, {Text: subject(x.ServiceAccountID, x.UserID, x.GroupID), Mono: true},
				{Text: policies.of(x.PolicyID), Mono: true}, {Text: strconv.Itoa(int(x.Position)), Num: true}}}
		}
		return rows, l.NextCursor, nil
	}
	k.remove = func(p *page, id uuid.UUID) error {
		_, err := h.api.DeletePolicyBinding(p.ctx, gen.DeletePolicyBindingRequestObject{ID: id})
		return err
	}
	return k
}

func subject(sa, user, group *uuid.UUID) string {
	switch {
	case sa != nil:
		return "service account " + short(*sa)
	case user != nil:
		return "user " + short(*user)
	case group != nil:
		return "group " + short(*group)
	}
	return "—"
}

func short(id uuid.UUID) string { return id.String()[:8] }

func (h *Handler) budgetKind() *kind {
	k := &kind{slug: "budgets", title: "Budgets", one: "budget",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.ManageProject) },
		columns: []column{{Title: "Applies to"}, {Title: "Period"}, {Title: "Amount", Num: true}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		resp, err := h.api.ListBudgets(p.ctx, gen.ListBudgetsRequestObject{Params: gen.ListBudgetsParams{Limit: &limit, Cursor: cursor}})
		if err != nil {
			return nil, nil, err
		}
		l := resp.(gen.ListBudgets200JSONResponse)
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			to := "—"
			switch {
			case x.RelayKeyID != nil:
				to = "relay key " + short(*x.RelayKeyID)
			case x.ProjectID != nil:
				to = "project " + short(*x.ProjectID)
			case x.TeamID != nil:
				to = "team " + short(*x.TeamID)
			}
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: to, Mono: true}, {Text: string(x.Period)}, {Text: price(x.Amount), Num: true}}}
		}
		return rows, l.NextCursor, nil
	}
	k.remove = func(p *page, id uuid.UUID) error {
		_, err := h.api.DeleteBudget(p.ctx, gen.DeleteBudgetRequestObject{ID: id})
		return err
	}
	return k
}

func (h *Handler) userKind() *kind {
	k := &kind{slug: "users", search: "email or name", title: "Users", one: "user", write: manageSystem,
		columns: []column{{Title: "Email"}, {Title: "Name"}, {Title: "Password"}, {Title: "State"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		var l gen.ListUsers200JSONResponse
		if term != "" {
			items, next, err := h.api.SearchUsers(p.ctx, term, limit, cursor)
			if err != nil {
				return nil, nil, err
			}
			l.Items, l.NextCursor = items, next
		} else {
			resp, err := h.api.ListUsers(p.ctx, gen.ListUsersRequestObject{Params: gen.ListUsersParams{Limit: &limit, Cursor: cursor}})
			if err != nil {
				return nil, nil, err
			}
			l = resp.(gen.ListUsers200JSONResponse)
		}
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			pw := "not set"
			if x.HasPassword {
				pw = "set"
			}
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: string(x.Email)}, {Text: x.Name}, {Text: pw}, enabled(!x.Disabled)}}
		}
		return rows, l.NextCursor, nil
	}
	return k
}

func (h *Handler) groupKind() *kind {
	k := &kind{slug: "groups", title: "Groups", one: "group", write: manageSystem,
		columns: []column{{Title: "Slug"}, {Title: "Name"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		resp, err := h.api.ListGroups(p.ctx, gen.ListGroupsRequestObject{Params: gen.ListGroupsParams{Limit: &limit, Cursor: cursor}})
		if err != nil {
			return nil, nil, err
		}
		l := resp.(gen.ListGroups200JSONResponse)
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: x.Name}}}
		}
		return rows, l.NextCursor, nil
	}
	k.remove = func(p *page, id uuid.UUID) error {
		_, err := h.api.DeleteGroup(p.ctx, gen.DeleteGroupRequestObject{ID: id})
		return err
	}
	return k
}

func (h *Handler) roleBindingKind() *kind {
	k := &kind{slug: "role-bindings", title: "Role bindings", one: "role binding",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.ManageProject) },
		columns: []column{{Title: "Role"}, {Title: "Who"}, {Title: "Where"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		resp, err := h.api.ListRoleBindings(p.ctx, gen.ListRoleBindingsRequestObject{Params: gen.ListRoleBindingsParams{Limit: &limit, Cursor: cursor}})
		if err != nil {
			return nil, nil, err
		}
		l := resp.(gen.ListRoleBindings200JSONResponse)
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			where := "system"
			switch {
			case x.ProjectID != nil:
				where = "project " + short(*x.ProjectID)
			case x.TeamID != nil:
				where = "team " + short(*x.TeamID)
			}
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: string(x.Role)}, {Text: subject(nil, x.UserID, x.GroupID), Mono: true}, {Text: where, Mono: true}}}
		}
		return rows, l.NextCursor, nil
	}
	k.remove = func(p *page, id uuid.UUID) error {
		_, err := h.api.DeleteRoleBinding(p.ctx, gen.DeleteRoleBindingRequestObject{ID: id})
		return err
	}
	return k
}
