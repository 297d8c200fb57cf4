// Package store is Relay's only door to Postgres. It wraps the sqlc-generated
// queries in internal/store/internal/dbsqlc (which, under internal/, nothing
// else can import), maps driver errors to the sentinel errors below, runs
// transactions, reads the whole catalog for a snapshot build and holds the
// LISTEN connection. No other package imports pgx; the inference plane
// reaches none of this (internal/depban checks).
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// Channel is the one NOTIFY channel: every catalog write sends "<table>:<id>" on it.
const Channel = "relay_catalog"

// Sentinel errors callers branch on.
var (
	ErrNotFound   = errors.New("not found")
	ErrConflict   = errors.New("conflict")   // a unique constraint
	ErrReferenced = errors.New("referenced") // a foreign key blocks the write
	ErrInvalid    = errors.New("invalid")    // a check constraint
	// ErrUnavailable: Postgres cannot be reached (refused, reset, timed
	// out, shutting down); the same call may work later.
	ErrUnavailable = errors.New("database unavailable")
)

// Store holds the pool and the generated queries.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

// Open connects to url and checks the connection.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return New(pool), nil
}

// New wraps an existing pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, q: dbsqlc.New(conn{pool})}
}

// Pool returns the underlying pool (for migrations).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that Postgres answers.
func (s *Store) Ping(ctx context.Context) error { return mapErr(s.pool.Ping(ctx)) }

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Tx is a store bound to one transaction.
type Tx struct {
	tx pgx.Tx
	q  *dbsqlc.Queries
}

// InTx runs fn in one read-write transaction, committing when it returns nil.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	return s.inTx(ctx, pgx.TxOptions{}, fn)
}

func (s *Store) inTx(ctx context.Context, opts pgx.TxOptions, fn func(*Tx) error) error {
	var (
		tx  pgx.Tx
		err error
	)
	if b := bound(ctx, s.pool); b != nil {
		tx, err = b.Begin(ctx) // a savepoint of the transaction Atomic holds
	} else {
		tx, err = s.pool.BeginTx(ctx, opts)
	}
	if err != nil {
		return fmt.Errorf("begin transaction: %w", mapErr(err))
	}
	defer tx.Rollback(ctx) // a no-op after commit
	if err := fn(&Tx{tx: tx, q: s.q.WithTx(tx)}); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit transaction: %w", mapErr(err))
	}
	return nil
}

// Atomic runs fn in one transaction that every call of this store made with
// the context fn receives joins: its reads see the transaction's writes, and
// each write (its own transaction elsewhere) is a savepoint of it. It commits
// when fn returns nil and rolls everything back otherwise, so a sequence of
// writes that another layer makes one by one (the control API's handlers,
// driven by one `relay apply`) lands whole or not at all. Calls with that
// context must not run concurrently: a transaction is one connection.
func (s *Store) Atomic(ctx context.Context, fn func(context.Context) error) error {
	return s.InTx(ctx, func(tx *Tx) error {
		return fn(context.WithValue(ctx, atomicKey{}, &atomicTx{pool: s.pool, tx: tx.tx}))
	})
}

type atomicKey struct{}

// atomicTx is the transaction Atomic put in a context, with the pool it
// belongs to: another store's calls with the same context keep their own.
type atomicTx struct {
	pool *pgxpool.Pool
	tx   pgx.Tx
}

// bound returns the transaction of Atomic in ctx that belongs to pool, or nil.
func bound(ctx context.Context, pool *pgxpool.Pool) pgx.Tx {
	if a, ok := ctx.Value(atomicKey{}).(*atomicTx); ok && a.pool == pool {
		return a.tx
	}
	return nil
}

// conn is what the store's queries run on: the transaction of Atomic in the
// context, else the pool.
type conn struct{ pool *pgxpool.Pool }

func (c conn) pick(ctx context.Context) dbsqlc.DBTX {
	if tx := bound(ctx, c.pool); tx != nil {
		return tx
	}
	return c.pool
}

func (c conn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return c.pick(ctx).Exec(ctx, sql, args...)
}

func (c conn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.pick(ctx).Query(ctx, sql, args...)
}

func (c conn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return c.pick(ctx).QueryRow(ctx, sql, args...)
}

func (c conn) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error) {
	return c.pick(ctx).CopyFrom(ctx, table, columns, rows)
}

// Notify sends payload on Channel (delivered when the surrounding transaction commits).
func (t *Tx) Notify(ctx context.Context, payload string) error {
	return mapErr(t.q.NotifyCatalog(ctx, payload))
}

// mapErr turns driver errors into the sentinels, keeping the original wrapped.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "23505":
			return fmt.Errorf("%w: %s", ErrConflict, pg.ConstraintName)
		case "23503":
			return fmt.Errorf("%w: %s", ErrReferenced, pg.ConstraintName)
		case "23514", "23502", "22P02", "22001":
			return fmt.Errorf("%w: %s", ErrInvalid, pg.Message)
		case "57P01", "57P02", "57P03", "53300":
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if strings.HasPrefix(pg.Code, "08") { // connection exception
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	if unreachable(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// unreachable reports whether err says Postgres could not be reached or
// the connection broke, as opposed to a query's own failure.
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		(errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled))
}
