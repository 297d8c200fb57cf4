package main

import "syscall"

// sysProcAttr makes a child die with the harness even when the harness is
// killed without a chance to stop it (SIGKILL, a crash): a bench run must
// not leave a Relay or a mock behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
