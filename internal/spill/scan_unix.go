//go:build unix

package spill

import (
	"fmt"
	"syscall"
)

func scan(s *File, fn func(b []byte) error) error {
	if s.size == 0 {
		return fn(nil)
	}
	b, err := syscall.Mmap(int(s.f.Fd()), 0, int(s.size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("spill: map: %w", err)
	}
	defer func() { _ = syscall.Munmap(b) }()
	return fn(b)
}
