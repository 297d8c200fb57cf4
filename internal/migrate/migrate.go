// Package migrate applies Relay's embedded goose migrations. Every run holds a
// Postgres session advisory lock, so several pods can start at once and only
// one of them migrates while the others wait.
package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/relay-llm/relay/migrations"
)

// newProvider opens a database/sql handle over pool and a goose provider
// that locks with a session advisory lock.
func newProvider(pool *pgxpool.Pool) (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(pool)
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockTimeout(1, 600), // poll every second for up to ten minutes
	)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("create migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithSessionLocker(locker))
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("create migration provider: %w", err)
	}
	return p, db, nil
}

// Up applies every pending migration.
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	p, db, err := newProvider(pool)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// Pending reports whether migrations are waiting to be applied: a server
// started with its start-up migration switched off refuses to run on a
// schema older than its code.
func Pending(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	p, db, err := newProvider(pool)
	if err != nil {
		return false, err
	}
	defer db.Close()
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("migrate status: %w", err)
	}
	return pending, nil
}

// Down rolls back the newest applied migration.
func Down(ctx context.Context, pool *pgxpool.Pool) error {
	p, db, err := newProvider(pool)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := p.Down(ctx); err != nil {
		return fmt.Errorf("migrate down: %w", err)
	}
	return nil
}

// Reset rolls back every applied migration.
func Reset(ctx context.Context, pool *pgxpool.Pool) error {
	p, db, err := newProvider(pool)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := p.DownTo(ctx, 0); err != nil {
		return fmt.Errorf("migrate reset: %w", err)
	}
	return nil
}

// Status writes one line per migration: version, state and file name.
func Status(ctx context.Context, pool *pgxpool.Pool, w io.Writer) error {
	p, db, err := newProvider(pool)
	if err != nil {
		return err
	}
	defer db.Close()
	results, err := p.Status(ctx)
	if err != nil {
		return fmt.Errorf("migrate status: %w", err)
	}
	for _, r := range results {
		applied := "pending"
		if r.State == goose.StateApplied {
			applied = "applied " + r.AppliedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%05d  %-30s  %s\n", r.Source.Version, applied, r.Source.Path)
	}
	return nil
}
