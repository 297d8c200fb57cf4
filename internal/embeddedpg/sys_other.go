//go:build !unix

package embeddedpg

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
)

// Relay's embedded Postgres needs Unix process control (credentials, flock,
// signals); elsewhere Start fails and RELAY_DATABASE_URL must be set.

func sysProcAttr(*account, bool) *syscall.SysProcAttr { return nil }

func fileOwner(fs.FileInfo) (uid, gid uint32, ok bool) { return 0, 0, false }

func processAlive(int) bool { return false }

func servesCluster(int, string) bool { return false }

func lockFile(context.Context, string) (func(), error) {
	return nil, errors.New("embedded postgres needs a Unix system; set RELAY_DATABASE_URL")
}
