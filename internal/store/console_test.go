package store

import (
	"testing"

	"github.com/google/uuid"
)

// TestSearch_MatchesNamesWithReach runs every console search: a term
// matches anywhere in the names, case-insensitively, its LIKE wildcards are
// literal, the keyset cursor and limit apply, and the reach narrows as in
// ListVisible.
func TestSearch_MatchesNamesWithReach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	a := newFixture(t, b, "asrch")
	z := newFixture(t, b, "zsrch")
	all := Reach{All: true}
	onlyA := Reach{ProjectIDs: []uuid.UUID{a.project.ID}, SelfID: a.user.ID}
	page := Page{Limit: 10}

	one := func(what string, n int, err error, want int) {
		t.Helper()
		if err != nil || n != want {
			t.Errorf("%s: %d rows (err %v), want %d", what, n, err, want)
		}
	}
	hosts, err := s.Hosts().Search(ctx, page, "HOST-ASRCH")
	one("hosts HOST-ASRCH", len(hosts), err, 1)
	hosts, err = s.Hosts().Search(ctx, page, "srch")
	one("hosts srch", len(hosts), err, 2)
	hosts, err = s.Hosts().Search(ctx, page, "a%srch")
	one("hosts a%srch (literal %)", len(hosts), err, 0)
	hosts, err = s.Hosts().Search(ctx, Page{Limit: 1}, "srch")
	one("hosts limit 1", len(hosts), err, 1)
	rest, err := s.Hosts().Search(ctx, Page{After: hosts[0].ID, Limit: 10}, "srch")
	one("hosts after the first", len(rest), err, 1)
	if err == nil && len(rest) == 1 && rest[0].ID == hosts[0].ID {
		t.Error("the cursor did not move past the first host")
	}
	models, err := s.Models().Search(ctx, page, "model-zsrch")
	one("models", len(models), err, 1)
	policies, err := s.Policies().Search(ctx, PoliciesPage{After: page.After, AllTeams: true, Limit: page.Limit}, "srch")
	one("policies", len(policies), err, 2)

	teams, err := s.Teams().SearchVisible(ctx, page, "srch", all)
	one("teams, all", len(teams), err, 2)
	teams, err = s.Teams().SearchVisible(ctx, page, "srch", onlyA)
	one("teams, project A's reach", len(teams), err, 1)
	projects, err := s.Projects().SearchVisible(ctx, page, "srch", onlyA)
	one("projects, project A's reach", len(projects), err, 1)
	sas, err := s.ServiceAccounts().SearchVisible(ctx, page, "srch", all)
	one("service accounts, all", len(sas), err, 2)
	sas, err = s.ServiceAccounts().SearchVisible(ctx, page, "srch", onlyA)
	one("service accounts, project A's reach", len(sas), err, 1)
	keys, err := s.RelayKeys().SearchVisible(ctx, page, z.relayKey.DisplayPrefix, all)
	one("relay keys by prefix", len(keys), err, 1)
	keys, err = s.RelayKeys().SearchVisible(ctx, page, z.relayKey.DisplayPrefix, onlyA)
	one("relay keys out of reach", len(keys), err, 0)
	users, err := s.Users().SearchVisible(ctx, page, "srch", all)
	one("users, all", len(users), err, 2)
	users, err = s.Users().SearchVisible(ctx, page, "srch", onlyA)
	one("users, self only", len(users), err, 1)
}
