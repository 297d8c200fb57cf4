package store

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// idOf is the ID of a row a lookup returned.
func idOf(r any, err error) (uuid.UUID, error) {
	if err != nil {
		return uuid.Nil, err
	}
	return reflect.ValueOf(r).FieldByName("ID").Interface().(uuid.UUID), nil
}

func TestTables_GetByNaturalKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	f := newFixture(t, b, "nk")
	binding := mk[Binding](t)(s.Bindings().Create(ctx, actor, Binding{
		ModelID: f.model.ID, HostID: f.host.ID, Shape: "openai", UpstreamModel: "gpt-4o", PriceTiers: []byte(`[]`),
	}))
	token := mk[InferenceToken](t)(s.InferenceTokens().Create(ctx, actor, InferenceToken{
		TokenHash: hash("it-nk"), UserID: f.user.ID, ProjectID: f.project.ID, ExpiresAt: time.Now().Add(time.Hour),
	}))
	nobody := uuid.New()
	tests := []struct {
		name          string
		want          uuid.UUID
		found, absent func() (uuid.UUID, error)
	}{
		{"team by slug", f.team.ID,
			func() (uuid.UUID, error) { return idOf(s.Teams().GetBySlug(ctx, f.team.Slug)) },
			func() (uuid.UUID, error) { return idOf(s.Teams().GetBySlug(ctx, "nope")) }},
		{"project by team and slug", f.project.ID,
			func() (uuid.UUID, error) { return idOf(s.Projects().GetBySlug(ctx, f.team.ID, f.project.Slug)) },
			func() (uuid.UUID, error) { return idOf(s.Projects().GetBySlug(ctx, nobody, f.project.Slug)) }},
		{"user by email", f.user.ID,
			func() (uuid.UUID, error) { return idOf(s.Users().GetByEmail(ctx, f.user.Email)) },
			func() (uuid.UUID, error) { return idOf(s.Users().GetByEmail(ctx, "nobody@example.com")) }},
		{"group by slug", f.group.ID,
			func() (uuid.UUID, error) { return idOf(s.Groups().GetBySlug(ctx, f.group.Slug)) },
			func() (uuid.UUID, error) { return idOf(s.Groups().GetBySlug(ctx, "nope")) }},
		{"service account by project and slug", f.sa.ID,
			func() (uuid.UUID, error) { return idOf(s.ServiceAccounts().GetBySlug(ctx, f.project.ID, f.sa.Slug)) },
			func() (uuid.UUID, error) { return idOf(s.ServiceAccounts().GetBySlug(ctx, nobody, f.sa.Slug)) }},
		{"rate limit by slug", f.rateLimit.ID,
			func() (uuid.UUID, error) { return idOf(s.RateLimits().GetBySlug(ctx, f.rateLimit.Slug)) },
			func() (uuid.UUID, error) { return idOf(s.RateLimits().GetBySlug(ctx, "nope")) }},
		{"host by slug", f.host.ID,
			func() (uuid.UUID, error) { return idOf(s.Hosts().GetBySlug(ctx, f.host.Slug)) },
			func() (uuid.UUID, error) { return idOf(s.Hosts().GetBySlug(ctx, "nope")) }},
		{"model by name", f.model.ID,
			func() (uuid.UUID, error) { return idOf(s.Models().GetByName(ctx, f.model.Name)) },
			func() (uuid.UUID, error) { return idOf(s.Models().GetByName(ctx, "nope")) }},
		{"binding by model and host", binding.ID,
			func() (uuid.UUID, error) { return idOf(s.Bindings().GetByModelAndHost(ctx, f.model.ID, f.host.ID)) },
			func() (uuid.UUID, error) { return idOf(s.Bindings().GetByModelAndHost(ctx, f.model.ID, nobody)) }},
		{"host key by host and slug", f.hostKey.ID,
			func() (uuid.UUID, error) { return idOf(s.HostKeys().GetBySlug(ctx, f.host.ID, f.hostKey.Slug)) },
			func() (uuid.UUID, error) { return idOf(s.HostKeys().GetBySlug(ctx, nobody, f.hostKey.Slug)) }},
		{"policy by slug", f.policy.ID,
			func() (uuid.UUID, error) { return idOf(s.Policies().GetBySlug(ctx, f.policy.Slug)) },
			func() (uuid.UUID, error) { return idOf(s.Policies().GetBySlug(ctx, "nope")) }},
		{"relay key by hash", f.relayKey.ID,
			func() (uuid.UUID, error) { return idOf(s.RelayKeys().GetByHash(ctx, f.relayKey.KeyHash)) },
			func() (uuid.UUID, error) { return idOf(s.RelayKeys().GetByHash(ctx, hash("nope"))) }},
		{"inference token by hash", token.ID,
			func() (uuid.UUID, error) { return idOf(s.InferenceTokens().GetByHash(ctx, token.TokenHash)) },
			func() (uuid.UUID, error) { return idOf(s.InferenceTokens().GetByHash(ctx, hash("nope"))) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mk[uuid.UUID](t)(tt.found()); got != tt.want {
				t.Errorf("found %v, want %v", got, tt.want)
			}
			_, err := tt.absent()
			wantErr(t, err, ErrNotFound)
		})
	}
}

