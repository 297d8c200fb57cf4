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

// awaitable reports whether c's socket can be waited on without a buffer.
func (c *h1Conn) awaitable() bool {
	if c.raw == nil && !c.noRaw {
		sc, ok := c.c.(syscall.Conn)
		if ok {
			c.raw, _ = sc.SyscallConn()
		}
		c.noRaw = c.raw == nil
		c.ready = c.peekReady // made once, not per wait
	}
	return c.raw != nil
}

// await blocks until c's socket has something to read, reading nothing: a
// non-blocking peek, and the runtime's poller between peeks.
func (c *h1Conn) await() error {
	return c.raw.Read(c.ready)
}

// peekReady is await's look at the socket: true (stop waiting) once a byte,
// the end or an error is there.
func (c *h1Conn) peekReady(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), c.peek[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
}
