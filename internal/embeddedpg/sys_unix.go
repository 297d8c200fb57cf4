//go:build unix

package embeddedpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// sysProcAttr runs a child as acct (nil: as this process). A detached child
// gets its own session; any other child its own process group, so that a
// Ctrl-C meant for Relay does not reach postgres before Relay has drained, and
// (on Linux) a parent-death signal.
func sysProcAttr(acct *account, detach bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{}
	if acct != nil {
		attr.Credential = &syscall.Credential{Uid: acct.uid, Gid: acct.gid, Groups: acct.groups}
	}
	if detach {
		attr.Setsid = true
	} else {
		attr.Setpgid = true
		setParentDeathSignal(attr)
	}
	return attr
}

func fileOwner(fi fs.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}

// processAlive reports whether pid is a process we could signal. A process of
// another user (EPERM) cannot be our server: that runs as us, or as a user
// root can signal.
func processAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// lockFile takes an exclusive flock on path, polling so that ctx can end the
// wait. The returned func releases it.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for %s: %w", path, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}
