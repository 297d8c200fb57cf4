//go:build !linux

package main

import "syscall"

// sysProcAttr: only Linux has a parent-death signal; elsewhere the harness
// relies on stopping its children on the way out.
func sysProcAttr() *syscall.SysProcAttr { return nil }
