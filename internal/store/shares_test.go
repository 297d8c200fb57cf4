package store

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestShares_TeamPolicyHoldsOnlySharedHostKeys holds the schema's rules for a
// team's policy: it lists only host keys shared with its team, taking the
// share back takes the key out of it, it never grants every host key, and
// its owner never changes.
func TestShares_TeamPolicyHoldsOnlySharedHostKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	f := newFixture(t, b, "shr")
	teamB := mk[Team](t)(s.Teams().Create(ctx, actor, Team{Slug: "team-shr-b"}))
	row := policyRow("policy-shr-team")
	row.TeamID = &f.team.ID
	pol := mk[Policy](t)(s.Policies().Create(ctx, actor, row))
	grant := PolicyHostKey{PolicyID: pol.ID, HostKeyID: f.hostKey.ID}

	if _, err := s.PolicyHostKeys().Create(ctx, actor, grant); !errors.Is(err, ErrInvalid) {
		t.Fatalf("grant of an unshared host key to a team's policy: err = %v, want ErrInvalid", err)
	}
	mk[HostKeyTeamShare](t)(s.HostKeyTeamShares().Create(ctx, actor, HostKeyTeamShare{HostKeyID: f.hostKey.ID, TeamID: teamB.ID}))
	if _, err := s.PolicyHostKeys().Create(ctx, actor, grant); !errors.Is(err, ErrInvalid) {
		t.Fatalf("grant of a host key shared with another team: err = %v, want ErrInvalid", err)
	}
	share := HostKeyTeamShareKey{HostKeyID: f.hostKey.ID, TeamID: f.team.ID}
	mk[HostKeyTeamShare](t)(s.HostKeyTeamShares().Create(ctx, actor, HostKeyTeamShare{HostKeyID: f.hostKey.ID, TeamID: f.team.ID}))
	mk[PolicyHostKey](t)(s.PolicyHostKeys().Create(ctx, actor, grant))
	if _, err := s.HostKeyTeamShares().Get(ctx, share); err != nil {
		t.Fatalf("get share: %v", err)
	}
	shares := mk[[]HostKeyTeamShare](t)(s.HostKeyTeamShares().List(ctx, HostKeyTeamSharesPage{TeamID: &f.team.ID, Limit: 10}))
	if len(shares) != 1 || shares[0].HostKeyID != f.hostKey.ID {
		t.Errorf("shares of the team = %+v, want the one host key", shares)
	}

	if err := s.HostKeyTeamShares().Delete(ctx, actor, share); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	if _, err := s.PolicyHostKeys().Get(ctx, PolicyHostKeyKey(grant)); !errors.Is(err, ErrNotFound) {
		t.Errorf("grant after the share was taken back: err = %v, want ErrNotFound", err)
	}

	if _, err := s.Policies().Modify(ctx, actor, pol.ID, func(p *Policy) error { p.AllHostKeys = true; return nil }); !errors.Is(err, ErrInvalid) {
		t.Errorf("a team's policy granting every host key: err = %v, want ErrInvalid", err)
	}
	// Update does not write the owner, and the schema refuses it on any other path.
	mk[Policy](t)(s.Policies().Modify(ctx, actor, pol.ID, func(p *Policy) error { p.TeamID = &teamB.ID; return nil }))
	if got := mk[Policy](t)(s.Policies().Get(ctx, pol.ID)); got.TeamID == nil || *got.TeamID != f.team.ID {
		t.Errorf("owner after an update naming another team = %v, want team A", got.TeamID)
	}
	pool, err := pgxpool.New(ctx, b.url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `UPDATE policies SET team_id = $2 WHERE id = $1`, pol.ID, teamB.ID); err == nil {
		t.Error("UPDATE of policies.team_id succeeded; the owner must not change")
	}
}

func TestShares_PolicySharesAndVisibleList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	f := newFixture(t, b, "pvis")
	teamB := mk[Team](t)(s.Teams().Create(ctx, actor, Team{Slug: "team-pvis-b"}))
	own := policyRow("policy-pvis-a")
	own.TeamID = &f.team.ID
	ownA := mk[Policy](t)(s.Policies().Create(ctx, actor, own))
	other := policyRow("policy-pvis-b")
	other.TeamID = &teamB.ID
	mk[Policy](t)(s.Policies().Create(ctx, actor, other))

	key := PolicyTeamShareKey{PolicyID: f.policy.ID, TeamID: teamB.ID}
	mk[PolicyTeamShare](t)(s.PolicyTeamShares().Create(ctx, actor, PolicyTeamShare{PolicyID: f.policy.ID, TeamID: teamB.ID}))
	if _, err := s.PolicyTeamShares().Create(ctx, actor, PolicyTeamShare{PolicyID: f.policy.ID, TeamID: teamB.ID}); !errors.Is(err, ErrConflict) {
		t.Errorf("sharing twice: err = %v, want ErrConflict", err)
	}
	got := mk[[]PolicyTeamShare](t)(s.PolicyTeamShares().List(ctx, PolicyTeamSharesPage{PolicyID: &f.policy.ID, Limit: 10}))
	if len(got) != 1 || got[0].TeamID != teamB.ID {
		t.Errorf("shares = %+v, want team B", got)
	}
	if _, err := s.PolicyTeamShares().Get(ctx, key); err != nil {
		t.Errorf("get share: %v", err)
	}

	ids := func(p PoliciesPage) map[uuid.UUID]bool {
		p.Limit = 100
		m := map[uuid.UUID]bool{}
		for _, r := range mk[[]Policy](t)(s.Policies().ListVisible(ctx, p)) {
			m[r.ID] = true
		}
		return m
	}
	seenA := ids(PoliciesPage{TeamIDs: []uuid.UUID{f.team.ID}})
	if !seenA[ownA.ID] || !seenA[f.policy.ID] || len(seenA) != 2 {
		t.Errorf("team A sees %v, want its own policy and the system one", seenA)
	}
	if all := ids(PoliciesPage{AllTeams: true}); len(all) != 3 {
		t.Errorf("all teams see %d policies, want 3", len(all))
	}
	if onlyA := ids(PoliciesPage{AllTeams: true, TeamID: &f.team.ID}); len(onlyA) != 1 || !onlyA[ownA.ID] {
		t.Errorf("filtered to team A: %v, want its own policy", onlyA)
	}
	if err := s.PolicyTeamShares().Delete(ctx, actor, key); err != nil {
		t.Errorf("unshare: %v", err)
	}
}
