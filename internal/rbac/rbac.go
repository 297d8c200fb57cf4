// Package rbac decides what a control-plane caller may do. It owns the verb
// matrix — which verbs each role grants — and the scope rule: a role binding
// at the system, a team or a project grants its role's verbs on the rows in
// that scope, a row's scope chain being project → team → system. It knows
// nothing of HTTP or of the store: the control API loads a caller's role
// bindings, builds a Subject and asks it.
//
// The verb matrix (X: granted; scope: where the binding must be):
//
//	verb           viewer developer project_admin team_admin admin   what it allows
//	Read             X       X          X            X        X      read tenancy rows in scope: teams, projects, service accounts,
//	                                                                 relay keys, policy bindings, budgets, role bindings; at system
//	                                                                 scope also host keys, users, groups and operations
//	ReadCatalog      X       X          X            X        X      read hosts, models, bindings, rate limits, policies (any scope)
//	MintOwn                  X          X            X        X      mint and manage one's own relay keys and inference tokens in a project
//	ReadDirectory                       X            X        X      read users and groups, to bind them (any scope)
//	ManageProject                       X            X        X      write inside a project: the project itself, service accounts,
//	                                                                 every relay key, policy bindings, budgets, project role bindings
//	ManageTeam                                       X        X      write the team, create and delete its projects, team budgets,
//	                                                                 team role bindings
//	ManageSystem                                              X      write the catalog (hosts, models, bindings, host keys, rate
//	                                                                 limits, policies), users, groups, teams, system role bindings;
//	                                                                 reload the snapshot
//
// A binding's scope caps its verbs: team_admin on team T manages T and its
// projects and nothing else; admin bound to a project is project_admin there
// (the system-wide verbs need a system-wide binding). ReadCatalog and
// ReadDirectory are "anywhere" verbs: the rows they read are shared by every
// project, so a binding at any scope grants them.
package rbac

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Role is one of the schema's role_bindings.role values.
type Role string

// The roles, from least to most.
const (
	Viewer       Role = "viewer"
	Developer    Role = "developer"
	ProjectAdmin Role = "project_admin"
	TeamAdmin    Role = "team_admin"
	Admin        Role = "admin"
)

// Roles lists every role, from least to most.
var Roles = []Role{Viewer, Developer, ProjectAdmin, TeamAdmin, Admin}

// Verb is a set of permissions; a role grants a set, a check asks for one.
type Verb uint16

// The verbs; see the package comment for the matrix.
const (
	Read Verb = 1 << iota
	ReadCatalog
	ReadDirectory
	MintOwn
	ManageProject
	ManageTeam
	ManageSystem
)

// anywhere are the verbs a binding grants whatever its scope.
const anywhere = ReadCatalog | ReadDirectory

var verbNames = []struct {
	v    Verb
	name string
}{
	{Read, "read"}, {ReadCatalog, "read_catalog"}, {ReadDirectory, "read_directory"},
	{MintOwn, "mint_own"}, {ManageProject, "manage_project"}, {ManageTeam, "manage_team"},
	{ManageSystem, "manage_system"},
}

