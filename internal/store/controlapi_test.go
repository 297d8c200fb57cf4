package store

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestUsers_GetByEmailFold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := newFixture(t, b, "fold")
	got := mk[User](t)(b.s.Users().GetByEmailFold(b.ctx, "FOLD@Example.COM"))
	if got.ID != f.user.ID {
		t.Errorf("GetByEmailFold = %s, want %s", got.ID, f.user.ID)
	}
	_, err := b.s.Users().GetByEmailFold(b.ctx, "nobody@example.com")
	wantErr(t, err, ErrNotFound)
}

func TestRoleBindings_ListGrantsByUser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	f := newFixture(t, b, "grants")
	mk[GroupMembership](t)(s.GroupMemberships().Create(ctx, actor, GroupMembership{GroupID: f.group.ID, UserID: f.user.ID}))
	own := mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, RoleBinding{Role: "developer", UserID: &f.user.ID, ProjectID: &f.project.ID}))
	viaGroup := mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, RoleBinding{Role: "viewer", GroupID: &f.group.ID, TeamID: &f.team.ID}))
	other := mk[User](t)(s.Users().Create(ctx, actor, User{Email: "other-grants@example.com"}))
	mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, RoleBinding{Role: "admin", UserID: &other.ID}))

	grants := mk[[]RoleGrant](t)(s.RoleBindings().ListGrantsByUser(ctx, f.user.ID))
	if len(grants) != 2 {
		t.Fatalf("grants = %+v, want 2", grants)
	}
	for _, g := range grants {
		switch g.ID {
		case own.ID:
			if g.Role != "developer" || g.ProjectID == nil || g.ProjectTeamID == nil || *g.ProjectTeamID != f.team.ID {
				t.Errorf("own grant = %+v", g)
			}
		case viaGroup.ID:
			if g.Role != "viewer" || g.TeamID == nil || *g.TeamID != f.team.ID || g.ProjectTeamID != nil {
				t.Errorf("group grant = %+v", g)
			}
		default:
			t.Errorf("unexpected grant %+v", g)
		}
	}
}

func TestRateLimitRules_ListByRateLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	a := mk[RateLimit](t)(s.RateLimits().Create(ctx, actor, RateLimit{Slug: "rl-a"}))
	c := mk[RateLimit](t)(s.RateLimits().Create(ctx, actor, RateLimit{Slug: "rl-c"}))
	for _, rl := range []RateLimit{a, a, c} {
		mk[RateLimitRule](t)(s.RateLimitRules().Create(ctx, actor, RateLimitRule{RateLimitID: rl.ID, Meter: "requests", Amount: 1, WindowSeconds: 60}))
	}
	if rules := mk[[]RateLimitRule](t)(s.RateLimitRules().ListByRateLimits(ctx, []uuid.UUID{a.ID})); len(rules) != 2 {
		t.Errorf("rules of a = %d, want 2", len(rules))
	}
	if rules := mk[[]RateLimitRule](t)(s.RateLimitRules().ListByRateLimits(ctx, nil)); len(rules) != 0 {
		t.Errorf("rules of none = %d, want 0", len(rules))
	}
}

