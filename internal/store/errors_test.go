package store

import (
	"errors"
	"testing"

	"github.com/google/uuid"
)

func countAudit(t *testing.T, b *bundle) int {
	t.Helper()
	var n int
	if err := b.s.Pool().QueryRow(b.ctx, "SELECT count(*) FROM audit_log").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTables_Errors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	f := newFixture(t, b, "err")
	other := mk[Host](t)(s.Hosts().Create(ctx, actor, hostRow("other")))
	member := GroupMembership{GroupID: f.group.ID, UserID: f.user.ID}
	mk[GroupMembership](t)(s.GroupMemberships().Create(ctx, actor, member))
	role := RoleBinding{Role: "viewer", UserID: &f.user.ID}
	mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, role))
	budget := mk[Budget](t)(s.Budgets().Create(ctx, actor, Budget{TeamID: &f.team.ID, Period: "day", Amount: 1}))
	nobody := uuid.New()
	stop := errors.New("stop")
	badHost := hostRow("bad")
	badHost.Provider = "acme"

	tests := []struct {
		name string
		do   func() error
		want error
	}{
		// Unique constraints.
		{"duplicate team slug", func() error {
			_, err := s.Teams().Create(ctx, actor, Team{Slug: f.team.Slug})
			return err
		}, ErrConflict},
		{"duplicate membership", func() error {
			_, err := s.GroupMemberships().Create(ctx, actor, member)
			return err
		}, ErrConflict},
		{"duplicate role binding (expression index)", func() error {
			_, err := s.RoleBindings().Create(ctx, actor, role)
			return err
		}, ErrConflict},
		{"update to a taken slug", func() error {
			_, err := s.Hosts().Modify(ctx, actor, other.ID, func(h *Host) error { h.Slug = f.host.Slug; return nil })
			return err
		}, ErrConflict},
		// Foreign keys.
		{"project of no team", func() error {
			_, err := s.Projects().Create(ctx, actor, Project{TeamID: nobody, Slug: "orphan"})
			return err
		}, ErrReferenced},
		{"delete a team that has projects", func() error {
			return s.Teams().Delete(ctx, actor, f.team.ID)
		}, ErrReferenced},
		{"grant of no model", func() error {
			_, err := s.PolicyModels().Create(ctx, actor, PolicyModel{PolicyID: f.policy.ID, ModelID: nobody})
			return err
		}, ErrReferenced},
		// Check constraints.
		{"unknown provider", func() error {
			_, err := s.Hosts().Create(ctx, actor, badHost)
			return err
		}, ErrInvalid},
		{"host key with two secrets", func() error {
			_, err := s.HostKeys().Create(ctx, actor, HostKey{HostID: f.host.ID, Slug: "two", SecretRef: ptrTo("env:A"), SecretCiphertext: []byte("x")})
			return err
		}, ErrInvalid},
		{"relay key with two owners", func() error {
			_, err := s.RelayKeys().Create(ctx, actor, RelayKey{KeyHash: hash("two"), ProjectID: f.project.ID, ServiceAccountID: &f.sa.ID, UserID: &f.user.ID})
			return err
		}, ErrInvalid},
		{"short key hash", func() error {
			_, err := s.RelayKeys().Create(ctx, actor, RelayKey{KeyHash: []byte("short"), ProjectID: f.project.ID, UserID: &f.user.ID})
			return err
		}, ErrInvalid},
		{"binding without price tiers (not null)", func() error {
			_, err := s.Bindings().Create(ctx, actor, Binding{ModelID: f.model.ID, HostID: f.host.ID, Shape: "openai", UpstreamModel: "m"})
			return err
		}, ErrInvalid},
		{"budget update to a bad period", func() error {
			bad := budget
			bad.Period = "year"
			_, err := s.Budgets().Update(ctx, actor, bad)
			return err
		}, ErrInvalid},
		{"modify changes the key", func() error {
			_, err := s.Hosts().Modify(ctx, actor, other.ID, func(h *Host) error { h.ID = nobody; return nil })
			return err
		}, ErrInvalid},
		{"modify callback fails", func() error {
			_, err := s.Hosts().Modify(ctx, actor, other.ID, func(*Host) error { return stop })
			return err
		}, stop},
		// Missing rows.
		{"get", func() error { _, err := s.Models().Get(ctx, nobody); return err }, ErrNotFound},
		{"get join row", func() error {
			_, err := s.PolicyHostKeys().Get(ctx, PolicyHostKeyKey{f.policy.ID, f.hostKey.ID})
			return err
		}, ErrNotFound},
		{"update", func() error { _, err := s.Teams().Update(ctx, actor, Team{ID: nobody, Slug: "x"}); return err }, ErrNotFound},
		{"modify", func() error {
			_, err := s.Users().Modify(ctx, actor, nobody, func(*User) error { return nil })
			return err
		}, ErrNotFound},
		{"delete", func() error { return s.Policies().Delete(ctx, actor, nobody) }, ErrNotFound},
		{"delete join row", func() error {
			return s.GroupMemberships().Delete(ctx, actor, GroupMembershipKey{f.group.ID, nobody})
		}, ErrNotFound},
		{"revoke", func() error { _, err := s.InferenceTokens().Revoke(ctx, actor, nobody); return err }, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := countAudit(t, b)
			wantErr(t, tt.do(), tt.want)
			if countAudit(t, b) != before {
				t.Error("a failed write left an audit row")
			}
		})
	}
}
