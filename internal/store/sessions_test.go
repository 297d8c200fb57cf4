package store

import (
	"slices"
	"testing"
	"time"
)

func TestSessions_Lifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	f := newFixture(t, b, "sess")
	self := "user:" + f.user.ID.String()
	session := func(token string, ttl time.Duration) Session {
		return Session{TokenHash: hash(token), UserID: f.user.ID, CSRFToken: "csrf-" + token, ExpiresAt: time.Now().Add(ttl)}
	}

	live := mk[Session](t)(s.Sessions().Create(ctx, self, session("live", time.Hour)))
	mk[Session](t)(s.Sessions().Create(ctx, self, session("stale", -time.Minute)))
	if got := mk[Session](t)(s.Sessions().GetByHash(ctx, hash("live"))); got.UserID != f.user.ID || got.CSRFToken != live.CSRFToken {
		t.Errorf("GetByHash = %+v", got)
	}
	_, err := s.Sessions().GetByHash(ctx, hash("stale"))
	wantErr(t, err, ErrNotFound)
	_, err = s.Sessions().Create(ctx, self, session("live", time.Hour))
	wantErr(t, err, ErrConflict)

	if n := mk[int64](t)(s.Sessions().DeleteExpired(ctx)); n != 1 {
		t.Errorf("DeleteExpired = %d, want 1", n)
	}
	if err := s.Sessions().Delete(ctx, self, hash("live")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Sessions().GetByHash(ctx, hash("live"))
	wantErr(t, err, ErrNotFound)
	wantErr(t, s.Sessions().Delete(ctx, self, hash("live")), ErrNotFound)

	mk[Session](t)(s.Sessions().Create(ctx, self, session("a", time.Hour)))
	mk[Session](t)(s.Sessions().Create(ctx, self, session("b", time.Hour)))
	if n := mk[int64](t)(s.Sessions().DeleteByUser(ctx, actor, f.user.ID)); n != 2 {
		t.Errorf("DeleteByUser = %d, want 2", n)
	}
	if n := mk[int64](t)(s.Sessions().DeleteByUser(ctx, actor, f.user.ID)); n != 0 {
		t.Errorf("second DeleteByUser = %d, want 0", n)
	}

	audit := auditRows(t, b, "sessions", f.user.ID.String())
	if got, want := actions(audit), []string{"login", "login", "logout", "login", "login", "logout"}; !slices.Equal(got, want) {
		t.Errorf("audit actions = %v, want %v", got, want)
	}
	for _, a := range audit {
		checkNoSecrets(t, a, live)
	}
}
