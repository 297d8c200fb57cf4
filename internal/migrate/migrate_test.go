package migrate_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-llm/relay/internal/migrate"
	"github.com/relay-llm/relay/internal/pgtest"
)

// emptyDB creates a database with no schema and returns a pool on it.
func emptyDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	server := pgtest.ServerURL(t)
	admin, err := pgxpool.New(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := fmt.Sprintf("relay_migrate_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(server)
	u.Path = "/" + name
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		admin, err := pgxpool.New(context.Background(), server)
		if err == nil {
			admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			admin.Close()
		}
	})
	return pool
}

func tableCount(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'goose_db_version'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMigrate_UpDownUp(t *testing.T) {
	t.Parallel()
	pool := emptyDB(t)
	ctx := context.Background()
	if err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	up := tableCount(t, pool)
	if up < 20 {
		t.Fatalf("only %d tables after up", up)
	}
	var status bytes.Buffer
	if err := migrate.Status(ctx, pool, &status); err != nil || !strings.Contains(status.String(), "applied") {
		t.Fatalf("status = %q, %v", status.String(), err)
	}
	if pending, err := migrate.Pending(ctx, pool); err != nil || pending {
		t.Fatalf("pending after up = %v, %v", pending, err)
	}
	if err := migrate.Reset(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if n := tableCount(t, pool); n != 0 {
		t.Fatalf("%d tables left after down", n)
	}
	if pending, err := migrate.Pending(ctx, pool); err != nil || !pending {
		t.Fatalf("pending after reset = %v, %v; want true", pending, err)
	}
	if err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if n := tableCount(t, pool); n != up {
		t.Fatalf("%d tables after second up, want %d", n, up)
	}
	if err := migrate.Up(ctx, pool); err != nil {
		t.Fatalf("up on an up-to-date database: %v", err)
	}
}

// TestMigrate_ConcurrentStarts runs Up from several "pods" at once: the
// advisory lock lets one migrate while the others wait and find nothing to do.
func TestMigrate_ConcurrentStarts(t *testing.T) {
	t.Parallel()
	pool := emptyDB(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- migrate.Up(context.Background(), pool)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if tableCount(t, pool) < 20 {
		t.Fatal("schema incomplete")
	}
}
