package rbac

import (
	"slices"
	"testing"

	"github.com/google/uuid"
)

var (
	teamA, teamB = uuid.New(), uuid.New()
	projA1       = uuid.New() // in team A
	projA2       = uuid.New() // in team A
	projB1       = uuid.New() // in team B

	sys = System()
	tA  = InTeam(teamA)
	tB  = InTeam(teamB)
	a1  = InProject(teamA, projA1)
	a2  = InProject(teamA, projA2)
	b1  = InProject(teamB, projB1)
)

func TestMatrix_RolesGrowMonotonically(t *testing.T) {
	t.Parallel()
	for i := 1; i < len(Roles); i++ {
		lo, hi := Matrix[Roles[i-1]], Matrix[Roles[i]]
		if lo&hi != lo || lo == hi {
			t.Errorf("%s (%s) is not a strict superset of %s (%s)", Roles[i], hi, Roles[i-1], lo)
		}
	}
	if !Role("admin").Valid() || Role("owner").Valid() {
		t.Error("Valid is wrong")
	}
}

func TestSubject_Can(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		grant Grant
		verb  Verb
		at    Scope
		want  bool
	}{
		{"viewer reads its project", Grant{Viewer, a1}, Read, a1, true},
		{"viewer does not read a sibling project", Grant{Viewer, a1}, Read, a2, false},
		{"viewer does not read its team's rows", Grant{Viewer, a1}, Read, tA, false},
		{"viewer reads the catalog from any scope", Grant{Viewer, b1}, ReadCatalog, sys, true},
		{"viewer cannot mint", Grant{Viewer, a1}, MintOwn, a1, false},
		{"developer mints in its project", Grant{Developer, a1}, MintOwn, a1, true},
		{"developer does not manage", Grant{Developer, a1}, ManageProject, a1, false},
		{"developer cannot read the directory", Grant{Developer, a1}, ReadDirectory, sys, false},
		{"project admin manages its project", Grant{ProjectAdmin, a1}, ManageProject, a1, true},
		{"project admin reads the directory", Grant{ProjectAdmin, a1}, ReadDirectory, sys, true},
		{"project admin does not manage the team", Grant{ProjectAdmin, a1}, ManageTeam, tA, false},
		{"project admin cannot reach another team", Grant{ProjectAdmin, a1}, Read, b1, false},
		{"team admin manages every project of the team", Grant{TeamAdmin, tA}, ManageProject, a2, true},
		{"team admin manages the team", Grant{TeamAdmin, tA}, ManageTeam, tA, true},
		{"team admin does not reach another team", Grant{TeamAdmin, tA}, Read, b1, false},
		{"team admin cannot write the catalog", Grant{TeamAdmin, tA}, ManageSystem, sys, false},
		{"admin bound to a project is a project admin there", Grant{Admin, a1}, ManageProject, a1, true},
		{"admin bound to a project gets no team verbs in it", Grant{Admin, a1}, ManageTeam, a1, false},
		{"admin bound to a team gets no system verbs in it", Grant{Admin, tA}, ManageSystem, tA, false},
		{"admin bound to a project cannot write the catalog", Grant{Admin, a1}, ManageSystem, sys, false},
		{"system admin writes the catalog", Grant{Admin, sys}, ManageSystem, sys, true},
		{"system viewer reads everything", Grant{Viewer, sys}, Read, b1, true},
		{"system viewer writes nothing", Grant{Viewer, sys}, ManageProject, b1, false},
		{"two verbs at once need both", Grant{Developer, a1}, Read | ManageProject, a1, false},
	}
	for _, tt := range cases {
		if got := ForUser(uuid.New(), []Grant{tt.grant}).Can(tt.verb, tt.at); got != tt.want {
			t.Errorf("%s: Can(%s, %s) = %v", tt.name, tt.verb, tt.at, got)
		}
	}
	if !Superuser().Can(ManageSystem|ManageProject, b1) {
		t.Error("the superuser cannot do everything")
	}
	if ForUser(uuid.New(), []Grant{{Role("owner"), sys}}).Can(Read, a1) {
		t.Error("an unknown role granted something")
	}
	if ForUser(uuid.New(), nil).Can(ReadCatalog, sys) {
		t.Error("a user without bindings reads the catalog")
	}
}

func TestSubject_CanSeeTeam(t *testing.T) {
	t.Parallel()
	s := ForUser(uuid.New(), []Grant{{Viewer, a1}})
	if !s.CanSeeTeam(teamA) || s.CanSeeTeam(teamB) {
		t.Error("a project member sees its team and no other")
	}
	if !ForUser(uuid.New(), []Grant{{TeamAdmin, tB}}).CanSeeTeam(teamB) {
		t.Error("a team admin does not see its team")
	}
}

