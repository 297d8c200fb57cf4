// Package dbsqlc is the code sqlc generates from queries/ and migrations/
// (see sqlc.yaml): one method per query, with its row and parameter types.
// It sits under internal/store/internal, so Go lets only the store import
// it; everything else goes through the store's hand-written methods and
// domain types. This file is the one hand-written file here, so that
// the package has a doc comment; sqlc leaves it alone.
package dbsqlc
