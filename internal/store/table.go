package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// Page asks for up to Limit (at least 1) rows whose ID sorts after After;
// uuid.Nil asks for the first page. Pass the last ID of a page to get the
// next one.
type Page struct {
	After uuid.UUID
	Limit int32
}

// query is a generated query as a method expression: (*dbsqlc.Queries).GetHostByID.
type query[A, B any] func(*dbsqlc.Queries, context.Context, A) (B, error)

// tableDef names the generated queries that serve one table, whose
// generated rows D the store returns as its own rows R.
type tableDef[D, R any, K comparable, P any] struct {
	kind   Kind      // the table, as audit rows and NOTIFY payloads name it
	key    func(R) K // the primary key of a row
	row    func(D) R // the generated row as the store's: a struct conversion
	insert query[R, D]
	get    query[K, D]
	lock   query[K, D] // get with FOR UPDATE; nil where rows never change
	update query[R, D] // nil when the table has no mutable columns
	remove query[K, int64]
	list   query[P, []D]

	// For the tables the snapshot is built from (nil elsewhere): where a
	// Catalog keeps the rows, the query for all of them, the tables read
	// with a row of this one (a group's members, a policy's grants) and, for
	// such a part, the query for the rows of one owner.
	catalog func(*Catalog) *[]R
	all     func(*dbsqlc.Queries, context.Context) ([]D, error)
	parts   []part[K]
	of      func(*dbsqlc.Queries, context.Context, uuid.UUID) ([]D, error)
}

// one converts the row a generated query returned.
func (d *tableDef[D, R, K, P]) one(r D, err error) (R, error) {
	if err != nil {
		var zero R
		return zero, err
	}
	return d.row(r), nil
}

// result converts the row of a lookup and maps its error.
func (d *tableDef[D, R, K, P]) result(r D, err error) (R, error) { return d.one(r, mapErr(err)) }

// many converts the rows a generated query returned.
func (d *tableDef[D, R, K, P]) many(rs []D, err error) ([]R, error) {
	if err != nil {
		return nil, err
	}
	return each(rs, d.row), nil
}

// results converts the rows of a lookup and maps its error.
func (d *tableDef[D, R, K, P]) results(rs []D, err error) ([]R, error) {
	return d.many(rs, mapErr(err))
}

// listed is results for a list the caller pages through: its error names the table.
func (d *tableDef[D, R, K, P]) listed(rs []D, err error) ([]R, error) {
	out, err := d.results(rs, err)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.kind, err)
	}
	return out, nil
}

// each converts generated rows to the store's, one by one.
func each[D, R any](rs []D, row func(D) R) []R {
	out := make([]R, len(rs))
	for i, r := range rs {
		out[i] = row(r)
	}
	return out
}

// rows is a tableDef as a Table runs it: in the store's rows, the generated
// row type out of sight.
type rows[R any, K comparable, P any] interface {
	name() Kind
	keyOf(r R) K
	create(q *dbsqlc.Queries, ctx context.Context, r R) (R, error)
	read(q *dbsqlc.Queries, ctx context.Context, k K) (R, error)
	readLocked(q *dbsqlc.Queries, ctx context.Context, k K) (R, error)
	write(q *dbsqlc.Queries, ctx context.Context, r R) (R, error)
	erase(q *dbsqlc.Queries, ctx context.Context, k K) (int64, error)
	page(q *dbsqlc.Queries, ctx context.Context, p P) ([]R, error)
}

func (d *tableDef[D, R, K, P]) name() Kind  { return d.kind }
func (d *tableDef[D, R, K, P]) keyOf(r R) K { return d.key(r) }

func (d *tableDef[D, R, K, P]) create(q *dbsqlc.Queries, ctx context.Context, r R) (R, error) {
	return d.one(d.insert(q, ctx, r))
}

func (d *tableDef[D, R, K, P]) read(q *dbsqlc.Queries, ctx context.Context, k K) (R, error) {
	return d.one(d.get(q, ctx, k))
}

func (d *tableDef[D, R, K, P]) readLocked(q *dbsqlc.Queries, ctx context.Context, k K) (R, error) {
	if d.lock == nil {
		return d.read(q, ctx, k)
	}
	return d.one(d.lock(q, ctx, k))
}

func (d *tableDef[D, R, K, P]) write(q *dbsqlc.Queries, ctx context.Context, r R) (R, error) {
	return d.one(d.update(q, ctx, r))
}

func (d *tableDef[D, R, K, P]) erase(q *dbsqlc.Queries, ctx context.Context, k K) (int64, error) {
	return d.remove(q, ctx, k)
}

func (d *tableDef[D, R, K, P]) page(q *dbsqlc.Queries, ctx context.Context, p P) ([]R, error) {
	return d.many(d.list(q, ctx, p))
}

// db is where a table handle runs: the pool or one transaction.
type db struct {
	q    *dbsqlc.Queries
	inTx func(context.Context, func(*Tx) error) error
}

func (s *Store) db() db { return db{q: s.q, inTx: s.InTx} }

func (t *Tx) db() db {
	return db{q: t.q, inTx: func(_ context.Context, fn func(*Tx) error) error { return fn(t) }}
}

// Table is the create, get, list and delete of one table whose rows are R,
// keyed by K, listed a page P at a time. Every table is served this way, or
// as a MutableTable where rows can also be updated; a table's own type adds
// its lookups by natural key and its special writes (RelayKeys.Revoke,
// HostKeys.SetSecret …).
//
// A handle from a *Store runs each write in its own transaction; one from a
// *Tx joins that transaction, so a caller can group writes (the apply of a
// config file). Every write records one audit-log row in its transaction,
// with the row before and after and without secrets; the schema's triggers
// send NOTIFY, delivered on commit. A write inside a Tx that fails leaves the
// transaction to be rolled back: return the error from the InTx callback.
type Table[R any, K comparable, P any] struct {
	db  db
	def rows[R, K, P]
}

