package embeddedpg

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// setParentDeathSignal asks the kernel to send postgres SIGINT (fast
// shutdown) when Relay dies without stopping it. The kernel applies it after
// the credential change, which would otherwise clear it.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGINT
}

// servesCluster reports whether pid is alive and a postmaster of cluster: the
// postmaster's working directory is its data directory. After a crash or a
// reboot, the pid in postmaster.pid may belong to an unrelated process (in
// containers, pids are reused all the time).
func servesCluster(pid int, cluster string) bool {
	if !processAlive(pid) {
		return false
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return true // cannot tell (hidepid, no /proc): let the connection probe decide
	}
	if resolved, err := filepath.EvalSymlinks(cluster); err == nil {
		cluster = resolved
	}
	return cwd == cluster
}