func TestSubject_CanGrant(t *testing.T) {
	t.Parallel()
	padmin := ForUser(uuid.New(), []Grant{{ProjectAdmin, a1}})
	tadmin := ForUser(uuid.New(), []Grant{{TeamAdmin, tA}})
	dev := ForUser(uuid.New(), []Grant{{Developer, a1}})
	cases := []struct {
		name string
		s    *Subject
		role Role
		at   Scope
		want bool
	}{
		{"project admin grants developer in its project", padmin, Developer, a1, true},
		{"project admin grants project admin in its project", padmin, ProjectAdmin, a1, true},
		{"project admin granting admin on its project grants no more than it has", padmin, Admin, a1, true},
		{"project admin cannot grant on the team", padmin, Viewer, tA, false},
		{"project admin cannot grant in another project", padmin, Viewer, a2, false},
		{"project admin cannot grant system-wide", padmin, Viewer, sys, false},
		{"developer grants nothing", dev, Viewer, a1, false},
		{"team admin grants team admin on its team", tadmin, TeamAdmin, tA, true},
		{"team admin grants in its projects", tadmin, ProjectAdmin, a2, true},
		{"team admin cannot grant on another team", tadmin, Viewer, tB, false},
		{"team admin cannot grant system-wide", tadmin, Viewer, sys, false},
		{"superuser grants admin system-wide", Superuser(), Admin, sys, true},
		{"nobody grants an unknown role", Superuser(), Role("owner"), sys, false},
	}
	for _, tt := range cases {
		if got := tt.s.CanGrant(tt.role, tt.at); got != tt.want {
			t.Errorf("%s: CanGrant(%s, %s) = %v", tt.name, tt.role, tt.at, got)
		}
	}
}

func TestSubject_Reach(t *testing.T) {
	t.Parallel()
	s := ForUser(uuid.New(), []Grant{{Viewer, a1}, {ProjectAdmin, b1}, {TeamAdmin, tA}, {Developer, a1}})
	r := s.Reach(Read)
	if r.All || !slices.Equal(r.Teams, []uuid.UUID{teamA}) || len(r.Projects) != 2 || !slices.Contains(r.Projects, projA1) || !slices.Contains(r.Projects, projB1) {
		t.Errorf("Reach(Read) = %+v", r)
	}
	if r := s.Reach(ManageProject); r.All || len(r.Teams) != 1 || !slices.Equal(r.Projects, []uuid.UUID{projB1}) {
		t.Errorf("Reach(ManageProject) = %+v", r)
	}
	if r := s.Reach(ReadCatalog); !r.All {
		t.Errorf("Reach(ReadCatalog) = %+v, want all", r)
	}
	if r := ForUser(uuid.New(), []Grant{{Viewer, sys}}).Reach(Read); !r.All {
		t.Errorf("a system viewer's reach = %+v", r)
	}
	if r := ForUser(uuid.New(), []Grant{{Admin, a1}}).Reach(ManageTeam); r.All || len(r.Teams)+len(r.Projects) != 0 {
		t.Errorf("admin bound to a project reaches %+v with ManageTeam", r)
	}
	if r := Superuser().Reach(ManageSystem); !r.All {
		t.Errorf("superuser reach = %+v", r)
	}
}

func TestSubject_CanAttach(t *testing.T) {
	t.Parallel()
	inA1 := InProject(teamA, projA1)
	padmin := ForUser(uuid.New(), []Grant{{Role: ProjectAdmin, Scope: inA1}})
	tadmin := ForUser(uuid.New(), []Grant{{Role: TeamAdmin, Scope: InTeam(teamA)}})
	sysadmin := ForUser(uuid.New(), []Grant{{Role: Admin, Scope: System()}})
	for _, tc := range []struct {
		name   string
		s      *Subject
		owner  uuid.UUID
		shared bool
		want   bool
	}{
		{"own team's policy", padmin, teamA, false, true},
		{"another team's policy", padmin, teamB, false, false},
		{"another team's policy, even for a system admin", sysadmin, teamB, false, false},
		{"another team's policy, even shared", tadmin, teamB, true, false},
		{"system policy not shared", tadmin, uuid.Nil, false, false},
		{"system policy shared with the team", padmin, uuid.Nil, true, true},
		{"system policy, system admin", sysadmin, uuid.Nil, false, true},
		{"system policy, admin token", Superuser(), uuid.Nil, false, true},
	} {
		if got := tc.s.CanAttach(tc.owner, inA1, tc.shared); got != tc.want {
			t.Errorf("%s: CanAttach = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSubject_Teams(t *testing.T) {
	t.Parallel()
	s := ForUser(uuid.New(), []Grant{{Role: Viewer, Scope: InProject(teamA, uuid.New())}, {Role: TeamAdmin, Scope: InTeam(teamB)}})
	all, teams := s.Teams()
	if all || len(teams) != 2 || !slices.Contains(teams, teamA) || !slices.Contains(teams, teamB) {
		t.Errorf("Teams() = %v, %v; want teams A and B", all, teams)
	}
	if all, _ := ForUser(uuid.New(), []Grant{{Role: Viewer, Scope: System()}}).Teams(); !all {
		t.Error("a system viewer should see every team")
	}
}