// keys lists the keys of rows in order.
func keys[R any, K comparable](key func(R) K, rows []R) []K {
	var ks []K
	for _, r := range rows {
		ks = append(ks, key(r))
	}
	return ks
}

func TestTables_ListByOwner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	f := newFixture(t, b, "own")
	other := newFixture(t, b, "other")

	mk[GroupMembership](t)(s.GroupMemberships().Create(ctx, actor, GroupMembership{GroupID: f.group.ID, UserID: f.user.ID}))
	mk[GroupMembership](t)(s.GroupMemberships().Create(ctx, actor, GroupMembership{GroupID: f.group.ID, UserID: other.user.ID}))
	if ms := mk[[]GroupMembership](t)(s.GroupMemberships().ListByGroup(ctx, f.group.ID)); len(ms) != 2 {
		t.Errorf("ListByGroup = %v, want 2 members", ms)
	}
	if ms := mk[[]GroupMembership](t)(s.GroupMemberships().ListByUser(ctx, other.user.ID)); len(ms) != 1 || ms[0].GroupID != f.group.ID {
		t.Errorf("ListByUser = %v, want the one group", ms)
	}

	for _, meter := range []string{"requests", "total_tokens"} {
		mk[RateLimitRule](t)(s.RateLimitRules().Create(ctx, actor, RateLimitRule{RateLimitID: f.rateLimit.ID, Meter: meter, Amount: 10, WindowSeconds: 60}))
	}
	if rs := mk[[]RateLimitRule](t)(s.RateLimitRules().ListByRateLimit(ctx, f.rateLimit.ID)); len(rs) != 2 {
		t.Errorf("ListByRateLimit = %v, want 2 rules", rs)
	}

	second := mk[Binding](t)(s.Bindings().Create(ctx, actor, Binding{ModelID: f.model.ID, HostID: other.host.ID, Shape: "openai", UpstreamModel: "m", Position: 1, PriceTiers: []byte(`[]`)}))
	first := mk[Binding](t)(s.Bindings().Create(ctx, actor, Binding{ModelID: f.model.ID, HostID: f.host.ID, Shape: "openai", UpstreamModel: "m", Position: 0, PriceTiers: []byte(`[]`)}))
	bs := mk[[]Binding](t)(s.Bindings().ListByModel(ctx, f.model.ID))
	if got, want := keys(bindingsTable.key, bs), []uuid.UUID{first.ID, second.ID}; !slices.Equal(got, want) {
		t.Errorf("ListByModel = %v, want %v (by position)", got, want)
	}

	mk[PolicyModel](t)(s.PolicyModels().Create(ctx, actor, PolicyModel{PolicyID: f.policy.ID, ModelID: f.model.ID}))
	mk[PolicyModel](t)(s.PolicyModels().Create(ctx, actor, PolicyModel{PolicyID: other.policy.ID, ModelID: f.model.ID}))
	if ps := mk[[]PolicyModel](t)(s.PolicyModels().ListByPolicy(ctx, f.policy.ID)); len(ps) != 1 {
		t.Errorf("PolicyModels.ListByPolicy = %v, want 1", ps)
	}
	mk[PolicyHostKey](t)(s.PolicyHostKeys().Create(ctx, actor, PolicyHostKey{PolicyID: f.policy.ID, HostKeyID: other.hostKey.ID}))
	if ps := mk[[]PolicyHostKey](t)(s.PolicyHostKeys().ListByPolicy(ctx, f.policy.ID)); len(ps) != 1 || ps[0].HostKeyID != other.hostKey.ID {
		t.Errorf("PolicyHostKeys.ListByPolicy = %v, want the one key", ps)
	}
	mk[PolicyModelRateLimit](t)(s.PolicyModelRateLimits().Create(ctx, actor, PolicyModelRateLimit{PolicyID: f.policy.ID, ModelID: f.model.ID, RateLimitID: f.rateLimit.ID}))
	mk[PolicyModelRateLimit](t)(s.PolicyModelRateLimits().Create(ctx, actor, PolicyModelRateLimit{PolicyID: f.policy.ID, ModelID: other.model.ID, RateLimitID: f.rateLimit.ID, Position: 1}))
	pr := mk[[]PolicyModelRateLimit](t)(s.PolicyModelRateLimits().ListByPolicy(ctx, f.policy.ID))
	if len(pr) != 2 || pr[0].ModelID != f.model.ID {
		t.Errorf("PolicyModelRateLimits.ListByPolicy = %v, want 2 in position order", pr)
	}

	late := mk[PolicyBinding](t)(s.PolicyBindings().Create(ctx, actor, PolicyBinding{ProjectID: f.project.ID, PolicyID: f.policy.ID, GroupID: &f.group.ID, Position: 2}))
	early := mk[PolicyBinding](t)(s.PolicyBindings().Create(ctx, actor, PolicyBinding{ProjectID: f.project.ID, PolicyID: other.policy.ID, ServiceAccountID: &f.sa.ID, Position: 1}))
	pbs := mk[[]PolicyBinding](t)(s.PolicyBindings().ListByProject(ctx, f.project.ID))
	if got, want := keys(policyBindingsTable.key, pbs), []uuid.UUID{early.ID, late.ID}; !slices.Equal(got, want) {
		t.Errorf("ListByProject = %v, want %v (by position)", got, want)
	}

	// other.user is in f.group: it gets its own role and the group's, not f.user's.
	own := mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, RoleBinding{Role: "viewer", UserID: &other.user.ID}))
	viaGroup := mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, RoleBinding{Role: "developer", GroupID: &f.group.ID, ProjectID: &f.project.ID}))
	mk[RoleBinding](t)(s.RoleBindings().Create(ctx, actor, RoleBinding{Role: "admin", UserID: &f.user.ID}))
	rbs := mk[[]RoleBinding](t)(s.RoleBindings().ListByUserWithGroups(ctx, other.user.ID))
	got := keys(roleBindingsTable.key, rbs)
	if len(got) != 2 || !slices.Contains(got, own.ID) || !slices.Contains(got, viaGroup.ID) {
		t.Errorf("ListByUserWithGroups = %v, want %v and %v", got, own.ID, viaGroup.ID)
	}
}

