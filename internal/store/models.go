package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

var modelsTable = &tableDef[dbsqlc.Model, Model, uuid.UUID, Page]{
	kind:    KindModels,
	key:     func(r Model) uuid.UUID { return r.ID },
	row:     func(r dbsqlc.Model) Model { return Model(r) },
	insert:  fromRow(insertModelParams, (*dbsqlc.Queries).InsertModel),
	get:     (*dbsqlc.Queries).GetModelByID,
	lock:    (*dbsqlc.Queries).GetModelByIDForUpdate,
	update:  fromRow(updateModelParams, (*dbsqlc.Queries).UpdateModel),
	remove:  (*dbsqlc.Queries).DeleteModel,
	list:    paged((*dbsqlc.Queries).ListModelsPage),
	catalog: func(c *Catalog) *[]Model { return &c.Models },
	all:     (*dbsqlc.Queries).ListModels,
}

// insertModelParams is what Create writes of a Model: all but the columns the database makes.
func insertModelParams(r Model) dbsqlc.InsertModelParams {
	return dbsqlc.InsertModelParams{
		Name: r.Name, Provider: r.Provider, Kind: r.Kind, ContextWindow: r.ContextWindow,
		MaxOutputTokens: r.MaxOutputTokens, SupportsTools: r.SupportsTools, SupportsVision: r.SupportsVision,
		SupportsJSON: r.SupportsJSON, SupportsThinking: r.SupportsThinking, Strategy: r.Strategy,
		Fallbacks: r.Fallbacks,
	}
}

// updateModelParams is what Update writes of a Model: its key and mutable columns.
func updateModelParams(r Model) dbsqlc.UpdateModelParams {
	return dbsqlc.UpdateModelParams{
		Name: r.Name, Provider: r.Provider, Kind: r.Kind, ContextWindow: r.ContextWindow,
		MaxOutputTokens: r.MaxOutputTokens, SupportsTools: r.SupportsTools, SupportsVision: r.SupportsVision,
		SupportsJSON: r.SupportsJSON, SupportsThinking: r.SupportsThinking, Strategy: r.Strategy,
		Fallbacks: r.Fallbacks, ID: r.ID,
	}
}

// Models is the models table. Deleting a model deletes its bindings and the
// policy grants that name it.
type Models struct {
	MutableTable[Model, uuid.UUID, Page]
}

// Models returns the models table; each write runs in its own transaction.
func (s *Store) Models() Models { return Models{mutable(s.db(), modelsTable)} }

// Models returns the models table inside t.
func (t *Tx) Models() Models { return Models{mutable(t.db(), modelsTable)} }

// GetByName returns the model callers ask for as name.
func (t Models) GetByName(ctx context.Context, name string) (Model, error) {
	return modelsTable.result(t.db.q.GetModelByName(ctx, name))
}
