// Package migrations embeds Relay's goose migrations so the binary carries its
// own schema. The files are also sqlc's schema source (see sqlc.yaml).
package migrations

import "embed"

// FS holds the numbered goose SQL files.
//
//go:embed *.sql
var FS embed.FS
