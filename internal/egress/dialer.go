package egress

import (
	"context"
	"net"
	"net/netip"
	"syscall"
)

// DialContext returns a dial function that holds every connection of d to
// the guard, as the proxy's upstream transport does: the name is checked
// before the look-up, each address it resolves to just before the connect,
// so a name that resolves to Relay's own listener or a metadata address is
// refused whatever it is called. For clients outside the proxy (the MCP
// gateway's upstream calls).
func (g *Guard) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		listed, err := g.CheckName(host)
		if err != nil {
			return nil, err
		}
		dd := *d
		dd.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			return g.CheckAddr(ap, listed)
		}
		return dd.DialContext(ctx, network, addr)
	}
}
