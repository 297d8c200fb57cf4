package usage

import "github.com/relay-llm/relay/internal/store"

// Row is row for the external tests: the ledger row of e, pointing into e.
func (e *Event) Row() store.UsageEvent { return e.row() }
