package controlapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"
)

// status is the status of a generated client call (0 when it failed to send).
func status[R statusCoder](r R, err error) int {
	if err != nil {
		return 0
	}
	return r.StatusCode()
}

// subjects of the matrix, in the column order of the want arrays.
var subjectNames = []string{"nobody", "viewerA1", "devA1", "padminA1", "groupA1", "adminAtA1", "tadminA", "sysviewer", "admin"}

// world is two teams and three projects with a row of each project-scoped
// kind in every project, and one signed-in user per subject.
type world struct {
	teamA, teamB     models.Team
	a1, a2, b1       models.Project
	sa               map[uuid.UUID]models.ServiceAccount // by project
	key              map[uuid.UUID]models.RelayKey       // by project
	budgetA, budgetB models.Budget                       // team budgets
	budgetA1         models.Budget                       // project budget
	viewerBinding    models.RoleBinding                  // viewerA1's own
	host             models.Host
	hostKey          models.HostKey
	users            map[string]*session
	targets          map[string]models.User // a user per subject to grant roles to
}

func buildWorld(t *testing.T, b *bundle) *world {
	t.Helper()
	ctx, c := b.ctx, b.admin
	w := &world{sa: map[uuid.UUID]models.ServiceAccount{}, key: map[uuid.UUID]models.RelayKey{}, users: map[string]*session{}, targets: map[string]models.User{}}
	w.teamA, w.teamB = b.team("team-a"), b.team("team-b")
	w.a1, w.a2, w.b1 = b.project(w.teamA.ID, "a1"), b.project(w.teamA.ID, "a2"), b.project(w.teamB.ID, "b1")
	for _, p := range []models.Project{w.a1, w.a2, w.b1} {
		sa := b.serviceAccount(p.ID, "sa")
		w.sa[p.ID] = sa
		w.key[p.ID] = call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: p.ID, ServiceAccountID: &sa.ID})).want(t, http.StatusCreated).JSON201.RelayKey
	}
	w.budgetA = *call(c.CreateBudgetWithResponse(ctx, models.BudgetCreate{TeamID: &w.teamA.ID, Period: models.PeriodDay, Amount: 1})).want(t, http.StatusCreated).JSON201
	w.budgetB = *call(c.CreateBudgetWithResponse(ctx, models.BudgetCreate{TeamID: &w.teamB.ID, Period: models.PeriodDay, Amount: 1})).want(t, http.StatusCreated).JSON201
	w.budgetA1 = *call(c.CreateBudgetWithResponse(ctx, models.BudgetCreate{ProjectID: &w.a1.ID, Period: models.PeriodDay, Amount: 1})).want(t, http.StatusCreated).JSON201
	w.host = b.host("shared")
	w.hostKey = b.hostKey(w.host.ID, "shared")
	group := call(c.CreateGroupWithResponse(ctx, models.GroupCreate{Slug: "a1-admins"})).want(t, http.StatusCreated).JSON201
	call(c.CreateRoleBindingWithResponse(ctx, models.RoleBindingCreate{Role: models.RoleProjectAdmin, GroupID: &group.ID, ProjectID: &w.a1.ID})).want(t, http.StatusCreated)

	for _, name := range subjectNames {
		s := b.newUser(strings.ToLower(name))
		w.users[name] = s
		id := s.user.ID
		switch name {
		case "viewerA1":
			w.viewerBinding = b.grant(id, models.RoleViewer, nil, &w.a1.ID)
		case "devA1":
			b.grant(id, models.RoleDeveloper, nil, &w.a1.ID)
		case "padminA1":
			b.grant(id, models.RoleProjectAdmin, nil, &w.a1.ID)
		case "groupA1":
			call(c.CreateGroupMemberWithResponse(ctx, group.ID, models.GroupMemberCreate{UserID: id})).want(t, http.StatusCreated)
		case "adminAtA1":
			b.grant(id, models.RoleAdmin, nil, &w.a1.ID)
		case "tadminA":
			b.grant(id, models.RoleTeamAdmin, &w.teamA.ID, nil)
		case "sysviewer":
			b.grant(id, models.RoleViewer, nil, nil)
		case "admin":
			b.grant(id, models.RoleAdmin, nil, nil)
		}
		w.targets[name] = *call(c.CreateUserWithResponse(ctx, models.UserCreate{Email: models.Email("target-" + strings.ToLower(name) + "@example.com")})).
			want(t, http.StatusCreated).JSON201
	}
	return w
}

