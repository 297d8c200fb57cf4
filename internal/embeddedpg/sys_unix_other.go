//go:build unix && !linux

package embeddedpg

import "syscall"

// setParentDeathSignal does nothing: only Linux has a parent-death signal,
// so elsewhere a server outlives a Relay that dies without calling Stop (the
// next Start reuses it).
func setParentDeathSignal(*syscall.SysProcAttr) {}

// servesCluster reports whether pid is alive; without /proc it cannot tell
// whose postmaster it is, so the connection probe decides.
func servesCluster(pid int, _ string) bool { return processAlive(pid) }
