//go:build !unix

package upstream

import "net"

// connAlive cannot look without blocking here: a connection the upstream
// closed is found out when it is used, and the request retried once.
func connAlive(net.Conn) bool { return true }

// awaitable: here a socket is not waited on without a buffer.
func (c *h1Conn) awaitable() bool { return false }

func (c *h1Conn) await() error { return nil }