// TestListVisible_Reach checks every ListVisible against two teams' rows: all
// of them with Reach.All, one team's with that team, one project's with that
// project, and the rows a user owns through SelfID.
func TestListVisible_Reach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	fa, fb := newFixture(t, b, "a"), newFixture(t, b, "b")
	// A second project in team a, with its own rows.
	a2 := mk[Project](t)(s.Projects().Create(ctx, actor, Project{TeamID: fa.team.ID, Slug: "proj-a2"}))
	sa2 := mk[ServiceAccount](t)(s.ServiceAccounts().Create(ctx, actor, ServiceAccount{ProjectID: a2.ID, Slug: "sa-a2"}))
	mk[RelayKey](t)(s.RelayKeys().Create(ctx, actor, RelayKey{KeyHash: hash("a2"), DisplayPrefix: "sk", ProjectID: a2.ID, ServiceAccountID: &sa2.ID}))
	for _, f := range []fixture{fa, fb} {
		mk[PolicyBinding](t)(s.PolicyBindings().Create(ctx, actor, PolicyBinding{ProjectID: f.project.ID, PolicyID: f.policy.ID, ServiceAccountID: &f.sa.ID}))
		mk[Budget](t)(s.Budgets().Create(ctx, actor, Budget{TeamID: &f.team.ID, Period: "day", Amount: 1}))
		mk[Budget](t)(s.Budgets().Create(ctx, actor, Budget{RelayKeyID: &f.relayKey.ID, Period: "day", Amount: 1}))
		mk[InferenceToken](t)(s.InferenceTokens().Create(ctx, actor, InferenceToken{
			TokenHash: hash("tok-" + f.user.Email), UserID: f.user.ID, ProjectID: f.project.ID, ExpiresAt: time.Now().Add(time.Hour),
		}))
		mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, RoleBinding{Role: "viewer", UserID: &f.user.ID, ProjectID: &f.project.ID}))
		mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, RoleBinding{Role: "viewer", GroupID: &f.group.ID, TeamID: &f.team.ID}))
	}
	mk[GroupMembership](t)(s.GroupMemberships().Create(ctx, actor, GroupMembership{GroupID: fb.group.ID, UserID: fa.user.ID}))
	mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, RoleBinding{Role: "admin", UserID: &fb.user.ID}))

	all := Reach{All: true}
	teamA := Reach{TeamIDs: []uuid.UUID{fa.team.ID}}
	projA := Reach{ProjectIDs: []uuid.UUID{fa.project.ID}}
	selfA := Reach{SelfID: fa.user.ID}
	none := Reach{}
	page := Page{Limit: 100}
	count := func(n int, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	cases := []struct {
		name string
		list func(Reach) int
		want map[string]int // by reach name
	}{
		{"teams", func(r Reach) int { return count(lenOf(s.Teams().ListVisible(ctx, page, r))) },
			map[string]int{"all": 2, "teamA": 1, "projA": 1, "selfA": 0, "none": 0}},
		{"projects", func(r Reach) int { return count(lenOf(s.Projects().ListVisible(ctx, ProjectsPage{Limit: 100}, r))) },
			map[string]int{"all": 3, "teamA": 2, "projA": 1, "selfA": 0, "none": 0}},
		{"service accounts", func(r Reach) int {
			return count(lenOf(s.ServiceAccounts().ListVisible(ctx, ServiceAccountsPage{Limit: 100}, r)))
		}, map[string]int{"all": 3, "teamA": 2, "projA": 1, "selfA": 0, "none": 0}},
		{"relay keys", func(r Reach) int { return count(lenOf(s.RelayKeys().ListVisible(ctx, RelayKeysPage{Limit: 100}, r))) },
			map[string]int{"all": 3, "teamA": 2, "projA": 1, "selfA": 0, "none": 0}},
		{"policy bindings", func(r Reach) int {
			return count(lenOf(s.PolicyBindings().ListVisible(ctx, PolicyBindingsPage{Limit: 100}, r)))
		}, map[string]int{"all": 2, "teamA": 1, "projA": 1, "selfA": 0, "none": 0}},
		{"budgets", func(r Reach) int { return count(lenOf(s.Budgets().ListVisible(ctx, BudgetsPage{Limit: 100}, r))) },
			// team a's budget and its key's budget; only the key's with the project.
			map[string]int{"all": 4, "teamA": 2, "projA": 1, "selfA": 0, "none": 0}},
		{"inference tokens", func(r Reach) int {
			return count(lenOf(s.InferenceTokens().ListVisible(ctx, InferenceTokensPage{Limit: 100}, r)))
		}, map[string]int{"all": 2, "teamA": 1, "projA": 1, "selfA": 1, "none": 0}},
		{"role bindings", func(r Reach) int {
			return count(lenOf(s.RoleBindings().ListVisible(ctx, RoleBindingsPage{Limit: 100}, r)))
		}, // 4 scoped + 1 system; user a's own project binding and team b's group binding through membership.
			map[string]int{"all": 5, "teamA": 2, "projA": 1, "selfA": 2, "none": 0}},
		{"users", func(r Reach) int { return count(lenOf(s.Users().ListVisible(ctx, page, nil, r))) },
			map[string]int{"all": 2, "teamA": 0, "projA": 0, "selfA": 1, "none": 0}},
	}
	reaches := map[string]Reach{"all": all, "teamA": teamA, "projA": projA, "selfA": selfA, "none": none}
	for _, tt := range cases {
		for name, r := range reaches {
			if got := tt.list(r); got != tt.want[name] {
				t.Errorf("%s with %s: %d rows, want %d", tt.name, name, got, tt.want[name])
			}
		}
	}

	// The page filters still apply, and so does paging.
	email := fb.user.Email
	users := mk[[]User](t)(s.Users().ListVisible(ctx, page, &email, all))
	if len(users) != 1 || users[0].ID != fb.user.ID {
		t.Errorf("users by email = %+v", users)
	}
	keys := mk[[]RelayKey](t)(s.RelayKeys().ListVisible(ctx, RelayKeysPage{Limit: 1}, all))
	rest := mk[[]RelayKey](t)(s.RelayKeys().ListVisible(ctx, RelayKeysPage{After: keys[0].ID, Limit: 100}, all))
	if len(rest) != 2 || slices.ContainsFunc(rest, func(k RelayKey) bool { return k.ID == keys[0].ID }) {
		t.Errorf("second page = %d keys", len(rest))
	}
	if pbs := mk[[]PolicyBinding](t)(s.PolicyBindings().ListVisible(ctx, PolicyBindingsPage{PolicyID: &fb.policy.ID, Limit: 100}, all)); len(pbs) != 1 {
		t.Errorf("policy bindings of policy b = %d", len(pbs))
	}
}

func lenOf[R any](rows []R, err error) (int, error) { return len(rows), err }
