package store

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

// BindingsPage is a Page of bindings, of one model and/or one host when set.
type BindingsPage struct {
	After   uuid.UUID
	ModelID *uuid.UUID
	HostID  *uuid.UUID
	Limit   int32
}

var bindingsTable = &tableDef[dbsqlc.Binding, Binding, uuid.UUID, BindingsPage]{
	kind:   KindBindings,
	key:    func(r Binding) uuid.UUID { return r.ID },
	row:    func(r dbsqlc.Binding) Binding { return Binding(r) },
	insert: fromRow(insertBindingParams, (*dbsqlc.Queries).InsertBinding),
	get:    (*dbsqlc.Queries).GetBindingByID,
	lock:   (*dbsqlc.Queries).GetBindingByIDForUpdate,
	update: fromRow(updateBindingParams, (*dbsqlc.Queries).UpdateBinding),
	remove: (*dbsqlc.Queries).DeleteBinding,
	list: func(q *dbsqlc.Queries, ctx context.Context, p BindingsPage) ([]dbsqlc.Binding, error) {
		return q.ListBindingsPage(ctx, p.After, p.ModelID, p.HostID, p.Limit)
	},
	catalog: func(c *Catalog) *[]Binding { return &c.Bindings },
	all:     (*dbsqlc.Queries).ListBindings,
}

// insertBindingParams is what Create writes of a Binding: all but the columns the database makes.
func insertBindingParams(r Binding) dbsqlc.InsertBindingParams {
	return dbsqlc.InsertBindingParams{
		ModelID: r.ModelID, HostID: r.HostID, Shape: r.Shape, UpstreamModel: r.UpstreamModel, Position: r.Position,
		Enabled: r.Enabled, InputPrice: r.InputPrice, OutputPrice: r.OutputPrice,
		CachedInputPrice: r.CachedInputPrice, CacheWritePrice: r.CacheWritePrice, ReasoningPrice: r.ReasoningPrice,
		PriceTiers: r.PriceTiers, Weight: r.Weight, UnitPrices: unitPrices(r.UnitPrices),
	}
}

// updateBindingParams is what Update writes of a Binding: its key and mutable columns.
func updateBindingParams(r Binding) dbsqlc.UpdateBindingParams {
	return dbsqlc.UpdateBindingParams{
		ID: r.ID, Shape: r.Shape, UpstreamModel: r.UpstreamModel, Position: r.Position, Enabled: r.Enabled,
		InputPrice: r.InputPrice, OutputPrice: r.OutputPrice, CachedInputPrice: r.CachedInputPrice,
		CacheWritePrice: r.CacheWritePrice, ReasoningPrice: r.ReasoningPrice, PriceTiers: r.PriceTiers,
		Weight: r.Weight, UnitPrices: unitPrices(r.UnitPrices),
	}
}

// unitPrices is the column's value: an empty array for none.
func unitPrices(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return json.RawMessage("[]")
	}
	return v
}

// Bindings is the bindings table. A binding joins one model and one host for
// good: Update leaves ModelID and HostID alone.
type Bindings struct {
	MutableTable[Binding, uuid.UUID, BindingsPage]
}

// Bindings returns the bindings table; each write runs in its own transaction.
func (s *Store) Bindings() Bindings { return Bindings{mutable(s.db(), bindingsTable)} }

// Bindings returns the bindings table inside t.
func (t *Tx) Bindings() Bindings { return Bindings{mutable(t.db(), bindingsTable)} }

// GetByModelAndHost returns the binding of model on host.
func (t Bindings) GetByModelAndHost(ctx context.Context, modelID, hostID uuid.UUID) (Binding, error) {
	return bindingsTable.result(t.db.q.GetBindingByModelAndHost(ctx, modelID, hostID))
}

// ListByModel returns the bindings of a model in routing order.
func (t Bindings) ListByModel(ctx context.Context, modelID uuid.UUID) ([]Binding, error) {
	return bindingsTable.results(t.db.q.ListBindingsByModel(ctx, modelID))
}
