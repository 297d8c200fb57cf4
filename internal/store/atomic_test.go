package store

import (
	"context"
	"errors"
	"testing"
)

// TestAtomic_AllOrNothing: writes made with Atomic's context see each other,
// a failed write (a unique violation) leaves the transaction usable, and an
// error from fn rolls every write back — as the audit rows they made.
func TestAtomic_AllOrNothing(t *testing.T) {
	b := setup(t)
	ctx := b.ctx
	audit := func() int64 {
		var n int64
		if err := b.s.pool.QueryRow(ctx, "SELECT count(*) FROM audit_log").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := audit()
	stop := errors.New("stop")
	err := b.s.Atomic(ctx, func(ctx context.Context) error {
		team := mk[Team](t)(b.s.Teams().Create(ctx, actor, Team{Slug: "atomic", Name: "Atomic"}))
		// A read with the context sees the write; one without does not.
		if _, err := b.s.Teams().GetBySlug(ctx, "atomic"); err != nil {
			t.Fatalf("inside: %v", err)
		}
		if _, err := b.s.Teams().GetBySlug(context.Background(), "atomic"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("outside the transaction: err = %v, want not found", err)
		}
		mk[Project](t)(b.s.Projects().Create(ctx, actor, Project{TeamID: team.ID, Slug: "p", Name: "P"}))
		_, err := b.s.Teams().Create(ctx, actor, Team{Slug: "atomic", Name: "Again"})
		wantErr(t, err, ErrConflict)
		// The savepoint of the failed write is gone; the transaction goes on.
		mk[Team](t)(b.s.Teams().Create(ctx, actor, Team{Slug: "atomic-2", Name: "Two"}))
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Atomic = %v, want fn's error", err)
	}
	for _, slug := range []string{"atomic", "atomic-2"} {
		if _, err := b.s.Teams().GetBySlug(ctx, slug); !errors.Is(err, ErrNotFound) {
			t.Fatalf("team %s after a rolled-back Atomic: err = %v", slug, err)
		}
	}
	if n := audit(); n != before {
		t.Fatalf("audit rows %d → %d after a rollback", before, n)
	}

	if err := b.s.Atomic(ctx, func(ctx context.Context) error {
		_, err := b.s.Teams().Create(ctx, actor, Team{Slug: "kept", Name: "Kept"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	mk[Team](t)(b.s.Teams().GetBySlug(ctx, "kept"))
}
