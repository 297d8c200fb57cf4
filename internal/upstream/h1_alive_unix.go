//go:build unix

package upstream

import (
	"net"
	"syscall"
)

// connAlive reports whether an idle connection is still open and has
// nothing unread: one non-blocking peek at its socket.
func connAlive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read and no end: open and quiet.
		alive = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true // never wait
	})
	return err == nil && alive
}
