package ui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/rbac"
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
		l, err := listOrSearch(p, term, models.ListTeamsParams{Limit: &limit, Cursor: cursor}, h.svc.ListTeams, h.svc.SearchTeams)
		if err != nil {
			return nil, nil, err
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
		b := models.TeamCreate{Slug: v.str("slug"), Name: v.optStr("name")}
		if err := p.check(h, http.MethodPost, "/api/teams", b); err != nil {
			return err
		}
		_, err := h.svc.CreateTeam(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetTeam(p.ctx, id)
		if err != nil {
			return nil, err
		}
		return url.Values{"slug": {x.Slug}, "name": {x.Name}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name := v.str("slug"), v.str("name")
		b := models.TeamUpdate{Slug: &slug, Name: &name}
		if err := p.check(h, http.MethodPatch, "/api/teams/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateTeam(p.ctx, id, &b)
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteTeam(p.ctx, id)
		return err
	}
	return k
}

func (h *Handler) projectKind() *kind {
	k := &kind{slug: "projects", search: "slug or name", title: "Projects", one: "project",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.ManageTeam) },
		columns: []column{{Title: "Slug"}, {Title: "Name"}, {Title: "Team"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := listOrSearch(p, term, models.ListProjectsParams{Limit: &limit, Cursor: cursor}, h.svc.ListProjects, h.svc.SearchProjects)
		if err != nil {
			return nil, nil, err
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
		b := models.ProjectCreate{TeamID: v.id("team_id", "team"), Slug: v.str("slug"), Name: v.optStr("name")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/projects", b); err != nil {
			return err
		}
		_, err := h.svc.CreateProject(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetProject(p.ctx, id)
		if err != nil {
			return nil, err
		}
		return url.Values{"slug": {x.Slug}, "name": {x.Name}, "team_id": {x.TeamID.String()}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name := v.str("slug"), v.str("name")
		b := models.ProjectUpdate{Slug: &slug, Name: &name, TeamID: v.optID("team_id")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/projects/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateProject(p.ctx, id, &b)
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteProject(p.ctx, id)
		return err
	}
	return k
}

func (h *Handler) serviceAccountKind() *kind {
	k := &kind{slug: "service-accounts", search: "slug or name", title: "Service accounts", one: "service account",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.ManageProject) },
		columns: []column{{Title: "Slug"}, {Title: "Name"}, {Title: "Project"}, {Title: "Policy"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := listOrSearch(p, term, models.ListServiceAccountsParams{Limit: &limit, Cursor: cursor}, h.svc.ListServiceAccounts, h.svc.SearchServiceAccounts)
		if err != nil {
			return nil, nil, err
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
		b := models.ServiceAccountCreate{ProjectID: v.id("project_id", "project"), Slug: v.str("slug"), Name: v.optStr("name"), PolicyID: v.optID("policy_id")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/service-accounts", b); err != nil {
			return err
		}
		_, err := h.svc.CreateServiceAccount(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetServiceAccount(p.ctx, id)
		if err != nil {
			return nil, err
		}
		return url.Values{"slug": {x.Slug}, "name": {x.Name}, "policy_id": {idStr(x.PolicyID)}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name := v.str("slug"), v.str("name")
		b := models.ServiceAccountUpdate{Slug: &slug, Name: &name, PolicyID: relaynull.FromPointer(v.optID("policy_id"))}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/service-accounts/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateServiceAccount(p.ctx, id, &b)
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteServiceAccount(p.ctx, id)
		return err
	}
	return k
}

func (h *Handler) policyBindingKind() *kind {
	k := &kind{slug: "policy-bindings", title: "Policy bindings", one: "policy binding",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.ManageProject) },
		columns: []column{{Title: "Project"}, {Title: "Subject"}, {Title: "Policy"}, {Title: "Order", Num: true}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := h.svc.ListPolicyBindings(p.ctx, models.ListPolicyBindingsParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		projects, policies := labels(h.projectOptions(p)), labels(h.policyOptions(p))
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: projects.of(x.ProjectID), Mono: true}, {Text: subject(x.ServiceAccountID, x.UserID, x.GroupID), Mono: true},
				{Text: policies.of(x.PolicyID), Mono: true}, {Text: strconv.Itoa(int(x.Position)), Num: true}}}
		}
		return rows, l.NextCursor, nil
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeletePolicyBinding(p.ctx, id)
		return err
	}
	h.policyBindingForm(k)
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
		l, err := h.svc.ListBudgets(p.ctx, models.ListBudgetsParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
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
		err := h.svc.DeleteBudget(p.ctx, id)
		return err
	}
	h.budgetForm(k)
	return k
}

func (h *Handler) userKind() *kind {
	k := &kind{slug: "users", search: "email or name", title: "Users", one: "user", write: manageSystem,
		columns: []column{{Title: "Email"}, {Title: "Name"}, {Title: "Password"}, {Title: "State"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := listOrSearch(p, term, models.ListUsersParams{Limit: &limit, Cursor: cursor}, h.svc.ListUsers, h.svc.SearchUsers)
		if err != nil {
			return nil, nil, err
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
	h.userForm(k)
	return k
}

func (h *Handler) groupKind() *kind {
	k := &kind{slug: "groups", title: "Groups", one: "group", write: manageSystem,
		columns: []column{{Title: "Slug"}, {Title: "Name"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := h.svc.ListGroups(p.ctx, models.ListGroupsParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		rows := make([]row, len(l.Items))
		for i, x := range l.Items {
			rows[i] = row{ID: x.ID.String(), Cells: []cell{{Text: x.Slug, Mono: true}, {Text: x.Name}}}
		}
		return rows, l.NextCursor, nil
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteGroup(p.ctx, id)
		return err
	}
	h.groupForm(k)
	return k
}

func (h *Handler) roleBindingKind() *kind {
	k := &kind{slug: "role-bindings", title: "Role bindings", one: "role binding",
		write:   func(p *controlapi.Principal) bool { return p.CanAnywhere(rbac.ManageProject) },
		columns: []column{{Title: "Role"}, {Title: "Who"}, {Title: "Where"}}}
	k.list = func(p *page, term string, limit int32, cursor *string) ([]row, *string, error) {
		l, err := h.svc.ListRoleBindings(p.ctx, models.ListRoleBindingsParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
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
		err := h.svc.DeleteRoleBinding(p.ctx, id)
		return err
	}
	h.roleBindingForm(k)
	return k
}

func (h *Handler) userOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListUsers(p.ctx, models.ListUsersParams{Limit: &l})
	return options(resp.Items, err, func(x models.User) option { return option{Value: x.ID.String(), Label: string(x.Email)} })
}

func (h *Handler) groupOptions(p *page) []option {
	l := optionLimit
	resp, err := h.svc.ListGroups(p.ctx, models.ListGroupsParams{Limit: &l})
	return options(resp.Items, err, func(x models.Group) option { return option{Value: x.ID.String(), Label: x.Slug} })
}

// amount reads a required amount of currency ("100.00") as micro-units.
func (v *vals) amount(name string) int64 {
	if v.str(name) == "" {
		v.errs[name] = "enter an amount like 100.00"
		return 0
	}
	n := v.optPrice(name)
	if n == nil {
		v.errs[name] = "enter an amount like 100.00"
		return 0
	}
	return *n
}

func (h *Handler) budgetForm(k *kind) {
	k.fields = func(p *page, v *vals, editing bool) ([]field, error) {
		fs := []field{}
		if !editing {
			fs = append(fs,
				selectOf("team_id", "Team", v.str("team_id"), withNone("—", h.teamOptions(p))),
				selectOf("project_id", "Project", v.str("project_id"), withNone("—", h.projectOptions(p))),
				field{Name: "relay_key_id", Label: "Relay key id", Kind: "text", Value: v.str("relay_key_id"), Help: "Choose exactly one of a team, a project or a relay key."})
		}
		return append(fs,
			selectOf("period", "Period", v.str("period"), enumOptions("day", "month")),
			field{Name: "amount", Label: "Amount per period", Kind: "text", Value: v.str("amount"), Required: true, Help: "In currency units, for example 100.00."}), nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.BudgetCreate{TeamID: v.optID("team_id"), ProjectID: v.optID("project_id"), RelayKeyID: v.optID("relay_key_id"),
			Period: models.Period(v.str("period")), Amount: v.amount("amount")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/budgets", b); err != nil {
			return err
		}
		_, err := h.svc.CreateBudget(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetBudget(p.ctx, id)
		if err != nil {
			return nil, err
		}
		return url.Values{"period": {string(x.Period)}, "amount": {price(x.Amount)}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		period, amount := models.Period(v.str("period")), v.amount("amount")
		b := models.BudgetUpdate{Period: &period, Amount: &amount}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/budgets/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateBudget(p.ctx, id, &b)
		return err
	}
}

// subjectFields are a binding's who: one of a service account (policy
// bindings only), a user or a group.
func (h *Handler) subjectFields(p *page, v *vals, serviceAccounts bool) []field {
	var fs []field
	if serviceAccounts {
		fs = append(fs, selectOf("service_account_id", "Service account", v.str("service_account_id"), withNone("—", h.serviceAccountOptions(p))))
	}
	return append(fs,
		selectOf("user_id", "User", v.str("user_id"), withNone("—", h.userOptions(p))),
		field{Kind: "select", Name: "group_id", Label: "Group", Help: "Choose exactly one subject.",
			Options: selectOf("group_id", "", v.str("group_id"), withNone("—", h.groupOptions(p))).Options})
}

func (h *Handler) policyBindingForm(k *kind) {
	k.fields = func(p *page, v *vals, editing bool) ([]field, error) {
		fs := []field{}
		if !editing {
			fs = append(fs, selectOf("project_id", "Project", v.str("project_id"), withNone("Choose a project", h.projectOptions(p))))
		}
		fs = append(fs, selectOf("policy_id", "Policy", v.str("policy_id"), withNone("Choose a policy", h.policyOptions(p))))
		fs = append(fs, h.subjectFields(p, v, true)...)
		return append(fs, field{Name: "position", Label: "Order", Kind: "number", Value: v.str("position"), Help: "Lower comes first when several bindings match."}), nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.PolicyBindingCreate{ProjectID: v.id("project_id", "project"), PolicyID: v.id("policy_id", "policy"),
			ServiceAccountID: v.optID("service_account_id"), UserID: v.optID("user_id"), GroupID: v.optID("group_id"), Position: v.optInt32("position")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/policy-bindings", b); err != nil {
			return err
		}
		_, err := h.svc.CreatePolicyBinding(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetPolicyBinding(p.ctx, id)
		if err != nil {
			return nil, err
		}
		return url.Values{"policy_id": {x.PolicyID.String()}, "service_account_id": {idStr(x.ServiceAccountID)}, "user_id": {idStr(x.UserID)},
			"group_id": {idStr(x.GroupID)}, "position": {strconv.Itoa(int(x.Position))}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		b := models.PolicyBindingUpdate{PolicyID: v.optID("policy_id"), ServiceAccountID: v.optID("service_account_id"), UserID: v.optID("user_id"),
			GroupID: v.optID("group_id"), Position: v.optInt32("position")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPatch, "/api/policy-bindings/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdatePolicyBinding(p.ctx, id, &b)
		return err
	}
}

func (h *Handler) userForm(k *kind) {
	k.fields = func(p *page, v *vals, editing bool) ([]field, error) {
		help := "At least 12 characters; leave it empty for a user who does not sign in with a password."
		if editing {
			help = "Leave it empty to keep the current password."
		}
		return []field{
			{Name: "email", Label: "Email", Kind: "email", Value: v.str("email"), Required: true},
			text("name", "Name", v.str("name")),
			{Name: "password", Label: "Password", Kind: "secret", Help: help},
			checkbox("disabled", "Disabled (cannot sign in; their keys and tokens stop working)", v.on("disabled")),
		}, nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.UserCreate{Email: v.email("email"), Name: v.optStr("name"), Disabled: v.onPtr("disabled")}
		if err := v.err(); err != nil {
			return err
		}
		if pw := v.Get("password"); pw != "" {
			b.Password = &pw
		}
		if err := p.check(h, http.MethodPost, "/api/users", b); err != nil {
			return err
		}
		_, err := h.svc.CreateUser(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetUser(p.ctx, id)
		if err != nil {
			return nil, err
		}
		return url.Values{"email": {string(x.Email)}, "name": {x.Name}, "disabled": {onOff(x.Disabled)}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		email, name := v.email("email"), v.str("name")
		b := models.UserUpdate{Email: &email, Name: &name, Disabled: v.onPtr("disabled")}
		if err := v.err(); err != nil {
			return err
		}
		if pw := v.Get("password"); pw != "" {
			b.Password = &pw
		}
		if err := p.check(h, http.MethodPatch, "/api/users/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateUser(p.ctx, id, &b)
		return err
	}
	k.remove = func(p *page, id uuid.UUID) error {
		err := h.svc.DeleteUser(p.ctx, id)
		return err
	}
}

// email reads an email address; one the API's type would not encode is a
// message on the field rather than an internal error.
func (v *vals) email(name string) models.Email {
	e := models.Email(v.str(name))
	if _, err := json.Marshal(e); err != nil {
		v.errs[name] = "enter an email address"
	}
	return e
}

func (h *Handler) groupForm(k *kind) {
	k.fields = func(p *page, v *vals, _ bool) ([]field, error) {
		return []field{
			{Name: "slug", Label: "Slug", Kind: "text", Value: v.str("slug"), Required: true}, text("name", "Name", v.str("name")),
			checklist("members", "Members", v.Values["members"], h.userOptions(p)),
		}, nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.GroupCreate{Slug: v.str("slug"), Name: v.optStr("name")}
		if err := p.check(h, http.MethodPost, "/api/groups", b); err != nil {
			return err
		}
		resp, err := h.svc.CreateGroup(p.ctx, &b)
		if err != nil {
			return err
		}
		return h.setMembers(p, uuid.UUID(resp.ID), v)
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		x, err := h.svc.GetGroup(p.ctx, id)
		if err != nil {
			return nil, err
		}
		members, err := h.members(p, id)
		if err != nil {
			return nil, err
		}
		out := url.Values{"slug": {x.Slug}, "name": {x.Name}}
		for m := range members {
			out.Add("members", m.String())
		}
		return out, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		slug, name := v.str("slug"), v.str("name")
		b := models.GroupUpdate{Slug: &slug, Name: &name}
		if err := p.check(h, http.MethodPatch, "/api/groups/"+id.String(), b); err != nil {
			return err
		}
		if _, err := h.svc.UpdateGroup(p.ctx, id, &b); err != nil {
			return err
		}
		return h.setMembers(p, id, v)
	}
}

// members is every member of a group.
func (h *Handler) members(p *page, id uuid.UUID) (map[uuid.UUID]bool, error) {
	out := map[uuid.UUID]bool{}
	l := optionLimit
	var cursor *string
	for {
		page, err := h.svc.ListGroupMembers(p.ctx, id, models.ListGroupMembersParams{Limit: &l, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, m := range page.Items {
			out[m.UserID] = true
		}
		if page.NextCursor == nil {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

// setMembers adds and removes members to match the checklist; users the
// checklist does not offer (past its first 500) are left as they are.
func (h *Handler) setMembers(p *page, id uuid.UUID, v *vals) error {
	have, err := h.members(p, id)
	if err != nil {
		return err
	}
	want := map[uuid.UUID]bool{}
	for _, u := range v.ids("members") {
		want[u] = true
	}
	for _, o := range h.userOptions(p) {
		u, err := uuid.Parse(o.Value)
		if err != nil {
			continue
		}
		switch {
		case want[u] && !have[u]:
			_, err = h.svc.CreateGroupMember(p.ctx, id, &models.GroupMemberCreate{UserID: u})
		case !want[u] && have[u]:
			err = h.svc.DeleteGroupMember(p.ctx, id, u)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (h *Handler) roleBindingForm(k *kind) {
	roles := enumOptions("viewer", "developer", "project_admin", "team_admin", "admin")
	k.fields = func(p *page, v *vals, editing bool) ([]field, error) {
		fs := []field{selectOf("role", "Role", v.str("role"), roles)}
		if editing {
			return fs, nil
		}
		fs = append(fs, h.subjectFields(p, v, false)...)
		return append(fs,
			selectOf("team_id", "Team", v.str("team_id"), withNone("—", h.teamOptions(p))),
			field{Kind: "select", Name: "project_id", Label: "Project", Help: "Neither team nor project: the role holds system-wide.",
				Options: selectOf("project_id", "", v.str("project_id"), withNone("—", h.projectOptions(p))).Options}), nil
	}
	k.create = func(p *page, v *vals) error {
		b := models.RoleBindingCreate{Role: models.Role(v.str("role")), UserID: v.optID("user_id"), GroupID: v.optID("group_id"),
			TeamID: v.optID("team_id"), ProjectID: v.optID("project_id")}
		if err := v.err(); err != nil {
			return err
		}
		if err := p.check(h, http.MethodPost, "/api/role-bindings", b); err != nil {
			return err
		}
		_, err := h.svc.CreateRoleBinding(p.ctx, &b)
		return err
	}
	k.load = func(p *page, id uuid.UUID) (url.Values, error) {
		resp, err := h.svc.GetRoleBinding(p.ctx, id)
		if err != nil {
			return nil, err
		}
		return url.Values{"role": {string(resp.Role)}}, nil
	}
	k.edit = func(p *page, id uuid.UUID, v *vals) error {
		role := models.Role(v.str("role"))
		b := models.RoleBindingUpdate{Role: &role}
		if err := p.check(h, http.MethodPatch, "/api/role-bindings/"+id.String(), b); err != nil {
			return err
		}
		_, err := h.svc.UpdateRoleBinding(p.ctx, id, &b)
		return err
	}
}
