package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// Catalog is every row the snapshot is built from. In a partial read (see
// ReadChanged) it holds only the rows asked for; aggregates (a group with its
// members, a rate limit with its rules, a policy with its grants) come whole.
type Catalog struct {
	Teams                 []Team
	Projects              []Project
	Users                 []User
	Groups                []Group
	GroupMemberships      []GroupMembership
	ServiceAccounts       []ServiceAccount
	RateLimits            []RateLimit
	RateLimitRules        []RateLimitRule
	Hosts                 []Host
	Models                []Model
	Bindings              []Binding
	HostKeys              []HostKey
	Policies              []Policy
	PolicyModels          []PolicyModel
	PolicyHostKeys        []PolicyHostKey
	PolicyModelRateLimits []PolicyModelRateLimit
	PolicyBindings        []PolicyBinding
	RelayKeys             []RelayKey
	InferenceTokens       []InferenceToken
	Budgets               []Budget
	MCPServers            []MCPServer
	MCPToolApprovals      []MCPToolApproval
}

// readOnly is a consistent read: every query sees the same committed state.
var readOnly = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// ReadCatalog reads every catalog row in one repeatable-read transaction.
func (s *Store) ReadCatalog(ctx context.Context) (*Catalog, error) {
	c := &Catalog{}
	err := s.inTx(ctx, readOnly, func(tx *Tx) error {
		for _, t := range snapshotTables {
			if err := t.readAll(ctx, tx.q, c); err != nil {
				return fmt.Errorf("read catalog: %w", mapErr(err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ReadChanged reads the current rows for the given IDs per kind (see Kind.Owner)
// in one repeatable-read transaction. Rows that no longer exist are returned
// in deleted. Kinds the snapshot is not built from are ignored.
func (s *Store) ReadChanged(ctx context.Context, changed map[Kind][]uuid.UUID) (c *Catalog, deleted map[Kind][]uuid.UUID, err error) {
	c = &Catalog{}
	deleted = make(map[Kind][]uuid.UUID)
	err = s.inTx(ctx, readOnly, func(tx *Tx) error {
		for kind, ids := range changed {
			t := snapshotTable(kind)
			if t == nil {
				continue
			}
			for _, id := range ids {
				found, err := t.readOne(ctx, tx.q, c, id)
				if err != nil {
					return fmt.Errorf("read %s %s: %w", kind, id, err)
				}
				if !found {
					deleted[kind] = append(deleted[kind], id)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c, deleted, nil
}

// snapshotKind is the table of a kind the snapshot is built from, as
// ReadCatalog and ReadChanged read it (a *tableDef with Catalog fields).
type snapshotKind interface {
	name() Kind
	readAll(ctx context.Context, q *dbsqlc.Queries, c *Catalog) error
	readOne(ctx context.Context, q *dbsqlc.Queries, c *Catalog, id uuid.UUID) (found bool, err error)
}

// snapshotTables are the tables of the snapshot's kinds, each read with its parts.
var snapshotTables = []snapshotKind{
	teamsTable, projectsTable, usersTable, groupsTable, serviceAccountsTable, rateLimitsTable, hostsTable,
	modelsTable, bindingsTable, hostKeysTable, policiesTable, policyBindingsTable, relayKeysTable,
	inferenceTokensTable, budgetsTable, mcpServersTable,
}

// snapshotTable returns the table of kind, or nil when the snapshot is not built from it.
func snapshotTable(kind Kind) snapshotKind {
	for _, t := range snapshotTables {
		if t.name() == kind {
			return t
		}
	}
	return nil
}

// part is a table read with its owner's rows: all of them in a full read,
// one owner's in a partial one.
type part[K any] interface {
	readAll(ctx context.Context, q *dbsqlc.Queries, c *Catalog) error
	readOf(ctx context.Context, q *dbsqlc.Queries, c *Catalog, owner K) error
}

// readAll adds every row of d and of its parts to c.
func (d *tableDef[D, R, K, P]) readAll(ctx context.Context, q *dbsqlc.Queries, c *Catalog) error {
	rs, err := d.many(d.all(q, ctx))
	if err != nil {
		return err
	}
	*d.catalog(c) = append(*d.catalog(c), rs...)
	for _, p := range d.parts {
		if err := p.readAll(ctx, q, c); err != nil {
			return err
		}
	}
	return nil
}

// readOne adds the row of d with key k, and its parts, to c; found is false
// when there is no such row.
func (d *tableDef[D, R, K, P]) readOne(ctx context.Context, q *dbsqlc.Queries, c *Catalog, k K) (found bool, err error) {
	r, err := d.read(q, ctx, k)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, mapErr(err)
	}
	*d.catalog(c) = append(*d.catalog(c), r)
	for _, p := range d.parts {
		if err := p.readOf(ctx, q, c, k); err != nil {
			return false, mapErr(err)
		}
	}
	return true, nil
}

// readOf adds the rows of d that belong to owner to c.
func (d *tableDef[D, R, K, P]) readOf(ctx context.Context, q *dbsqlc.Queries, c *Catalog, owner uuid.UUID) error {
	rs, err := d.many(d.of(q, ctx, owner))
	if err != nil {
		return err
	}
	*d.catalog(c) = append(*d.catalog(c), rs...)
	return nil
}
