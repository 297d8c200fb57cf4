//go:build !unix

package pgtest

import "io/fs"

// ownedByMe cannot tell without Unix ownership; the embedded server does not
// run here anyway (set RELAY_TEST_DATABASE_URL).
func ownedByMe(fs.FileInfo) bool { return true }
