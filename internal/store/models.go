package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/store/internal/dbsqlc"
)

var modelsTable = &tableDef[Model, uuid.UUID, Page]{
	kind:   KindModels,
	key:    func(r Model) uuid.UUID { return r.ID },
	insert: fromRow[Model]((*dbsqlc.Queries).InsertModel),
	get:    (*dbsqlc.Queries).GetModelByID,
	lock:   (*dbsqlc.Queries).GetModelByIDForUpdate,
	update: fromRow[Model]((*dbsqlc.Queries).UpdateModel),
	remove: (*dbsqlc.Queries).DeleteModel,
	list:   paged((*dbsqlc.Queries).ListModelsPage),
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
	return result(t.db.q.GetModelByName(ctx, name))
}
