package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// ServiceAccountsPage is a Page of service accounts, of one project when ProjectID is set.
type ServiceAccountsPage struct {
	After     uuid.UUID
	ProjectID *uuid.UUID
	Limit     int32
}

var serviceAccountsTable = &tableDef[dbsqlc.ServiceAccount, ServiceAccount, uuid.UUID, ServiceAccountsPage]{
	kind: KindServiceAccounts,
	key:  func(r ServiceAccount) uuid.UUID { return r.ID },
	row:  func(r dbsqlc.ServiceAccount) ServiceAccount { return ServiceAccount(r) },
	insert: func(q *dbsqlc.Queries, ctx context.Context, r ServiceAccount) (dbsqlc.ServiceAccount, error) {
		return q.InsertServiceAccount(ctx, r.ProjectID, r.Slug, r.Name, r.PolicyID)
	},
	get:  (*dbsqlc.Queries).GetServiceAccountByID,
	lock: (*dbsqlc.Queries).GetServiceAccountByIDForUpdate,
	update: func(q *dbsqlc.Queries, ctx context.Context, r ServiceAccount) (dbsqlc.ServiceAccount, error) {
		return q.UpdateServiceAccount(ctx, r.ID, r.Slug, r.Name, r.PolicyID)
	},
	remove: (*dbsqlc.Queries).DeleteServiceAccount,
	list: func(q *dbsqlc.Queries, ctx context.Context, p ServiceAccountsPage) ([]dbsqlc.ServiceAccount, error) {
		return q.ListServiceAccountsPage(ctx, p.After, p.ProjectID, p.Limit)
	},
	catalog: func(c *Catalog) *[]ServiceAccount { return &c.ServiceAccounts },
	all:     (*dbsqlc.Queries).ListServiceAccounts,
}

// ServiceAccounts is the service_accounts table. A service account stays in
// its project (Update leaves ProjectID alone); deleting one deletes its relay keys.
type ServiceAccounts struct {
	MutableTable[ServiceAccount, uuid.UUID, ServiceAccountsPage]
}

// ServiceAccounts returns the service accounts table; each write runs in its own transaction.
func (s *Store) ServiceAccounts() ServiceAccounts {
	return ServiceAccounts{mutable(s.db(), serviceAccountsTable)}
}

// ServiceAccounts returns the service accounts table inside t.
func (t *Tx) ServiceAccounts() ServiceAccounts {
	return ServiceAccounts{mutable(t.db(), serviceAccountsTable)}
}

// GetBySlug returns the service account of project with slug.
func (t ServiceAccounts) GetBySlug(ctx context.Context, projectID uuid.UUID, slug string) (ServiceAccount, error) {
	return serviceAccountsTable.result(t.db.q.GetServiceAccountBySlug(ctx, projectID, slug))
}