func (v Verb) String() string {
	var names []string
	for _, n := range verbNames {
		if v&n.v != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// Matrix is the verb matrix: what each role grants in its binding's scope.
var Matrix = map[Role]Verb{
	Viewer:       Read | ReadCatalog,
	Developer:    Read | ReadCatalog | MintOwn,
	ProjectAdmin: Read | ReadCatalog | MintOwn | ReadDirectory | ManageProject,
	TeamAdmin:    Read | ReadCatalog | MintOwn | ReadDirectory | ManageProject | ManageTeam,
	Admin:        Read | ReadCatalog | MintOwn | ReadDirectory | ManageProject | ManageTeam | ManageSystem,
}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { _, ok := Matrix[r]; return ok }

// Scope is where a row lives or a binding applies: the system (both zero), a
// team (Team set), or a project (Project set, with Team its team).
type Scope struct {
	Team    uuid.UUID
	Project uuid.UUID
}

// System is the scope of rows shared by everyone and of system-wide bindings.
func System() Scope { return Scope{} }

// InTeam is the scope of a team.
func InTeam(team uuid.UUID) Scope { return Scope{Team: team} }

// InProject is the scope of a project of team.
func InProject(team, project uuid.UUID) Scope { return Scope{Team: team, Project: project} }

// IsSystem reports whether s is the system scope.
func (s Scope) IsSystem() bool { return s.Team == uuid.Nil && s.Project == uuid.Nil }

func (s Scope) String() string {
	switch {
	case s.Project != uuid.Nil:
		return "project " + s.Project.String()
	case s.Team != uuid.Nil:
		return "team " + s.Team.String()
	default:
		return "system"
	}
}

// covers reports whether a binding at s applies to a row at row.
func (s Scope) covers(row Scope) bool {
	switch {
	case s.Project != uuid.Nil:
		return row.Project == s.Project
	case s.Team != uuid.Nil:
		return row.Team == s.Team
	default:
		return true
	}
}

// Grant is one role binding as seen by a check: a role at a scope.
type Grant struct {
	Role  Role
	Scope Scope
}

// Subject is an authenticated caller: the admin token (everything) or a user
// with the grants of its role bindings, direct and through its groups.
type Subject struct {
	superuser bool
	user      uuid.UUID
	grants    []Grant
}

// Superuser is the admin token's subject: every verb everywhere.
func Superuser() *Subject { return &Subject{superuser: true} }

// ForUser is a signed-in user's subject. Grants with an unknown role are ignored.
func ForUser(user uuid.UUID, grants []Grant) *Subject {
	gs := slices.DeleteFunc(slices.Clone(grants), func(g Grant) bool { return !g.Role.Valid() })
	return &Subject{user: user, grants: gs}
}

// User is the subject's user, uuid.Nil for the admin token.
func (s *Subject) User() uuid.UUID { return s.user }

// Can reports whether s holds every verb in v on a row at scope at.
func (s *Subject) Can(v Verb, at Scope) bool {
	if s.superuser {
		return true
	}
	var have Verb
	for _, g := range s.grants {
		verbs := Matrix[g.Role]
		have |= verbs & anywhere
		if g.Scope.covers(at) {
			have |= effective(verbs, g.Scope)
		}
	}
	return have&v == v
}

// CanAnywhere reports whether s holds v on some scope: whether any row it
// guards could be reachable (used to tell "no access at all" from a filtered list).
func (s *Subject) CanAnywhere(v Verb) bool {
	if s.superuser {
		return true
	}
	for _, g := range s.grants {
		if Matrix[g.Role]&v == v {
			return true
		}
	}
	return false
}

// CanSeeTeam reports whether s may read team: with Read on the team, or with
// Read on one of its projects (members see the team their project is in).
func (s *Subject) CanSeeTeam(team uuid.UUID) bool {
	if s.Can(Read, InTeam(team)) {
		return true
	}
	for _, g := range s.grants {
		if g.Scope.Project != uuid.Nil && g.Scope.Team == team && Matrix[g.Role]&Read != 0 {
			return true
		}
	}
	return false
}

// CanGrant reports whether s may create, change or delete a role binding of
// role at scope at: it needs the manage verb of that scope's level and every
// verb the role would grant there, so no one hands out more than they hold.
func (s *Subject) CanGrant(role Role, at Scope) bool {
	verbs, ok := Matrix[role]
	if !ok {
		return false
	}
	manage := ManageSystem
	switch {
	case at.Project != uuid.Nil:
		manage = ManageProject
	case at.Team != uuid.Nil:
		manage = ManageTeam
	}
	return s.Can(manage|effective(verbs, at), at)
}

// effective is what verbs amount to in a binding at scope at: verbs whose
// rows lie above at cannot take effect there, so granting them is harmless
// and asks nothing of the granter (admin bound to a project is project_admin).
func effective(verbs Verb, at Scope) Verb {
	switch {
	case at.Project != uuid.Nil:
		return verbs &^ (ManageTeam | ManageSystem)
	case at.Team != uuid.Nil:
		return verbs &^ ManageSystem
	default:
		return verbs
	}
}

// Reach is where s holds v: everywhere (All), or on the teams and projects
// listed — the shape of store.Reach, for lists filtered in SQL.
type Reach struct {
	All      bool
	Teams    []uuid.UUID
	Projects []uuid.UUID
}

// Reach returns where s holds every verb in v.
func (s *Subject) Reach(v Verb) Reach {
	if s.superuser {
		return Reach{All: true}
	}
	var r Reach
	for _, g := range s.grants {
		verbs := Matrix[g.Role]
		if verbs&anywhere&v == v {
			return Reach{All: true}
		}
		if effective(verbs, g.Scope)&v != v {
			continue
		}
		switch {
		case g.Scope.IsSystem():
			return Reach{All: true}
		case g.Scope.Project != uuid.Nil:
			r.Projects = append(r.Projects, g.Scope.Project)
		default:
			r.Teams = append(r.Teams, g.Scope.Team)
		}
	}
	slices.SortFunc(r.Teams, compareUUID)
	slices.SortFunc(r.Projects, compareUUID)
	r.Teams = slices.Compact(r.Teams)
	r.Projects = slices.Compact(r.Projects)
	return r
}

func compareUUID(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) }

// Need describes what a check asked for, for an error message: "this needs
// manage_project on project …".
func Need(v Verb, at Scope) string {
	return fmt.Sprintf("this needs %s on %s", v, at)
}

// Teams returns the teams whose rows s may read — through a binding on the
// team or on one of its projects (CanSeeTeam) — or all when a system-wide
// Read covers every team. Lists of team-owned rows (policies) filter on it.
func (s *Subject) Teams() (all bool, teams []uuid.UUID) {
	if s.Can(Read, System()) {
		return true, nil
	}
	for _, g := range s.grants {
		if g.Scope.Team != uuid.Nil && Matrix[g.Role]&Read != 0 {
			teams = append(teams, g.Scope.Team)
		}
	}
	slices.SortFunc(teams, compareUUID)
	return false, slices.Compact(teams)
}

// CanAttach reports whether s may attach a policy owned by owner (uuid.Nil:
// the system) to a row at scope at — a relay key, service account or policy
// binding of a project. A team's policy is usable only inside its team; a
// system policy by system admins anywhere, and in the teams it is shared
// with (shared reports whether at's team holds a share) by whoever manages
// the row. It does not check that s may write the row itself.
func (s *Subject) CanAttach(owner uuid.UUID, at Scope, shared bool) bool {
	if owner != uuid.Nil {
		return owner == at.Team
	}
	return shared || s.Can(ManageSystem, System())
}
