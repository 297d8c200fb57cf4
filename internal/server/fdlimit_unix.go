//go:build unix

package server

import "syscall"

// fileLimit is the process's limit on open files (after the Go runtime has
// raised the soft limit to the hard one).
func fileLimit() (uint64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	return r.Cur, true
}