// TestRBAC_Matrix runs every subject through reads and writes on rows inside
// and outside its scope: a row it cannot see is 404, a visible row it may not
// change is 403, a body naming a project it cannot see is 422.
func TestRBAC_Matrix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	w := buildWorld(t, b)
	a1, a2, b1 := w.a1.ID, w.a2.ID, w.b1.ID

	type op struct {
		name string
		do   func(name string, s *session) int
		want [9]int // in subjectNames order
	}
	const (
		ok, created, gone  = http.StatusOK, http.StatusCreated, http.StatusNoContent
		no, hidden, unproc = http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity
	)
	listLen := func(n int, err error) int {
		if err != nil {
			return -1
		}
		return n
	}
	reads := []op{
		{"get service account in A1", func(_ string, s *session) int { return status(s.GetServiceAccountWithResponse(ctx, w.sa[a1].ID)) },
			[9]int{hidden, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"get service account in A2", func(_ string, s *session) int { return status(s.GetServiceAccountWithResponse(ctx, w.sa[a2].ID)) },
			[9]int{hidden, hidden, hidden, hidden, hidden, hidden, ok, ok, ok}},
		{"get service account in B1", func(_ string, s *session) int { return status(s.GetServiceAccountWithResponse(ctx, w.sa[b1].ID)) },
			[9]int{hidden, hidden, hidden, hidden, hidden, hidden, hidden, ok, ok}},
		{"get relay key in A1", func(_ string, s *session) int { return status(s.GetRelayKeyWithResponse(ctx, w.key[a1].ID)) },
			[9]int{hidden, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"get relay key in A2", func(_ string, s *session) int { return status(s.GetRelayKeyWithResponse(ctx, w.key[a2].ID)) },
			[9]int{hidden, hidden, hidden, hidden, hidden, hidden, ok, ok, ok}},
		{"get relay key in B1", func(_ string, s *session) int { return status(s.GetRelayKeyWithResponse(ctx, w.key[b1].ID)) },
			[9]int{hidden, hidden, hidden, hidden, hidden, hidden, hidden, ok, ok}},
		{"count relay keys listed", func(_ string, s *session) int {
			r, err := s.ListRelayKeysWithResponse(ctx, nil)
			return listLen(len(r.JSON200.Items), err)
		}, [9]int{0, 1, 1, 1, 1, 1, 2, 3, 3}},
		{"count service accounts listed in B1", func(_ string, s *session) int {
			r, err := s.ListServiceAccountsWithResponse(ctx, &models.ListServiceAccountsParams{ProjectID: &b1})
			return listLen(len(r.JSON200.Items), err)
		}, [9]int{0, 0, 0, 0, 0, 0, 0, 1, 1}},
		{"get project A1", func(_ string, s *session) int { return status(s.GetProjectWithResponse(ctx, a1)) },
			[9]int{hidden, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"count projects listed", func(_ string, s *session) int {
			r, err := s.ListProjectsWithResponse(ctx, nil)
			return listLen(len(r.JSON200.Items), err)
		}, [9]int{0, 1, 1, 1, 1, 1, 2, 3, 3}},
		{"get team A", func(_ string, s *session) int { return status(s.GetTeamWithResponse(ctx, w.teamA.ID)) },
			[9]int{hidden, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"get team B", func(_ string, s *session) int { return status(s.GetTeamWithResponse(ctx, w.teamB.ID)) },
			[9]int{hidden, hidden, hidden, hidden, hidden, hidden, hidden, ok, ok}},
		{"count teams listed", func(_ string, s *session) int {
			r, err := s.ListTeamsWithResponse(ctx, nil)
			return listLen(len(r.JSON200.Items), err)
		}, [9]int{0, 1, 1, 1, 1, 1, 1, 2, 2}},
		{"get team A budget", func(_ string, s *session) int { return status(s.GetBudgetWithResponse(ctx, w.budgetA.ID)) },
			[9]int{hidden, hidden, hidden, hidden, hidden, hidden, ok, ok, ok}},
		{"get project A1 budget", func(_ string, s *session) int { return status(s.GetBudgetWithResponse(ctx, w.budgetA1.ID)) },
			[9]int{hidden, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"count budgets listed", func(_ string, s *session) int {
			r, err := s.ListBudgetsWithResponse(ctx, nil)
			return listLen(len(r.JSON200.Items), err)
		}, [9]int{0, 1, 1, 1, 1, 1, 2, 3, 3}},
		{"get viewerA1's role binding", func(_ string, s *session) int { return status(s.GetRoleBindingWithResponse(ctx, w.viewerBinding.ID)) },
			[9]int{hidden, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"get host", func(_ string, s *session) int { return status(s.GetHostWithResponse(ctx, w.host.ID)) },
			[9]int{hidden, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"count hosts listed", func(_ string, s *session) int {
			r, err := s.ListHostsWithResponse(ctx, nil)
			return listLen(len(r.JSON200.Items), err)
		}, [9]int{0, 1, 1, 1, 1, 1, 1, 1, 1}},
		{"get host key", func(_ string, s *session) int { return status(s.GetHostKeyWithResponse(ctx, w.hostKey.ID)) },
			[9]int{hidden, hidden, hidden, hidden, hidden, hidden, hidden, ok, ok}},
		{"get another user", func(_ string, s *session) int { return status(s.GetUserWithResponse(ctx, w.targets["nobody"].ID)) },
			[9]int{hidden, hidden, hidden, ok, ok, ok, ok, ok, ok}},
		{"get oneself", func(_ string, s *session) int { return status(s.GetUserWithResponse(ctx, s.user.ID)) },
			[9]int{ok, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"status", func(_ string, s *session) int { return status(s.GetStatusWithResponse(ctx)) },
			[9]int{no, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"breakers", func(_ string, s *session) int { return status(s.ListBreakersWithResponse(ctx, nil)) },
			[9]int{no, no, no, no, no, no, no, ok, ok}},
	}
	writes := []op{
		{"rename service account in A1", func(n string, s *session) int {
			return status(s.UpdateServiceAccountWithResponse(ctx, w.sa[a1].ID, models.ServiceAccountUpdate{Name: ptr(n)}))
		}, [9]int{hidden, no, no, ok, ok, ok, ok, no, ok}},
		{"rename service account in B1", func(n string, s *session) int {
			return status(s.UpdateServiceAccountWithResponse(ctx, w.sa[b1].ID, models.ServiceAccountUpdate{Name: ptr(n)}))
		}, [9]int{hidden, hidden, hidden, hidden, hidden, hidden, hidden, no, ok}},
		{"create service account in A1", func(n string, s *session) int {
			return status(s.CreateServiceAccountWithResponse(ctx, models.ServiceAccountCreate{ProjectID: a1, Slug: "sa-" + strings.ToLower(n)}))
		}, [9]int{unproc, no, no, created, created, created, created, no, created}},
		{"mint own relay key in A1", func(_ string, s *session) int {
			return status(s.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: a1, UserID: &s.user.ID}))
		}, [9]int{unproc, no, created, created, created, created, created, no, created}},
		{"mint own relay key in A1 with a policy", func(_ string, s *session) int {
			return status(s.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: a1, UserID: &s.user.ID, PolicyID: ptr(uuid.New())}))
		}, [9]int{unproc, no, no, unproc, unproc, unproc, unproc, no, unproc}},
		{"mint service-account relay key in A1", func(_ string, s *session) int {
			sa := w.sa[a1].ID
			return status(s.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: a1, ServiceAccountID: &sa}))
		}, [9]int{unproc, no, no, created, created, created, created, no, created}},
		{"revoke service-account relay key in A2", func(_ string, s *session) int {
			return status(s.RevokeRelayKeyWithResponse(ctx, w.key[a2].ID))
		}, [9]int{hidden, hidden, hidden, hidden, hidden, hidden, ok, no, ok}},
		{"mint inference token in A1", func(_ string, s *session) int {
			return status(s.CreateInferenceTokenWithResponse(ctx, models.InferenceTokenCreate{ProjectID: a1}))
		}, [9]int{unproc, no, created, created, created, created, created, no, created}},
		{"mint inference token in B1", func(_ string, s *session) int {
			return status(s.CreateInferenceTokenWithResponse(ctx, models.InferenceTokenCreate{ProjectID: b1}))
		}, [9]int{unproc, unproc, unproc, unproc, unproc, unproc, unproc, no, created}},
		{"create project A1 budget", func(_ string, s *session) int {
			return status(s.CreateBudgetWithResponse(ctx, models.BudgetCreate{ProjectID: &a1, Period: models.PeriodMonth, Amount: 5}))
		}, [9]int{unproc, no, no, created, created, created, created, no, created}},
		{"create team A budget", func(_ string, s *session) int {
			return status(s.CreateBudgetWithResponse(ctx, models.BudgetCreate{TeamID: &w.teamA.ID, Period: models.PeriodMonth, Amount: 5}))
		}, [9]int{unproc, no, no, no, no, no, created, no, created}},
		{"change team B budget", func(_ string, s *session) int {
			return status(s.UpdateBudgetWithResponse(ctx, w.budgetB.ID, models.BudgetUpdate{Amount: ptr[int64](9)}))
		}, [9]int{hidden, hidden, hidden, hidden, hidden, hidden, hidden, no, ok}},
		{"rename project A1", func(n string, s *session) int {
			return status(s.UpdateProjectWithResponse(ctx, a1, models.ProjectUpdate{Name: ptr(n)}))
		}, [9]int{hidden, no, no, ok, ok, ok, ok, no, ok}},
		{"rename team A", func(n string, s *session) int {
			return status(s.UpdateTeamWithResponse(ctx, w.teamA.ID, models.TeamUpdate{Name: ptr(n)}))
		}, [9]int{hidden, no, no, no, no, no, ok, no, ok}},
		{"create project in team A", func(n string, s *session) int {
			return status(s.CreateProjectWithResponse(ctx, models.ProjectCreate{TeamID: w.teamA.ID, Slug: "p-" + strings.ToLower(n)}))
		}, [9]int{unproc, no, no, no, no, no, created, no, created}},
		{"create team", func(n string, s *session) int {
			return status(s.CreateTeamWithResponse(ctx, models.TeamCreate{Slug: "t-" + strings.ToLower(n)}))
		}, [9]int{no, no, no, no, no, no, no, no, created}},
		{"create host", func(n string, s *session) int {
			return status(s.CreateHostWithResponse(ctx, models.HostCreate{Slug: "h-" + strings.ToLower(n), Provider: models.ProviderCustom, BaseURL: "http://localhost"}))
		}, [9]int{no, no, no, no, no, no, no, no, created}},
		{"rename host", func(n string, s *session) int {
			return status(s.UpdateHostWithResponse(ctx, w.host.ID, models.HostUpdate{Name: ptr(n)}))
		}, [9]int{hidden, no, no, no, no, no, no, no, ok}},
		{"disable host key", func(_ string, s *session) int {
			return status(s.UpdateHostKeyWithResponse(ctx, w.hostKey.ID, models.HostKeyUpdate{Enabled: ptr(true)}))
		}, [9]int{hidden, hidden, hidden, hidden, hidden, hidden, hidden, no, ok}},
		{"create user", func(n string, s *session) int {
			return status(s.CreateUserWithResponse(ctx, models.UserCreate{Email: models.Email("new-" + strings.ToLower(n) + "@example.com")}))
		}, [9]int{no, no, no, no, no, no, no, no, created}},
		{"grant developer on A1", func(n string, s *session) int {
			u := w.targets[n].ID
			return status(s.CreateRoleBindingWithResponse(ctx, models.RoleBindingCreate{Role: models.RoleDeveloper, UserID: &u, ProjectID: &a1}))
		}, [9]int{unproc, no, no, created, created, created, created, no, created}},
		{"grant team_admin on A1 (more than project_admin holds)", func(n string, s *session) int {
			u := w.targets[n].ID
			return status(s.CreateRoleBindingWithResponse(ctx, models.RoleBindingCreate{Role: models.RoleTeamAdmin, UserID: &u, ProjectID: &a1}))
		}, [9]int{unproc, no, no, created, created, created, created, no, created}},
		{"grant team_admin on team A", func(n string, s *session) int {
			u := w.targets[n].ID
			return status(s.CreateRoleBindingWithResponse(ctx, models.RoleBindingCreate{Role: models.RoleTeamAdmin, UserID: &u, TeamID: &w.teamA.ID}))
		}, [9]int{unproc, no, no, no, no, no, created, no, created}},
		{"grant admin system-wide", func(n string, s *session) int {
			u := w.targets[n].ID
			return status(s.CreateRoleBindingWithResponse(ctx, models.RoleBindingCreate{Role: models.RoleAdmin, UserID: &u}))
		}, [9]int{no, no, no, no, no, no, no, no, created}},
		{"update viewerA1's role binding", func(_ string, s *session) int {
			return status(s.UpdateRoleBindingWithResponse(ctx, w.viewerBinding.ID, models.RoleBindingUpdate{Role: ptr(models.RoleViewer)}))
		}, [9]int{hidden, no, no, ok, ok, ok, ok, no, ok}},
		{"reload snapshot", func(_ string, s *session) int { return status(s.ReloadSnapshotWithResponse(ctx)) },
			[9]int{no, no, no, no, no, no, no, no, ok}},
	}
	run := func(ops []op) {
		for _, o := range ops {
			for i, name := range subjectNames {
				if got := o.do(name, w.users[name]); got != o.want[i] {
					t.Errorf("%s as %s: %d, want %d", o.name, name, got, o.want[i])
				}
			}
		}
	}
	run(reads)
	run(writes)

	// A developer manages its own relay keys, not others'.
	dev := w.users["devA1"]
	own := call(dev.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: a1, UserID: &dev.user.ID})).want(t, http.StatusCreated).JSON201.RelayKey
	call(dev.UpdateRelayKeyWithResponse(ctx, own.ID, models.RelayKeyUpdate{Name: ptr("mine")})).want(t, http.StatusOK)
	call(dev.UpdateRelayKeyWithResponse(ctx, own.ID, models.RelayKeyUpdate{Priority: nullableInt32(9)})).wantErr(t, http.StatusForbidden, "forbidden", "")
	call(dev.RotateRelayKeyWithResponse(ctx, own.ID, models.RelayKeyRotate{GraceSeconds: 60})).want(t, http.StatusCreated)
	call(dev.RevokeRelayKeyWithResponse(ctx, w.key[a1].ID)).wantErr(t, http.StatusForbidden, "forbidden", "")
	call(dev.DeleteRelayKeyWithResponse(ctx, own.ID)).want(t, http.StatusNoContent)
	other := w.users["padminA1"]
	theirs := call(other.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: a1, UserID: &other.user.ID})).want(t, http.StatusCreated).JSON201.RelayKey
	call(dev.DeleteRelayKeyWithResponse(ctx, theirs.ID)).wantErr(t, http.StatusForbidden, "forbidden", "")
	// A developer cannot mint for someone else.
	call(dev.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: a1, UserID: &other.user.ID})).wantErr(t, http.StatusForbidden, "forbidden", "")

	// whoami lists role bindings, group ones included.
	wg := call(w.users["groupA1"].WhoamiWithResponse(ctx)).want(t, http.StatusOK).JSON200
	if len(wg.RoleBindings) != 1 || wg.RoleBindings[0].Role != models.RoleProjectAdmin || wg.RoleBindings[0].GroupID == nil {
		t.Errorf("group member's whoami = %+v", wg.RoleBindings)
	}
	if t.Failed() {
		fmt.Println("subjects:", subjectNames)
	}
}