func TestTables_RevokeRotateExpire(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	f := newFixture(t, b, "rre")

	t.Run("relay key revoke", func(t *testing.T) {
		first := mk[RelayKey](t)(s.RelayKeys().Revoke(ctx, actor, f.relayKey.ID))
		again := mk[RelayKey](t)(s.RelayKeys().Revoke(ctx, actor, f.relayKey.ID))
		if first.RevokedAt == nil || !again.RevokedAt.Equal(*first.RevokedAt) {
			t.Errorf("revoked at %v then %v, want the first time kept", first.RevokedAt, again.RevokedAt)
		}
		audit := auditRows(t, b, "relay_keys", f.relayKey.ID.String())
		if got := actions(audit); !slices.Equal(got, []string{"create", "revoke", "revoke"}) {
			t.Errorf("audit actions = %v", got)
		}
		for _, a := range audit {
			checkNoSecrets(t, a, f.relayKey)
		}
		_, err := s.RelayKeys().Revoke(ctx, actor, uuid.New())
		wantErr(t, err, ErrNotFound)
	})

	t.Run("inference token revoke and expire", func(t *testing.T) {
		live := mk[InferenceToken](t)(s.InferenceTokens().Create(ctx, actor, InferenceToken{
			TokenHash: hash("it-live"), UserID: f.user.ID, ProjectID: f.project.ID, ExpiresAt: time.Now().Add(time.Hour),
		}))
		old := mk[InferenceToken](t)(s.InferenceTokens().Create(ctx, actor, InferenceToken{
			TokenHash: hash("it-old"), UserID: f.user.ID, ProjectID: f.project.ID, ExpiresAt: time.Now().Add(-48 * time.Hour),
		}))
		revoked := mk[InferenceToken](t)(s.InferenceTokens().Revoke(ctx, actor, live.ID))
		if revoked.RevokedAt == nil {
			t.Error("RevokedAt not set")
		}
		if n := mk[int64](t)(s.InferenceTokens().DeleteExpired(ctx, time.Now().Add(-24*time.Hour))); n != 1 {
			t.Errorf("DeleteExpired = %d, want 1", n)
		}
		_, err := s.InferenceTokens().Get(ctx, old.ID)
		wantErr(t, err, ErrNotFound)
		mk[InferenceToken](t)(s.InferenceTokens().Get(ctx, live.ID))
	})

	t.Run("host key secret", func(t *testing.T) {
		hk := f.hostKey
		sealed := []byte("nonce||sealed-provider-secret")
		rotated := mk[HostKey](t)(s.HostKeys().SetSecret(ctx, actor, hk.ID, nil, sealed))
		if rotated.SecretVersion != hk.SecretVersion+1 || rotated.SecretRef != nil || string(rotated.SecretCiphertext) != string(sealed) {
			t.Errorf("after SetSecret: %+v", rotated)
		}
		resealed := mk[HostKey](t)(s.HostKeys().Reseal(ctx, actor, hk.ID, []byte("nonce||resealed")))
		if resealed.SecretVersion != rotated.SecretVersion || string(resealed.SecretCiphertext) != "nonce||resealed" {
			t.Errorf("after Reseal: %+v", resealed)
		}
		back := mk[HostKey](t)(s.HostKeys().SetSecret(ctx, actor, hk.ID, ptrTo("env:OPENAI_API_KEY"), nil))
		_, err := s.HostKeys().Reseal(ctx, actor, hk.ID, []byte("x"))
		wantErr(t, err, ErrNotFound) // an env reference has nothing to reseal
		if back.SecretVersion != hk.SecretVersion+2 || back.SecretCiphertext != nil {
			t.Errorf("after second SetSecret: %+v", back)
		}
		// Update leaves the secret alone.
		back.Enabled = false
		updated := mk[HostKey](t)(s.HostKeys().Update(ctx, actor, back))
		if updated.SecretVersion != back.SecretVersion || *updated.SecretRef != "env:OPENAI_API_KEY" {
			t.Errorf("Update touched the secret: %+v", updated)
		}
		_, err = s.HostKeys().SetSecret(ctx, actor, hk.ID, ptrTo("env:X"), sealed)
		wantErr(t, err, ErrInvalid)
		_, err = s.HostKeys().SetSecret(ctx, actor, hk.ID, nil, nil)
		wantErr(t, err, ErrInvalid)
		_, err = s.HostKeys().SetSecret(ctx, actor, uuid.New(), nil, sealed)
		wantErr(t, err, ErrNotFound)

		audit := auditRows(t, b, "host_keys", hk.ID.String())
		if got := actions(audit); !slices.Equal(got, []string{"create", "rotate", "rotate", "rotate", "update"}) {
			t.Errorf("audit actions = %v", got)
		}
		for _, a := range audit {
			checkNoSecrets(t, a, rotated)
		}
	})
}
