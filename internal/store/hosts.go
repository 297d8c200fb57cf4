package store

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

var hostsTable = &tableDef[dbsqlc.Host, Host, uuid.UUID, Page]{
	kind:    KindHosts,
	key:     func(r Host) uuid.UUID { return r.ID },
	row:     func(r dbsqlc.Host) Host { return Host(r) },
	insert:  fromRow(insertHostParams, (*dbsqlc.Queries).InsertHost),
	get:     (*dbsqlc.Queries).GetHostByID,
	lock:    (*dbsqlc.Queries).GetHostByIDForUpdate,
	update:  fromRow(updateHostParams, (*dbsqlc.Queries).UpdateHost),
	remove:  (*dbsqlc.Queries).DeleteHost,
	list:    paged((*dbsqlc.Queries).ListHostsPage),
	catalog: func(c *Catalog) *[]Host { return &c.Hosts },
	all:     (*dbsqlc.Queries).ListHosts,
}

// insertHostParams is what Create writes of a Host: all but the columns the database makes.
func insertHostParams(r Host) dbsqlc.InsertHostParams {
	return dbsqlc.InsertHostParams{
		Slug: r.Slug, Name: r.Name, Provider: r.Provider, BaseURL: r.BaseURL, Enabled: r.Enabled,
		ConnectTimeoutMs: r.ConnectTimeoutMs, FirstByteTimeoutMs: r.FirstByteTimeoutMs,
		IdleTimeoutMs: r.IdleTimeoutMs, TotalTimeoutMs: r.TotalTimeoutMs, ForwardHeaders: forwardHeaders(r.ForwardHeaders),
		BreakerServerFailures: r.BreakerServerFailures, BreakerNetworkFailures: r.BreakerNetworkFailures,
		Profile: r.Profile, ProfileParams: profileParams(r.ProfileParams),
	}
}

// updateHostParams is what Update writes of a Host: its key and mutable columns.
func updateHostParams(r Host) dbsqlc.UpdateHostParams {
	return dbsqlc.UpdateHostParams{
		ID: r.ID, Slug: r.Slug, Name: r.Name, Provider: r.Provider, BaseURL: r.BaseURL, Enabled: r.Enabled,
		ConnectTimeoutMs: r.ConnectTimeoutMs, FirstByteTimeoutMs: r.FirstByteTimeoutMs,
		IdleTimeoutMs: r.IdleTimeoutMs, TotalTimeoutMs: r.TotalTimeoutMs, ForwardHeaders: forwardHeaders(r.ForwardHeaders),
		BreakerServerFailures: r.BreakerServerFailures, BreakerNetworkFailures: r.BreakerNetworkFailures,
		Profile: r.Profile, ProfileParams: profileParams(r.ProfileParams),
	}
}

// forwardHeaders is never nil: the column is NOT NULL.
func forwardHeaders(h []string) []string {
	if h == nil {
		return []string{}
	}
	return h
}

// profileParams is never null: the column is a NOT NULL JSON object.
func profileParams(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return json.RawMessage("{}")
	}
	return p
}

// Hosts is the hosts table. Deleting a host deletes its bindings and host keys.
type Hosts struct {
	MutableTable[Host, uuid.UUID, Page]
}

// Hosts returns the hosts table; each write runs in its own transaction.
func (s *Store) Hosts() Hosts { return Hosts{mutable(s.db(), hostsTable)} }

// Hosts returns the hosts table inside t.
func (t *Tx) Hosts() Hosts { return Hosts{mutable(t.db(), hostsTable)} }

// GetBySlug returns the host with slug.
func (t Hosts) GetBySlug(ctx context.Context, slug string) (Host, error) {
	return hostsTable.result(t.db.q.GetHostBySlug(ctx, slug))
}