// MutableTable is a Table whose rows can also be updated.
type MutableTable[R any, K comparable, P any] struct {
	Table[R, K, P]
}

// Create inserts r and returns the row as stored. The columns the database
// makes (id, timestamps, secret_version, revoked_at) are ignored in r.
func (t Table[R, K, P]) Create(ctx context.Context, actor string, r R) (R, error) {
	var out R
	err := t.db.inTx(ctx, func(tx *Tx) error {
		var err error
		if out, err = t.def.create(tx.q, ctx, r); err != nil {
			return mapErr(err)
		}
		return tx.Audit(ctx, actor, "create", string(t.def.name()), fmt.Sprint(t.def.keyOf(out)), nil, out)
	})
	if err != nil {
		var zero R
		return zero, fmt.Errorf("create %s: %w", t.def.name(), err)
	}
	return out, nil
}

// Get returns the row with key k, or ErrNotFound.
func (t Table[R, K, P]) Get(ctx context.Context, k K) (R, error) {
	r, err := t.def.read(t.db.q, ctx, k)
	if err != nil {
		return r, fmt.Errorf("get %s %v: %w", t.def.name(), k, mapErr(err))
	}
	return r, nil
}

// List returns one page of rows in key order.
func (t Table[R, K, P]) List(ctx context.Context, p P) ([]R, error) {
	rs, err := t.def.page(t.db.q, ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", t.def.name(), mapErr(err))
	}
	return rs, nil
}

// Delete deletes the row with key k (ErrNotFound when there is none). Rows
// that reference it go too where the schema cascades, without audit rows of
// their own; where it restricts, the error is ErrReferenced.
func (t Table[R, K, P]) Delete(ctx context.Context, actor string, k K) error {
	_, err := t.change(ctx, actor, "delete", k, func(q *dbsqlc.Queries, _ R) (*R, error) {
		n, err := t.def.erase(q, ctx, k)
		if err == nil && n == 0 {
			err = ErrNotFound
		}
		return nil, err
	})
	return err
}

// Update writes the mutable columns of r to the row with r's key and returns
// the row as stored. Columns that identify or own the row (a binding's model
// and host, a relay key's hash and owner …) and secrets are not mutable; see
// the table's own methods for those.
func (t MutableTable[R, K, P]) Update(ctx context.Context, actor string, r R) (R, error) {
	return t.update(ctx, actor, t.def.keyOf(r), func(R) (R, error) { return r, nil })
}

// Modify reads the row with key k under a row lock, lets fn change it and
// writes it back: a read-modify-write no concurrent writer can interleave with.
// fn must not change the key.
func (t MutableTable[R, K, P]) Modify(ctx context.Context, actor string, k K, fn func(*R) error) (R, error) {
	return t.update(ctx, actor, k, func(r R) (R, error) {
		if err := fn(&r); err != nil {
			return r, err
		}
		if t.def.keyOf(r) != k {
			return r, fmt.Errorf("%w: modify must not change the key", ErrInvalid)
		}
		return r, nil
	})
}

func (t MutableTable[R, K, P]) update(ctx context.Context, actor string, k K, next func(R) (R, error)) (R, error) {
	return t.change(ctx, actor, "update", k, func(q *dbsqlc.Queries, before R) (*R, error) {
		r, err := next(before)
		if err != nil {
			return nil, err
		}
		return ptr(t.def.write(q, ctx, r))
	})
}

// change is every write to an existing row: lock it, read it as before, let
// fn write (returning the row after, or nil when it is gone) and record both
// in the audit log, all in one transaction.
func (t Table[R, K, P]) change(ctx context.Context, actor, action string, k K, fn func(*dbsqlc.Queries, R) (*R, error)) (R, error) {
	var after *R
	err := t.db.inTx(ctx, func(tx *Tx) error {
		before, err := t.def.readLocked(tx.q, ctx, k)
		if err != nil {
			return mapErr(err)
		}
		if after, err = fn(tx.q, before); err != nil {
			return mapErr(err)
		}
		return tx.Audit(ctx, actor, action, string(t.def.name()), fmt.Sprint(k), before, after)
	})
	if err != nil || after == nil {
		var zero R
		if err != nil {
			err = fmt.Errorf("%s %s %v: %w", action, t.def.name(), k, err)
		}
		return zero, err
	}
	return *after, nil
}

func ptr[R any](r R, err error) (*R, error) {
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// fromRow adapts a generated query that takes a params struct to take the
// row instead, params picking the row's columns the query writes.
func fromRow[R, P, T any](params func(R) P, q query[P, T]) query[R, T] {
	return func(dq *dbsqlc.Queries, ctx context.Context, r R) (T, error) {
		return q(dq, ctx, params(r))
	}
}

// paged adapts a generated list query without filters to take a Page.
func paged[R any](q func(*dbsqlc.Queries, context.Context, uuid.UUID, int32) ([]R, error)) query[Page, []R] {
	return func(dq *dbsqlc.Queries, ctx context.Context, p Page) ([]R, error) {
		return q(dq, ctx, p.After, p.Limit)
	}
}

func table[R any, K comparable, P any](d db, def rows[R, K, P]) Table[R, K, P] {
	return Table[R, K, P]{db: d, def: def}
}

func mutable[R any, K comparable, P any](d db, def rows[R, K, P]) MutableTable[R, K, P] {
	return MutableTable[R, K, P]{table(d, def)}
}
